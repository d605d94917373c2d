"""The examples of csv_specs/ are real: every workflow in README.md, format.md, agents.md and mcp.md validates
cleanly and runs as the text says, and every failing example of validation.md produces its finding."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agentmap

SPECS = Path(__file__).resolve().parents[2] / "csv_specs"
_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def _blocks(doc: str, kind: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall((SPECS / doc).read_text(encoding="utf-8")) if lang == kind]


def _sections(doc: str) -> dict[str, str]:
    text = (SPECS / doc).read_text(encoding="utf-8")
    parts = re.split(r"^### `([a-z-]+)`.*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


CLEAN = [
    (doc, i, body)
    for doc in ("README.md", "format.md", "agents.md", "mcp.md")
    for i, body in enumerate(_blocks(doc, "csv"))
]


@pytest.mark.parametrize(("doc", "index", "body"), CLEAN, ids=[f"{d}-{i}" for d, i, _ in CLEAN])
def test_every_documented_workflow_validates_cleanly(tmp_path: Path, doc: str, index: int, body: str) -> None:
    path = tmp_path / "example.csv"
    path.write_text(body, encoding="utf-8")
    assert agentmap.validate(path) == []


def _example(tmp_path: Path, doc: str, graph: str) -> Path:
    body = next(b for b in _blocks(doc, "csv") if f"\n{graph}," in b)
    path = tmp_path / f"{graph}.csv"
    path.write_text(body, encoding="utf-8")
    return path


def test_readme_example_runs_as_described(tmp_path: Path) -> None:
    app = agentmap.compile(_example(tmp_path, "README.md", "Hello"))
    result = app.invoke({"name": "Ada"})
    assert (result.state["greeting"], result.success) == ("Hello, Ada!", True)
    assert [e.name for e in result.summary] == ["Greet", "Check", "Done"]
    assert app.invoke({"name": ""}).failed_nodes == ["Check", "Sorry"]  # an empty name; no name is refused


def test_format_examples_run_as_described(tmp_path: Path) -> None:
    assert agentmap.run(_example(tmp_path, "format.md", "Hello"), {"name": "Ada"}).state["greeting"] == "Hello, Ada!"
    two = _example(tmp_path, "format.md", "Greeting")
    assert agentmap.run(f"{two}::Farewell", {"name": "Ada"}).state["farewell"] == "Goodbye, Ada."
    review = _example(tmp_path, "format.md", "Review")
    rejected = agentmap.run(review, {"approved": "no"})
    assert [(e.name, e.handled) for e in rejected.summary] == [("Check", True), ("Reject", False)]
    assert not rejected.success  # the designed path ends on a failure node
    fetched = agentmap.run(_example(tmp_path, "format.md", "Outage"))
    assert fetched.success and fetched.state["result"] == "used the cache"
    assert [(e.name, e.success, e.handled) for e in fetched.summary] == [("Load", False, True), ("Cached", True, False)]
    research = agentmap.run(_example(tmp_path, "format.md", "Research"), {"topic": "bees"})
    assert [e.name for e in research.summary].count("Merge") == 1
    assert research.state["report"].startswith("web: {'topic': 'bees'}")


def test_format_router_example_runs(tmp_path: Path) -> None:
    (router,) = [b for b in _blocks("format.md", "python") if b.startswith("# functions/")]
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "by_score.py").write_text(router, encoding="utf-8")
    (table,) = [b for b in _blocks("format.md", "text") if b.startswith("GraphName,")]
    path = tmp_path / "grade.csv"
    path.write_text(table, encoding="utf-8")
    assert agentmap.validate(path) == []
    assert [e.name for e in agentmap.run(path, {"score": 0.9}).summary] == ["Score", "Pass"]
    assert [e.name for e in agentmap.run(path, {"score": 0.1}).summary] == ["Score", "Retry"]


def test_format_yaml_example_runs(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    (body,) = _blocks("format.md", "yaml")
    path = tmp_path / "hello.yaml"
    path.write_text(body, encoding="utf-8")
    assert agentmap.run(path, {"name": "Ada"}).state["greeting"] == "Hello, Ada!"


def test_agents_examples_run_as_described(tmp_path: Path) -> None:
    def run(graph: str, state: dict[str, object], selector: str = "") -> agentmap.RunResult:
        return agentmap.run(f"{_example(tmp_path, 'agents.md', graph)}{selector}", state)

    assert run("Draft", {}).state["plan"] == "[Plan] Plan the trip"
    assert run("Copy", {"query": "hi"}).state["copied"] == {"query": "hi"}
    assert run("Greet", {"name": "Ada", "count": 2}).state["greeting"] == "Hello, Ada! You have 2 new messages."
    assert [e.name for e in run("Gate", {"status": "OK"}).summary] == ["Check", "Ship"]
    assert [e.name for e in run("Gate", {"status": "pending"}).summary] == ["Check", "Hold"]
    assert run("Try", {}).state["result"] == "used the cache"
    assert run("Ask", {}).state["name"] == "guest"
    assert run("Report", {"city": "Oslo", "weather": "rain"}).state["report"] == (
        "Report for Oslo\n- city: Oslo\n- weather: rain"
    )
    assert run("Outer", {"who": "Ada"}, "::Outer").state["greeting"] == "Hello, Ada!"


def test_agents_custom_agent_example_registers_and_runs(tmp_path: Path) -> None:
    (code,) = [b for b in _blocks("agents.md", "python") if "class WeatherAgent" in b]
    folder = tmp_path / "custom_agents"
    folder.mkdir()
    (folder / "weather.py").write_text(code.replace('@agentmap.agent("weather")', ""), encoding="utf-8")
    path = tmp_path / "flow.csv"
    path.write_text(
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field\n"
        'W,Look,Weather,"{""units"": ""imperial""}",city,report\n',
        encoding="utf-8",
    )
    assert agentmap.run(path, {"city": "Oslo"}).state["report"] == "sunny in Oslo (imperial)"


VALIDATION_CODES = {
    "missing-column",
    "duplicate-column",
    "unknown-column",
    "csv-dialect",
    "encoding",
    "sheet-skipped",
    "missing-graph-name",
    "missing-node-name",
    "bad-context",
    "context-plain-text",
    "context-unquoted-keys",
    "legacy-subgraph",
    "legacy-spelling",
    "bad-field",
    "bad-target",
    "bad-prompt-file",
    "path-outside-roots",
    "unknown-prompt",
    "formula-like-cell",
    "no-graphs",
    "duplicate-node",
    "reserved-name",
    "unknown-agent-type",
    "edge-conflict",
    "edge-overrides-branches",
    "unknown-target",
    "parallel-write",
    "unreachable-node",
    "unset-input",
    "unknown-function",
    "function-not-allowed",
    "bad-config",
    "graph-not-found",
    "graph-not-selected",
    "file-not-found",
    "not-a-file",
    "unsupported-format",
    "not-text",
    "empty-file",
    "config-assumed",
    "endless-loop",
    "unclosed-quote",
    "rows-in-quoted-cell",
    "code-outside-roots",
    "check-skipped",
    "file-too-big",
}


def test_validation_md_documents_every_code() -> None:
    assert set(_sections("validation.md")) == VALIDATION_CODES


FAILING = [
    (code, body)
    for code, section in _sections("validation.md").items()
    for body in _BLOCK.findall(section)
    if body[0] == "csv"
]


@pytest.mark.parametrize(("code", "block"), FAILING, ids=[c for c, _ in FAILING])
def test_every_failing_example_produces_its_finding(tmp_path: Path, code: str, block: tuple[str, str]) -> None:
    path = tmp_path / "example.csv"
    path.write_text(block[1], encoding="utf-8")
    issues = [i for i in agentmap.validate(path) if i.code == code]
    assert len(issues) == 1, agentmap.validate(path)
    issue = issues[0]
    if code != "no-graphs":
        assert issue.row is not None and issue.column
        headers = block[1].splitlines()[0].split(",")
        assert issue.column in headers or (code == "missing-column" and issue.column == "Node")
