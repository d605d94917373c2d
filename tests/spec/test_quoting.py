"""Quotes in a CSV workflow file that span lines: a quote never closed is an error where it opened (before: the
rest of the file was one cell and `run` ran the rows before it, exit 0); a quoted cell whose lines each read as a
row is a warning. The batch input's reader uses the same detector (tests/batch/test_batch_tables.py)."""

from __future__ import annotations

from pathlib import Path

import agentmap

_UNCLOSED = 'GraphName,Node,AgentType,Prompt,Output_Field,Edge\nG,A,template,"Hi,a,B\nG,B,template,Bye,b,\n'


def test_a_quote_never_closed_is_an_error_where_it_opened(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_text(_UNCLOSED, encoding="utf-8")
    [issue] = agentmap.validate(path)
    assert (issue.severity, issue.code, issue.row, issue.column) == ("error", "unclosed-quote", 2, "Prompt")
    assert "never closed: the file ends inside it" in issue.message and "close the quote on line 2" in issue.fix


def test_a_quote_left_open_in_a_long_file_is_found_where_it_opened_not_where_csv_gave_up(tmp_path: Path) -> None:
    rows = ["GraphName,Node,AgentType,Prompt"] + [f"G,n{i},echo,hello {i}" for i in range(10_000)]
    rows[3] = rows[3].replace("hello", '"hello')
    path = tmp_path / "flow.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    errors = [i for i in agentmap.validate(path) if i.severity == "error"]
    assert [(i.code, i.row, i.column) for i in errors] == [("unclosed-quote", 4, "Prompt")]
    assert "still open after 131,072 characters" in errors[0].message


def test_a_quote_open_in_the_header_row_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_text('GraphName,"Node,AgentType\nG,A,echo\n', encoding="utf-8")
    [issue] = agentmap.validate(path)
    assert issue.code == "unreadable" and "column 2 of the header row is never closed" in issue.message


def test_a_quoted_cell_whose_lines_each_read_as_a_row_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Description\n"
        'G,A,echo,"Hi,first\n'
        "G,B,echo,wave,second\n"
        'G,C,echo",bye,third\n'
        "G,D,echo,x,y\n",
        encoding="utf-8",
    )
    hidden = [i for i in agentmap.validate(path) if i.code == "rows-in-quoted-cell"]
    assert [(i.severity, i.row, i.column) for i in hidden] == [("warning", 2, "Prompt")]
    assert "lines 3 to 4, each of which reads as a row of 5 cells" in hidden[0].message


def test_a_quoted_cell_of_several_lines_of_text_is_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields\n"
        'G,A,template,"Dear {name},\n\nthanks, we got it, and more, and more.\nBye",name\n',
        encoding="utf-8",
    )
    assert agentmap.validate(path) == []
