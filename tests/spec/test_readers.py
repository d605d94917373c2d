"""Reading workflow files: encodings, quoting, skipped rows, line numbers and file-level errors."""

from __future__ import annotations

import importlib.util
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from agentmap.errors import WorkflowFileError
from agentmap.spec.readers import column_letter, read_table, read_tables

WriteCsv = Callable[..., Path]


def test_rows_carry_their_line_numbers_past_comments_blank_rows_and_multiline_cells(write_csv: WriteCsv) -> None:
    path = write_csv(
        '''
        # a comment before the header
        GraphName,Node,Prompt

        G,A,"two
        lines"
        # G,Skipped,commented out
        ,,
        G,B,"quoted, with ""quotes"""
        '''
    )
    table = read_table(path)
    assert table.header_line == 2
    assert table.headers == ["GraphName", "Node", "Prompt"]
    assert table.rows == [(4, ["G", "A", "two\nlines"]), (8, ["G", "B", 'quoted, with "quotes"'])]


def test_utf8_with_bom_reads_the_first_header_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes("GraphName,Node\nG,Café\n".encode("utf-8-sig"))
    table = read_table(path)
    assert table.headers == ["GraphName", "Node"]
    assert table.rows == [(2, ["G", "Café"])]


def test_tab_separated_files_are_read(tmp_path: Path) -> None:
    path = tmp_path / "flow.tsv"
    path.write_text("GraphName\tNode\tPrompt\nG\tA\thas, a comma\n", encoding="utf-8")
    assert read_table(path).rows == [(2, ["G", "A", "has, a comma"])]


def test_yaml_graphs_mapping_becomes_rows(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = tmp_path / "flow.yaml"
    path.write_text(
        "graphs:\n  G:\n    - {Node: A, Edge: B, Context: {k: 1}}\n    - {Node: B, Input_Fields: [x, y]}\n",
        encoding="utf-8",
    )
    table = read_table(path)
    assert table.headers == ["GraphName", "Node", "Edge", "Context", "Input_Fields"]
    assert table.rows[0][1] == ["G", "A", "B", '{"k": 1}', ""]
    assert table.rows[1][1] == ["G", "B", "", "", "x|y"]


@pytest.mark.skipif(importlib.util.find_spec("openpyxl") is not None, reason="openpyxl is installed")
def test_xlsx_without_the_excel_extra_says_how_to_install_it(tmp_path: Path) -> None:
    path = tmp_path / "flow.xlsx"
    path.write_bytes(b"PK\x03\x04")
    with pytest.raises(WorkflowFileError) as info:
        read_table(path)
    assert info.value.code == "missing-extra"
    assert "agentmap[excel]" in str(info.value)


def test_missing_file_suggests_a_close_name(tmp_path: Path) -> None:
    (tmp_path / "hello_world.csv").write_text("GraphName,Node\nG,A\n", encoding="utf-8")
    with pytest.raises(WorkflowFileError) as info:
        read_table(tmp_path / "hello_wrld.csv")
    err = info.value
    assert err.code == "file-not-found"
    assert isinstance(err, FileNotFoundError)
    assert "does not exist" in err.message
    assert err.hint is not None and "hello_world.csv" in err.hint


def test_a_directory_is_not_a_workflow_file_and_its_workflows_are_listed(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("GraphName,Node\nG,A\n", encoding="utf-8")
    with pytest.raises(WorkflowFileError) as info:
        read_table(tmp_path)
    assert info.value.code == "not-a-file"
    assert "is a directory" in info.value.message
    assert info.value.hint == "workflow files there: a.csv"


def test_unsupported_suffix_asks_for_csv(tmp_path: Path) -> None:
    path = tmp_path / "flow.txt"
    path.write_text("GraphName,Node\nG,A\n", encoding="utf-8")
    with pytest.raises(WorkflowFileError) as info:
        read_table(path)
    assert info.value.code == "unsupported-format"
    assert ".csv" in info.value.message


def test_binary_file_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_bytes(b"PK\x03\x04\x00\x00binary")
    with pytest.raises(WorkflowFileError) as info:
        read_table(path)
    assert info.value.code == "not-text"
    assert "binary" in info.value.message


def test_non_utf8_text_names_the_byte_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_bytes(b"GraphName,Node\nG,Caf\x81\n")  # 0x81 is neither UTF-8 here nor Windows-1252
    with pytest.raises(WorkflowFileError) as info:
        read_table(path)
    assert info.value.code == "not-text"
    assert "not UTF-8" in info.value.message
    assert "CSV UTF-8" in (info.value.hint or "")


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n\n,,\n"])
def test_empty_file_has_no_header(tmp_path: Path, text: str) -> None:
    path = tmp_path / "flow.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(WorkflowFileError) as info:
        read_table(path)
    assert info.value.code == "empty-file"
    assert "GraphName,Node" in (info.value.hint or "")


def test_header_only_is_read_as_a_table_without_rows(write_csv: WriteCsv) -> None:
    table = read_table(write_csv("GraphName,Node,AgentType\n"))
    assert table.headers == ["GraphName", "Node", "AgentType"]
    assert table.rows == []


def test_windows_1252_text_is_read_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_bytes("GraphName,Node\nG,Café €\n".encode("cp1252"))
    table = read_table(path)
    assert table.rows == [(2, ["G", "Café €"])]
    assert [code for code, _, _ in table.notes] == ["encoding"]


@pytest.mark.parametrize(("delimiter", "name"), [(";", "';'"), ("\t", "tabs")])
def test_semicolons_and_tabs_in_a_csv_are_detected(tmp_path: Path, delimiter: str, name: str) -> None:
    path = tmp_path / "flow.csv"
    path.write_text(f"GraphName{delimiter}Node{delimiter}Prompt\nG{delimiter}A{delimiter}Hi, you\n", encoding="utf-8")
    table = read_table(path)
    assert (table.headers, table.rows) == (["GraphName", "Node", "Prompt"], [(2, ["G", "A", "Hi, you"])])
    [(code, message, _)] = table.notes
    assert code == "csv-dialect" and name in message


def test_a_comma_csv_gets_no_note(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_text("GraphName,Node,Prompt\nG,A,a;b\n", encoding="utf-8")
    assert read_table(path).notes == ()


def test_each_sheet_of_a_workbook_holding_rows_is_a_table_with_its_own_row_numbers(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.title = "First"
    book.active.append(["Node", "Edge"])
    book.active.append(["A", ""])
    book.create_sheet("Empty")
    second = book.create_sheet("Second")
    second.append(["# notes"])
    second.append(["Node", "Edge"])
    second.append(["B", "C"])
    book.save(tmp_path / "flows.xlsx")
    tables = read_tables(tmp_path / "flows.xlsx")
    assert [(t.sheet, t.header_line, t.rows) for t in tables] == [
        ("First", 1, [(2, ["A", ""])]),
        ("Second", 2, [(3, ["B", "C"])]),
    ]
    assert read_table(tmp_path / "flows.xlsx").sheet == "First"


def test_column_letters_are_the_spreadsheets() -> None:
    assert [column_letter(i) for i in (0, 5, 25, 26, 27, 701, 702)] == ["A", "F", "Z", "AA", "AB", "ZZ", "AAA"]


def test_a_formula_cell_reads_as_the_value_excel_computed_for_it(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.append(["Node", "Prompt"])
    book.active.append(["A", '="Hi, "&"{name}"'])
    book.active.append(["B", "=A3"])  # never computed (written by a program, not Excel): read empty
    path = tmp_path / "flows.xlsx"
    book.save(path)
    with zipfile.ZipFile(path) as source:  # the value Excel keeps beside the formula when it saves
        parts = {name: source.read(name) for name in source.namelist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    parts["xl/worksheets/sheet1.xml"] = re.sub(
        r'<c r="B2">(<f>.*?</f>)<v\s*/>', r'<c r="B2" t="str">\1<v>Hi, {name}</v>', sheet
    ).encode()
    with zipfile.ZipFile(path, "w") as target:
        for name, data in parts.items():
            target.writestr(name, data)
    assert read_table(path).rows == [(2, ["A", "Hi, {name}"]), (3, ["B", ""])]
