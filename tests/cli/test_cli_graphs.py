"""Every workflow in graphs/ runs through the real command, with its initial state, and succeeds.

The initial state of `graphs/<name>.csv` is `graphs/<name>.state.json` (the same file `agentmap run`
picks up by itself); every workflow must have one. A file with several graphs
runs each of them. CSV files under a `data/` folder are data, not workflows. Each run happens in a
temporary working directory, so nothing a workflow writes lands in the repository.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import GRAPHS, agentmap
from docs_text import read_page, spans

import agentmap as package

WORKFLOWS = sorted(p for p in GRAPHS.rglob("*.csv") if "data" not in p.relative_to(GRAPHS).parts)

_EXPECTED: dict[str, dict[str, Any]] = {
    "hello_world.csv::HelloWorld": {"greeting": "Hello, World!"},
    "branching.csv::Approval": {"decision": "Approved: a new laptop"},
    "parallel.csv::Briefing": {
        "weather": "Weather in Lisbon: sunny",
        "news": "News from Lisbon: all quiet",
        "agenda": "Agenda in Lisbon: stand-up at 9",
    },
    "subgraph.csv::Main": {"greeting": "Hello, Ada Lovelace!", "framed": "*** Hello, Ada Lovelace! ***"},
    "subgraph.csv::Frame": {"framed": "*** standalone ***"},
    "custom_router.csv::Orders": {"lane": "Manual review for 250 EUR"},
    "llm_offline.csv::LLMOfflineDemo": {"message": "Done: title case returned Hello World. (your request had 5 words)"},
    "trip_planner.csv::TripPlanner": {
        "message": "Your trip: Fly Air France AF11 from New York to Paris at 19:30 ($575), then stay 3 nights at "
        "Maison Rivoli ($1020). Total: $1595."
    },
    "approval.csv::Purchase": {"report": "Purchase of a new laptop approved: True"},
    "assistant/assistant.csv::Assistant": {"domains": ["maths"], "content": "Done: add numbers returned 5.0."},
}


def test_every_workflow_has_its_initial_state_file() -> None:
    missing = [p for p in WORKFLOWS if not p.with_name(f"{p.stem}.state.json").is_file()]
    assert not missing


def test_the_starter_workflows_are_here() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"hello_world.csv", "branching.csv", "parallel.csv", "subgraph.csv", "custom_router.csv"} <= names
    assert (GRAPHS / "functions" / "choose_lane.py").is_file()


def test_the_starter_table_of_the_cli_page_lists_every_workflow() -> None:
    page = (GRAPHS.parent / "csv_specs" / "cli.md").read_text(encoding="utf-8")
    table = page[page.index("## The starter workflows") :].split("\n## ")[0]
    listed = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    assert listed == {p.relative_to(GRAPHS).as_posix() for p in WORKFLOWS}


def _starter_rows() -> list[Any]:
    """(line, file, run cell) of each row of the starter table of csv_specs/cli.md."""
    page = (GRAPHS.parent / "csv_specs" / "cli.md").read_text(encoding="utf-8")
    table = next(t for t in read_page("csv_specs/cli.md", page).tables if t.header == ("file", "shows", "run"))
    return [pytest.param(line, row[0].strip("`"), row[2], id=row[0].strip("`")) for line, row in table.rows]


@pytest.mark.parametrize(("line", "name", "cell"), _starter_rows())
def test_each_run_of_the_starter_table_does_what_it_says(tmp_path: Path, line: int, name: str, cell: str) -> None:
    """The command of each row (`--state ...` alone runs the row's file) exits as the row says (`exit N`, else
    0), takes the node it names (`takes Reject`), and a pause prints the `agentmap resume` the row shows."""
    shutil.copytree(GRAPHS, tmp_path / "graphs")
    written = spans(cell)[0]
    command = shlex.split(written)[1:]
    if not written.startswith("agentmap "):  # options alone: `agentmap run graphs/<file>` with them
        command = ["run", f"graphs/{name}", *shlex.split(written)]
    where = f"csv_specs/cli.md:{line}: `{written}`"
    result = agentmap(*command, cwd=tmp_path)
    said = re.search(r"\(exit (\d+)", cell)
    assert result.code == int(said.group(1) if said else 0), f"{where} exited {result.code}: {result.err[-2000:]}"
    if command[0] != "run":
        return
    document = json.loads(result.out)
    for node in re.findall(r"\btakes (\w+)", cell):
        assert node in [e["name"] for e in document["summary"]], f"{where} did not take {node}: {document['summary']}"
    printed = re.search(r"then the printed `(agentmap resume ID [^`]*)`", cell)
    if printed:
        assert document["resume"] == printed.group(1).replace("ID", document["thread"]), where
        assert agentmap(*shlex.split(document["resume"])[1:], cwd=tmp_path).code == 0, where


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.relative_to(GRAPHS).as_posix())
def test_every_graph_runs_and_succeeds(path: Path, tmp_path: Path) -> None:
    key = path.relative_to(GRAPHS).as_posix()
    for graph in package.load(path).graph_names:
        result = agentmap("run", f"{path}::{graph}", cwd=tmp_path)  # reads <name>.state.json by itself
        assert "Traceback" not in result.err
        assert result.code == 0, f"{key}::{graph} exited {result.code}: {result.err or result.out[-2000:]}"
        document = json.loads(result.out)
        if document.get("paused"):  # a workflow that asks a person: answer as the pause says
            resumed = agentmap(*shlex.split(document["resume"])[1:], cwd=tmp_path)
            assert resumed.code == 0, resumed.err
            document = json.loads(resumed.out)
        assert document["success"] is True and document["graph"] == graph
        assert document["summary"] and all(e["success"] for e in document["summary"]), document["summary"]
        for state_key, value in _EXPECTED.get(f"{key}::{graph}", {}).items():
            assert document["state"][state_key] == value, (key, graph, state_key)


def test_branching_failure_path_is_handled_by_the_workflow(tmp_path: Path) -> None:
    args = ("run", GRAPHS / "branching.csv", "--state", '{"request": "a yacht", "approved": "no"}')
    result = agentmap(*args, cwd=tmp_path)
    assert result.code == 0, result.err  # Check failed into its Failure_Next: a designed path, not a failure
    assert "ERROR" not in result.err
    document = json.loads(result.out)
    assert document["state"]["decision"] == "Rejected: a yacht"
    assert [(e["name"], e["success"], e.get("handled")) for e in document["summary"]] == [
        ("Check", False, True),
        ("Reject", True, None),
        ("Report", True, None),
    ]


def test_a_failure_path_that_ends_on_a_failing_node_fails_the_run(tmp_path: Path) -> None:
    flow = tmp_path / "flow.csv"
    flow.write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Success_Next,Failure_Next\n"
        "G,Check,branching,,approved,check,Done,Refuse\n"
        "G,Done,success,,,,,\n"
        "G,Refuse,failure,not approved,,,,\n"
    )
    result = agentmap("run", flow, "--state", '{"approved": "no"}', cwd=tmp_path)
    assert result.code == 1
    document = json.loads(result.out)
    assert [(e["name"], e.get("handled")) for e in document["summary"]] == [("Check", True), ("Refuse", None)]


def test_every_shipped_workflow_validates_without_warnings(tmp_path: Path) -> None:
    for path in WORKFLOWS:
        result = agentmap("validate", path, cwd=tmp_path)
        assert result.code == 0 and "0 errors, 0 warnings" in result.out + result.err, result.out + result.err


def test_custom_router_small_order(tmp_path: Path) -> None:
    result = agentmap("run", GRAPHS / "custom_router.csv", "--state", '{"amount": 40}', cwd=tmp_path)
    assert result.code == 0
    document = json.loads(result.out)
    assert document["state"]["lane"] == "Express lane for 40 EUR"
    assert [e["name"] for e in document["summary"]] == ["Receive", "Express", "Confirm"]


def test_parallel_join_runs_once_after_every_branch(tmp_path: Path) -> None:
    result = agentmap("run", GRAPHS / "parallel.csv", cwd=tmp_path)
    summary = json.loads(result.out)["summary"]
    names = [e["name"] for e in summary]
    assert names.count("Join") == 1 and names[-1] == "Join" and names[0] == "Start"
    join = summary[-1]
    assert all(e["end"] <= join["start"] for e in summary if e["name"] in ("Weather", "News", "Agenda"))


def test_subgraph_summaries_nest(tmp_path: Path) -> None:
    result = agentmap("run", f"{GRAPHS / 'subgraph.csv'}::Main", cwd=tmp_path)
    summary = {e["name"]: e for e in json.loads(result.out)["summary"]}
    assert [e["name"] for e in summary["Greet"]["subgraph"]] == ["Greet", "Finish"]
    assert [e["name"] for e in summary["Decorate"]["subgraph"]] == ["Border"]
