"""Scenario files in xlsx and JSONL (agentmap/interface/_scenario_files.py) through `agentmap eval run`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import GRAPHS, agentmap, write

from agentmap.interface.manifest import read_manifest

WORKFLOW = str(GRAPHS / "llm_offline.csv")
ROWS: list[dict[str, Any]] = [
    {"scenario": "reverse", "user_message": "please reverse the text hello world", "must_include": ["dlrow olleh"]},
    {"scenario": "chat", "turn": 1, "user_message": "hello there", "expect_refusal": False},
    {
        "scenario": "chat",
        "turn": 2,
        "user_message": "please title case the text big apple",
        "must_include": "Big Apple",
    },
    {"scenario": "booking", "goal": "Book a table. It is for 4.", "max_turns": 2, "stop_when": "'confirmed'"},
]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    return write(path, "".join(json.dumps(row) + "\n" for row in rows))


def _xlsx(path: Path, rows: list[list[Any]]) -> Path:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    book.save(path)
    return path


def _table(rows: list[dict[str, Any]]) -> list[list[Any]]:
    header = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[("|".join(v) if isinstance(v, list) else v) for v in (row.get(k) for k in header)] for row in rows]
    return [header, *cells]


def _run(scenarios: Path, out: Path) -> dict[str, Any]:
    result = agentmap("eval", "run", scenarios, "--workflow", WORKFLOW, "--out", out, "--json")
    assert result.code == 0, result.text
    document: dict[str, Any] = json.loads(result.out)
    return document


def test_xlsx_and_jsonl_give_the_scenarios_a_csv_gives(tmp_path: Path) -> None:
    csv_text = "\n".join(",".join("" if v is None else str(v) for v in row) for row in _table(ROWS)) + "\n"
    csv_text = csv_text.replace("False", "no")
    files = [
        write(tmp_path / "s.csv", csv_text),
        _jsonl(tmp_path / "s.jsonl", ROWS),
        _xlsx(tmp_path / "s.xlsx", _table(ROWS)),
    ]
    scenarios = []
    for file in files:
        ran = _run(file, tmp_path / file.suffix[1:])
        assert {r["scenario"]: r["stop_reason"] for r in ran["runs"]} == {
            "reverse": "single_turn",
            "chat": "completed",
            "booking": "max_turns",
        }
        manifest = read_manifest(tmp_path / file.suffix[1:])
        assert manifest is not None
        scenarios.append(manifest.scenarios)
    assert scenarios[0] == scenarios[1] == scenarios[2]
    assert scenarios[1]["chat"].turns[0].expect_refusal is False


@pytest.mark.parametrize(
    ("lines", "where", "what"),
    [
        ('{"scenario": "a", "user_message": "hi"}\n{"scenario": "b", "user_message": \n', ":2:", "not valid JSON"),
        ('{"scenario": "a", "user_message": "hi"}\n["b", "hi"]\n', ":2:", "must be a JSON object, not list"),
        ('{"scenario": "a", "user_message": {"text": "hi"}}\n', ":1:user_message:", "a dict is not a cell"),
        ('{"scenario": "a", "user_message": "hi"}\n{"user_message": "no name"}\n', ":2:scenario:", "no scenario name"),
        ('{"name_of_it": "a", "user_message": "hi"}\n', "", "no 'scenario' column"),
        ('{"scenario": "a", "turn": "first", "user_message": "hi"}\n', ":1:turn:", "positive whole number"),
    ],
)
def test_a_bad_jsonl_line_is_refused_with_its_line_and_key(tmp_path: Path, lines: str, where: str, what: str) -> None:
    scenarios = write(tmp_path / "bad.jsonl", lines)
    result = agentmap("eval", "run", scenarios, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    assert result.code == 2, result.text
    assert f"error[bad-scenarios]: {scenarios}{where}" in result.text and what in result.text, result.text
    assert not (tmp_path / "logs").exists()


def test_a_bad_xlsx_row_is_refused_with_its_row_and_column(tmp_path: Path) -> None:
    missing = _xlsx(tmp_path / "missing.xlsx", [["scenario", "must_include"], ["a", "x"]])
    result = agentmap("eval", "run", missing, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    assert result.code == 2 and "no 'user_message' column" in result.text, result.text
    bad = _xlsx(tmp_path / "bad.xlsx", [["scenario", "user_message", "expect_refusal"], ["a", "hi", "maybe"]])
    result = agentmap("eval", "run", bad, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    assert result.code == 2 and f"{bad}:2:expect_refusal: expected yes or no" in result.text, result.text
    broken = write(tmp_path / "broken.xlsx", "not a workbook")
    result = agentmap("eval", "run", broken, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    assert result.code == 2 and "cannot read the scenarios file as a spreadsheet" in result.text, result.text


def test_another_extension_and_an_unknown_graph_are_refused(tmp_path: Path) -> None:
    text = write(tmp_path / "s.txt", "scenario,user_message\na,hi\n")
    result = agentmap("eval", "run", text, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    assert result.code == 2 and "a scenarios file is .csv, .xlsx or .jsonl, not '.txt'" in result.text
    good = write(tmp_path / "s.csv", "scenario,user_message\na,hi\n")
    result = agentmap("eval", "run", good, "--workflow", f"{WORKFLOW}::Nope", "--out", tmp_path / "logs")
    assert result.code == 3 and "error[graph-not-found]" in result.text and "has no graph 'Nope'" in result.text
