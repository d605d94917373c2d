"""Workbooks in the studio through its HTTP routes: a sheet at a time, saved back keeping the rest of the workbook."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from studio_helpers import studio_client

import agentmap
from agentmap.studio import StudioConfig

openpyxl = pytest.importorskip("openpyxl")
styles = pytest.importorskip("openpyxl.styles")

HEADERS = ["Node", "AgentType", "Prompt", "Input_Fields", "Output_Field", "Edge"]


def formatted_workbook(path: Path) -> Path:
    """Two sheets, one graph each (no GraphName column), a bold red header, a filled cell, widths, a number."""
    book = openpyxl.Workbook()
    first = book.active
    first.title = "Greet"
    for row in (HEADERS, ["Hello", "template", "Hello, {name}", "name", "greeting", "Bye"]):
        first.append(row)
    first.append(["Bye", "template", "Bye, {name}", "name", "farewell", ""])
    for cell in first[1]:
        cell.font = styles.Font(bold=True, color="FFC00000")
    first["C2"].fill = styles.PatternFill("solid", fgColor="FFFFFF00")
    first.column_dimensions["C"].width = 42
    notes = book.create_sheet("Notes")
    notes.append(["Kept as is", 3])
    notes["A1"].font = styles.Font(italic=True)
    notes.column_dimensions["A"].width = 30
    book.save(path)
    return path


@pytest.fixture
def book_path(tmp_path: Path) -> Path:
    return formatted_workbook(tmp_path / "flows.xlsx")


@pytest.fixture
def client(book_path: Path) -> Iterator[TestClient]:
    with studio_client(StudioConfig(target=book_path)) as test_client:
        yield test_client


def opened(client: TestClient, name: str) -> dict[str, Any]:
    response = client.get("/studio/api/open", params={"file": name})
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def save(client: TestClient, name: str, rows: list[dict[str, Any]], base: str) -> Any:
    return client.post("/studio/api/save", json={"file": name, "rows": rows, "base": base})


def test_each_sheet_is_opened_on_its_own_with_its_graph_named_after_it(client: TestClient) -> None:
    assert client.get("/studio/api/files").json()["files"] == ["flows.xlsx[Greet]", "flows.xlsx[Notes]"]
    data = opened(client, "flows.xlsx[Greet]")
    assert data["sheet"] == "Greet" and data["sheets"] == ["flows.xlsx[Greet]", "flows.xlsx[Notes]"]
    assert data["rows"][1]["cells"] == ["Hello", "template", "Hello, {name}", "name", "greeting", "Bye"]
    assert data["lines"] == [1, 2, 3] and data["valid"] is True
    assert client.get("/studio/api/open", params={"file": "flows.xlsx"}).status_code == 404
    assert client.get("/studio/api/open", params={"file": "flows.xlsx[Nope]"}).status_code == 404


def test_a_finding_names_its_cell_in_the_sheet(client: TestClient) -> None:
    data = opened(client, "flows.xlsx[Greet]")
    rows = [{"id": r["id"], "cells": list(r["cells"])} for r in data["rows"]]
    rows[1]["cells"][5] = "Byee"
    checked = client.post("/studio/api/check", json={"file": "flows.xlsx[Greet]", "rows": rows}).json()
    finding = next(f for f in checked["findings"] if f["code"] == "unknown-target")
    assert (finding["row"], finding["column"], finding["cell"]) == (2, 6, "F2")
    assert finding["where"].endswith("flows.xlsx[Greet]!F2")


def test_saving_writes_the_cells_and_keeps_other_sheets_formatting_and_widths(
    client: TestClient, book_path: Path
) -> None:
    data = opened(client, "flows.xlsx[Greet]")
    rows = [{"id": r["id"], "cells": list(r["cells"])} for r in data["rows"]]
    rows[1]["cells"][2] = "Hi, {name}"
    rows.append({"id": None, "cells": ["Extra", "echo", "", "farewell", "out", ""]})
    rows[2]["cells"][5] = "Extra"
    saved = save(client, "flows.xlsx[Greet]", rows, data["version"])
    assert saved.status_code == 200, saved.text
    assert saved.json()["version"] != data["version"]

    book = openpyxl.load_workbook(book_path)
    greet, notes = book["Greet"], book["Notes"]
    assert [c.value for c in greet[2]] == ["Hello", "template", "Hi, {name}", "name", "greeting", "Bye"]
    assert [c.value for c in greet[4]][:2] == ["Extra", "echo"]
    assert greet["A1"].font.bold and greet["A1"].font.color.rgb == "FFC00000"
    assert greet["C2"].fill.fgColor.rgb == "FFFFFF00"
    assert greet.column_dimensions["C"].width == 42
    assert [c.value for c in notes[1]] == ["Kept as is", 3] and notes["A1"].font.italic
    assert notes.column_dimensions["A"].width == 30
    hidden = [p.name for p in book_path.parent.iterdir() if p.name.startswith(".")]
    assert hidden == [".flows.xlsx.lock"]  # the saves' lock file, and no temporary left


def test_moved_and_removed_rows_take_their_formatting_and_leave_no_stale_cells(
    client: TestClient, book_path: Path
) -> None:
    data = opened(client, "flows.xlsx[Greet]")
    header, hello, _bye = ({"id": r["id"], "cells": list(r["cells"])} for r in data["rows"])
    hello["cells"][5] = ""
    assert save(client, "flows.xlsx[Greet]", [header, hello], data["version"]).status_code == 200
    greet = openpyxl.load_workbook(book_path)["Greet"]
    assert greet.max_row == 2 and greet["F2"].value is None and greet["C2"].fill.fgColor.rgb == "FFFFFF00"


def test_a_workbook_changed_on_disk_is_not_overwritten(client: TestClient, book_path: Path) -> None:
    data = opened(client, "flows.xlsx[Greet]")
    book = openpyxl.load_workbook(book_path)
    book["Notes"]["B2"] = "theirs"
    book.save(book_path)
    rows = [{"id": r["id"], "cells": r["cells"]} for r in data["rows"]]
    refused = save(client, "flows.xlsx[Greet]", rows, data["version"])
    assert refused.status_code == 409 and refused.json()["code"] == "file-changed"
    assert openpyxl.load_workbook(book_path)["Notes"]["B2"].value == "theirs"
    assert client.get("/studio/api/version", params={"file": "flows.xlsx[Greet]"}).json()["version"] != data["version"]


def calling_workbook(path: Path) -> Path:
    """Sheet Main's node Call runs graph Helper, one of two graphs of sheet Helpers (which has a GraphName column)."""
    book = openpyxl.Workbook()
    main = book.active
    main.title = "Main"
    main.append(["Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Edge"])
    main.append(["Call", "graph", "", '{"workflow": "::Helper"}', "name", "out", "End"])
    main.append(["End", "echo", "", "", "out", "done", ""])
    helpers = book.create_sheet("Helpers")
    helpers.append(["GraphName", "Node", "AgentType", "Prompt", "Input_Fields", "Output_Field"])
    helpers.append(["Helper", "Hi", "template", "Hello, {name}", "name", "greeting"])
    helpers.append(["Other", "Bye", "template", "Bye, {name}", "name", "farewell"])
    book.save(path)
    return path


def findings_of(findings: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(f["code"], f["sheet"], f["cell"], f["message"]) for f in findings]


def validated(path: Path) -> list[tuple[Any, ...]]:
    return [(i.code, i.sheet, i.cell, i.message) for i in agentmap.validate(path)]


@pytest.mark.parametrize(
    ("sheet", "row", "column", "text", "expected"),
    [  # a graph of sheet Helpers misspelled on sheet Main; the graph renamed on sheet Helpers: found on Main!D2
        ("Main", 1, 3, '{"workflow": "::Helpr"}', ("Main", "D2", 4)),
        ("Helpers", 1, 0, "Helper2", ("Main", "D2", None)),
    ],
)
def test_a_call_to_another_sheets_graph_is_checked_against_the_workbook_as_edited(
    tmp_path: Path, sheet: str, row: int, column: int, text: str, expected: tuple[Any, ...]
) -> None:
    path = calling_workbook(tmp_path / "calls.xlsx")
    assert validated(path) == []
    name = f"calls.xlsx[{sheet}]"
    with studio_client(StudioConfig(target=path)) as client:
        data = opened(client, name)
        rows = [{"id": r["id"], "cells": list(r["cells"])} for r in data["rows"]]
        rows[row]["cells"][column] = text
        checked = client.post("/studio/api/check", json={"file": name, "rows": rows}).json()
        finding = next(f for f in checked["findings"] if f["code"] == "bad-config")
        assert (finding["sheet"], finding["cell"], finding["column"]) == expected
        assert "Helper" in finding["message"] and finding["where"].endswith(f"calls.xlsx[{expected[0]}]!D2")
        assert checked["valid"] is (expected[0] != sheet)  # a finding on another sheet leaves this one valid
        assert save(client, name, rows, data["version"]).status_code == 200
    assert findings_of(checked["findings"]) == validated(path)  # what agentmap validate says of the saved file


def formula_workbook(path: Path) -> Path:
    """Sheet Greet whose Prompt C2 is a formula Excel computed as `Hello, {name}` (the value kept in the file)."""
    book = openpyxl.Workbook()
    greet = book.active
    greet.title = "Greet"
    greet.append(HEADERS)
    greet.append(["Hello", "template", '="Hello, "&"{name}"', "name", "greeting", ""])
    book.save(path)
    with zipfile.ZipFile(path) as source:  # openpyxl writes no computed value: put in the one Excel would
        parts = {name: source.read(name) for name in source.namelist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    computed = re.sub(r'<c r="C2">(<f>.*?</f>)<v\s*/>', r'<c r="C2" t="str">\1<v>Hello, {name}</v>', sheet)
    assert computed != sheet
    parts["xl/worksheets/sheet1.xml"] = computed.encode()
    with zipfile.ZipFile(path, "w") as target:
        for name, data in parts.items():
            target.writestr(name, data)
    return path


def test_a_formula_cell_shows_the_value_excel_computed_and_the_workbook_is_not_saved_over_it(tmp_path: Path) -> None:
    path = formula_workbook(tmp_path / "formulas.xlsx")
    before = path.read_bytes()
    with studio_client(StudioConfig(target=path)) as client:
        data = opened(client, "formulas.xlsx[Greet]")
        assert data["rows"][1]["cells"][2] == "Hello, {name}"  # what Excel shows, and what agentmap run reads
        assert data["rows"][1]["formulas"] == {"2": '="Hello, "&"{name}"'} and data["rows"][0]["formulas"] == {}
        assert findings_of(data["findings"]) == validated(path) == []
        rows = [{"id": r["id"], "cells": list(r["cells"])} for r in data["rows"]]
        rows[1]["cells"][4] = "greeting2"
        refused = save(client, "formulas.xlsx[Greet]", rows, data["version"])
    assert refused.status_code == 422 and refused.json()["code"] == "formula-cells"
    assert "Greet!C2" in refused.json()["message"] and "Excel" in refused.json()["hint"]
    assert path.read_bytes() == before
    result = agentmap.run(path, {"name": "Ada"})
    assert result.state["greeting"] == "Hello, Ada"


def test_another_sheet_changed_on_disk_is_checked_as_it_is_now(tmp_path: Path) -> None:
    path = calling_workbook(tmp_path / "calls.xlsx")
    with studio_client(StudioConfig(target=path)) as client:
        data = opened(client, "calls.xlsx[Main]")
        rows = [{"id": r["id"], "cells": r["cells"]} for r in data["rows"]]
        assert client.post("/studio/api/check", json={"file": "calls.xlsx[Main]", "rows": rows}).json()["valid"]
        book = openpyxl.load_workbook(path)
        book["Helpers"]["A2"] = "Renamed"  # by another program, while the studio has sheet Main open
        book.save(path)
        checked = client.post("/studio/api/check", json={"file": "calls.xlsx[Main]", "rows": rows}).json()
    assert [(f["code"], f["cell"]) for f in checked["findings"]] == [("bad-config", "D2")]
    assert findings_of(checked["findings"]) == validated(path)


def test_text_typed_like_a_formula_is_saved_as_text_and_read_back_as_that_text(
    client: TestClient, book_path: Path
) -> None:
    data = opened(client, "flows.xlsx[Greet]")
    rows = [{"id": r["id"], "cells": list(r["cells"])} for r in data["rows"]]
    rows[1]["cells"][2] = "=SUM(A1)"  # typed in the grid: text, not a formula
    rows[2]["cells"][2] = "#N/A"  # the text of an Excel error value
    saved = save(client, "flows.xlsx[Greet]", rows, data["version"])
    assert saved.status_code == 200, saved.text
    for _ in range(2):
        greet = openpyxl.load_workbook(book_path)["Greet"]
        assert [(c.value, c.data_type) for c in (greet["C2"], greet["C3"])] == [("=SUM(A1)", "s"), ("#N/A", "s")]
        assert greet["C2"].quotePrefix and greet["C3"].quotePrefix  # Excel shows it as text and keeps it text
        assert greet["C2"].fill.fgColor.rgb == "FFFFFF00"  # the cell's formatting is kept
        reopened = opened(client, "flows.xlsx[Greet]")
        assert reopened["rows"][1]["cells"][2] == "=SUM(A1)" and reopened["rows"][1]["formulas"] == {}
        rows = [{"id": r["id"], "cells": list(r["cells"])} for r in reopened["rows"]]
        rows[1]["cells"][4] = rows[1]["cells"][4] + "s"  # another cell changed: the next save is not refused
        again = save(client, "flows.xlsx[Greet]", rows, reopened["version"])
        assert again.status_code == 200, again.text
    assert [code for code, *_ in validated(book_path)] == ["sheet-skipped"]  # the Notes sheet, nothing else
    assert agentmap.run(f"{book_path}::Greet", {"name": "Ada"}).state["greetingss"] == "=SUM(A1)"
