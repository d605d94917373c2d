"""`.xlsx` workbooks through the command line: one graph per sheet, `file.xlsx::Graph`, `flows.xlsx[Sheet]!B7`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import agentmap

openpyxl = pytest.importorskip("openpyxl")

HEADERS = ["Node", "AgentType", "Prompt", "Input_Fields", "Output_Field", "Edge"]


def workbook(path: Path, sheets: dict[str, list[list[str]]]) -> Path:
    """A workbook with one sheet per entry, rows as given (the first is the header)."""
    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    book.save(path)
    return path


def two_flows(tmp_path: Path, *, second_edge: str = "Shout") -> Path:
    return workbook(
        tmp_path / "flows.xlsx",
        {
            "Greet": [HEADERS, ["Hello", "template", "Hello, {name}", "name", "greeting", ""]],
            "Loud": [
                HEADERS,
                ["Say", "template", "{name}!", "name", "said", second_edge],
                ["Shout", "template", "{said}!!", "said", "shouted", ""],
            ],
        },
    )


def test_each_sheet_without_a_graphname_column_is_a_graph_named_after_it(tmp_path: Path) -> None:
    path = two_flows(tmp_path)
    assert agentmap("validate", path).code == 0
    loud = agentmap("run", f"{path}::Loud", "--state", '{"name": "Ada"}', "--json", cwd=tmp_path)
    assert loud.code == 0, loud.err
    assert json.loads(loud.out)["state"]["shouted"] == "Ada!!!"
    greet = agentmap("run", f"{path}::Greet", "--state", '{"name": "Ada"}', "--json", cwd=tmp_path)
    assert json.loads(greet.out)["state"]["greeting"] == "Hello, Ada"
    unnamed = agentmap("run", path, "--state", '{"name": "Ada"}', cwd=tmp_path)
    assert unnamed.code == 3 and "Greet" in unnamed.err and "Loud" in unnamed.err
    mermaid = agentmap("export", f"{path}::Loud", "--format", "mermaid")
    assert mermaid.code == 0 and "Shout" in mermaid.out and "Hello" not in mermaid.out


def test_a_graphname_column_holds_several_graphs_on_one_sheet(tmp_path: Path) -> None:
    path = workbook(
        tmp_path / "one.xlsx",
        {
            "Flows": [
                ["GraphName", *HEADERS],
                ["A", "Only", "echo", "", "x", "y", ""],
                ["B", "Other", "echo", "", "x", "z", ""],
            ]
        },
    )
    result = agentmap("run", f"{path}::B", "--state", '{"x": 1}', "--json", cwd=tmp_path)
    assert result.code == 0, result.err
    assert json.loads(result.out)["state"]["z"] == {"x": 1}


def test_findings_name_the_sheet_and_cell_as_a_spreadsheet_does(tmp_path: Path) -> None:
    path = two_flows(tmp_path, second_edge="Shuot")
    result = agentmap("validate", path)
    assert result.code == 4
    assert f"{path}[Loud]!F2: error[unknown-target]" in result.out, result.out
    document = json.loads(agentmap("run", f"{path}::Loud", "--json").out)
    location = document["error"]["location"]
    assert location["sheet"] == "Loud" and location["cell"] == "F2" and location["row"] == 2
    assert location["ref"] == f"{path}[Loud]!F2"
    assert document["error"]["issues"][0]["cell"] == "F2"


def test_a_header_problem_is_located_on_its_header_cell(tmp_path: Path) -> None:
    path = workbook(tmp_path / "bad.xlsx", {"Main": [["Node", "AgentType", "Agent_Type"], ["A", "echo", "echo"]]})
    result = agentmap("validate", path)
    assert f"{path}[Main]!C1:" in result.out, result.out


def test_serve_serves_every_sheet_or_the_graph_named(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from agentmap.server import ServeConfig, create_app

    path = two_flows(tmp_path)
    for target, graphs in ((str(path), ["Greet", "Loud"]), (f"{path}::Loud", ["Loud"])):
        app = create_app(ServeConfig(targets=(target,), checkpoint=str(tmp_path / "runs.db")))
        assert [a.to_json()["graph_id"] for a in app.state.server.assistants.all] == graphs


def test_a_sheet_of_notes_beside_the_graphs_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = workbook(
        tmp_path / "with_notes.xlsx",
        {
            "Greet": [HEADERS, ["Hello", "template", "Hello, {name}", "name", "greeting", ""]],
            "Notes": [["Owner", "Ada"]],
        },
    )
    result = agentmap("validate", path)
    assert result.code == 0, result.out
    assert f"{path}[Notes]!1:1: warning[sheet-skipped]: sheet 'Notes' has no Node column" in result.out
    run = agentmap("run", path, "--state", '{"name": "Ada"}', "--json", cwd=tmp_path)
    assert json.loads(run.out)["state"]["greeting"] == "Hello, Ada"
