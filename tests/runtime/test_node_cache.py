"""Context `cache` on any node: kept across processes, off with `--no-cache`, never a failure."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from timing import deadline

import agentmap
from agentmap.errors import WorkflowValidationError

sys.path.insert(0, str(Path(__file__).parents[1] / "cli"))
from cli_helpers import agentmap as cli
from cli_helpers import agentmap_forked

_AGENT = '''
from pathlib import Path
from agentmap import BaseAgent


class ShoutAgent(BaseAgent):
    """Appends each name it is given to side.txt (a side effect to count), fails on "fail"."""

    def process(self, inputs):
        with Path("side.txt").open("a") as f:
            f.write(inputs["name"] + "\\n")
        if inputs["name"] == "fail":
            raise ValueError("asked to fail")
        return inputs["name"].upper()
'''


def _project(folder: Path, cache: str = '{"ttl": 600}', prompt: str = "") -> Path:
    (folder / "custom_agents").mkdir(exist_ok=True)
    (folder / "custom_agents" / "shout.py").write_text(_AGENT, encoding="utf-8")
    context = json.dumps({"cache": json.loads(cache)}).replace('"', '""')
    (folder / "flow.csv").write_text(
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Prompt,Context\n"
        f'F,Shout,shout,name,loud,Done,{prompt},"{context}"\n'
        "F,Done,echo,loud,out,,,\n",
        encoding="utf-8",
    )
    return folder / "flow.csv"


def _ran(folder: Path) -> list[str]:
    side = folder / "side.txt"
    return side.read_text(encoding="utf-8").split() if side.exists() else []


def test_a_repeated_input_takes_the_kept_update_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    flow = _project(tmp_path)
    first = agentmap.run(flow, {"name": "ada"})
    second = agentmap.run(flow, {"name": "ada"})
    assert _ran(tmp_path) == ["ada"]  # the node ran once
    assert second.state["loud"] == first.state["loud"] == "ADA" and second.state["out"] == {"loud": "ADA"}
    shout = next(e for e in second.summary if e.name == "Shout")
    assert shout.success is True and shout.metadata == {"cached": True}
    assert "cached" not in next(e for e in first.summary if e.name == "Shout").metadata
    agentmap.run(flow, {"name": "bob"})  # another input is another entry
    assert _ran(tmp_path) == ["ada", "bob"]


def test_no_cache_runs_the_node_and_a_changed_row_never_answers_from_an_old_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    flow = _project(tmp_path)
    agentmap.run(flow, {"name": "ada"})
    agentmap.compile(flow).invoke({"name": "ada"}, {"configurable": {"no_cache": True}})
    assert _ran(tmp_path) == ["ada", "ada"]
    _project(tmp_path, prompt="louder")  # the row changed: its kept updates do not apply
    agentmap.run(flow, {"name": "ada"})
    assert _ran(tmp_path) == ["ada", "ada", "ada"]


def test_a_failed_node_is_never_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    flow = _project(tmp_path)
    for _ in range(2):
        result = agentmap.run(flow, {"name": "fail"})
        assert result.success is False
    assert _ran(tmp_path) == ["fail", "fail"]


def test_an_entry_expires_after_its_ttl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    flow = _project(tmp_path, cache='{"ttl": 1}')
    agentmap.run(flow, {"name": "ada"})
    give_up = deadline(30)
    while _ran(tmp_path) == ["ada"] and time.monotonic() < give_up:  # kept until its second is over
        agentmap.run(flow, {"name": "ada"})
        time.sleep(0.2)
    assert _ran(tmp_path) == ["ada", "ada"]


@pytest.mark.slow
def test_the_cache_outlives_the_process_and_the_summary_shows_the_hit(tmp_path: Path) -> None:
    _project(tmp_path)
    for _ in range(2):
        result = agentmap_forked("run", "flow.csv", "--state", '{"name": "ada"}', "--json", cwd=tmp_path)
        assert result.code == 0, result.err
    assert _ran(tmp_path) == ["ada"]
    assert (tmp_path / ".agentmap" / "node_cache.db").is_file()
    summary = json.loads(result.out)["summary"]
    assert summary[0]["name"] == "Shout" and summary[0]["metadata"] == {"cached": True}
    again = cli("run", "flow.csv", "--state", '{"name": "ada"}', "--no-cache", "--json", cwd=tmp_path)
    assert again.code == 0 and "metadata" not in json.loads(again.out)["summary"][0]
    assert _ran(tmp_path) == ["ada", "ada"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('F,Ask,human,,answer,,Name?,"{""cache"": {""ttl"": 60}}"', "a node that pauses for an answer runs every time"),
        ('F,Ask,echo,name,answer,,,"{""cache"": 60}"', 'Context cache must be an object such as {"ttl": 3600}'),
        ('F,Ask,echo,name,answer,,,"{""cache"": {""ttl"": 0}}"', 'Context cache "ttl" must be a positive number'),
    ],
)
def test_a_cache_that_cannot_apply_is_a_finding_at_the_context_cell(tmp_path: Path, row: str, message: str) -> None:
    flow = tmp_path / "flow.csv"
    flow.write_text("GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Prompt,Context\n" + row + "\n")
    with pytest.raises(WorkflowValidationError) as caught:
        agentmap.compile(flow)
    [issue] = [i for i in caught.value.issues if i.severity == "error"]
    assert issue.code == "bad-config" and issue.column == "Context" and issue.row == 2
    assert message in issue.message
    result = cli("validate", flow)
    assert result.code != 0 and message in result.plain
