"""`agentmap run` and `agentmap batch` on CSV files whose quotes span lines (csv_specs/format.md, "Quoting")."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import agentmap


def test_run_refuses_a_workflow_whose_quote_is_never_closed_and_runs_nothing(tmp_path: Path) -> None:
    flow = tmp_path / "flow.csv"
    flow.write_text(
        "GraphName,Node,AgentType,Prompt,Output_Field,Edge\n"
        'G,A,file_writer,"notes/a.txt,text,B\n'
        "G,B,file_writer,notes/b.txt,text,\n",
        encoding="utf-8",
    )
    result = agentmap("run", flow, "--state", '{"text": "x"}', cwd=tmp_path)
    assert result.code == 4, result.text  # before: exit 0, having run A alone (B was text of A's Prompt)
    assert "flow.csv:2:Prompt: error[unclosed-quote]" in result.plain
    assert not (tmp_path / "data").exists()  # no node ran


def test_batch_warns_of_a_quoted_cell_whose_lines_each_read_as_a_row(tmp_path: Path) -> None:
    (tmp_path / "flow.csv").write_text(
        "GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Echo,echo,name|note,out\n", encoding="utf-8"
    )
    (tmp_path / "rows.csv").write_text(
        'name,note,id\nAda,"first,1\nGrace,second,2\nLinus,third",3\nKen,fourth,4\nBarbara,fifth,5\n', encoding="utf-8"
    )
    result = agentmap("batch", "flow.csv", "-i", "rows.csv", "-o", "out.csv", cwd=tmp_path)
    assert result.code == 0, result.text
    said = "warning: rows.csv:2: the quoted cell in column 2 of this row runs on over lines 3 to 4, each of which"
    assert f"{said} reads as a row of 3 cells" in result.plain  # before: silence, and 3 of 5 rows ran
