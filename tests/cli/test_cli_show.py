"""`agentmap inspect` and `agentmap export`."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import agentmap

import agentmap as package

_WIDE = {"COLUMNS": "200"}


def test_inspect_shows_nodes_types_edges_inputs_and_outputs() -> None:
    result = agentmap("inspect", "graphs/branching.csv", env=_WIDE)
    assert result.code == 0, result.text
    lines = [line for line in result.out.splitlines() if line.count("│") > 5]
    rows = {line.split("│")[2].strip(): line for line in lines if line.split("│")[2].strip()}
    assert set(rows) == {"Check", "Approve", "Reject", "Report"}
    assert "branching" in rows["Check"] and "ok → Approve" in rows["Check"] and "approved" in rows["Check"]
    assert any("fail → Reject" in line for line in lines)
    assert "request, decision" in rows["Report"] and "(end)" in rows["Report"]
    assert "Approval — 4 nodes, entry Check" in result.out


def test_inspect_every_graph_or_one() -> None:
    both = agentmap("inspect", "graphs/subgraph.csv", env=_WIDE)
    assert "Main — 3 nodes" in both.out and "Frame — 1 nodes" in both.out
    one = agentmap("inspect", "graphs/subgraph.csv::Frame", env=_WIDE)
    assert "Frame — 1 nodes" in one.out and "Main —" not in one.out


def test_inspect_without_a_file_lists_agent_types() -> None:
    result = agentmap("inspect", env=_WIDE)
    assert result.code == 0
    listed = {line.split("│")[1].strip() for line in result.out.splitlines() if line.startswith("│")}
    assert {"default", "echo", "template", "branching", "summary", "graph"} <= listed


def test_inspect_missing_file() -> None:
    result = agentmap("inspect", "graphs/nope.csv")
    assert result.code == 3 and "does not exist" in result.err and "Traceback" not in result.text


def test_export_mermaid_offline() -> None:
    result = agentmap("export", "graphs/parallel.csv", "--format", "mermaid")
    assert result.code == 0, result.text
    assert "graph TD;" in result.out
    for edge in ("Start --> Weather", "Start --> News", "Weather --> Join", "Join --> __end__"):
        assert edge in result.out


def test_export_json_round_trips_to_the_spec() -> None:
    whole = agentmap("export", "graphs/subgraph.csv", "-f", "json")
    assert whole.code == 0, whole.text
    workflow = package.Workflow.model_validate_json(whole.out)
    assert workflow.graph_names == ["Main", "Frame"]
    one = json.loads(agentmap("export", "graphs/subgraph.csv::Main", "-f", "json").out)
    assert [n["name"] for n in one["nodes"]] == ["Prepare", "Greet", "Decorate"]


def test_export_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "diagram.mmd"
    result = agentmap("export", "graphs/hello_world.csv", "-o", target)
    assert result.code == 0 and result.out == ""
    assert "Greet --> Finish" in target.read_text()


def test_export_mermaid_needs_one_graph(tmp_path: Path) -> None:
    result = agentmap("export", "graphs/subgraph.csv")  # Frame is a subgraph of Main: Main is drawn
    assert result.code == 0 and "Prepare" in result.out and "Border" not in result.out
    two = tmp_path / "two.csv"
    two.write_text("GraphName,Node\nA,X\nB,Y\n", encoding="utf-8")
    result = agentmap("export", two)
    assert result.code == 3
    assert "holds 2 graphs" in result.err and f"{two}::A" in result.err
