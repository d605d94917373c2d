"""A node whose agent reads only its Input_Fields is handed only those keys: the same runs, fewer reads."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

import agentmap
from agentmap.agents import BaseAgent
from agentmap.agents.registry import AgentRegistry
from agentmap.errors import WorkflowValidationError
from agentmap.runtime import compiler

GRAPHS = Path(__file__).parents[2] / "graphs"
NOT_REPEATABLE = {"task_assistant", "trip_planner"}  # a database and trace ids: differ from run to run anyway


def _random_graph(seed: int) -> str:
    """The random workflows of the fusion tests (chains, fan-outs, joins, success/failure branches)."""
    spec = importlib.util.spec_from_file_location("agentmap_test_fusion", Path(__file__).parent / "test_fusion.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.random_graph(seed)
    return text


def _facts(metadata: dict[str, Any]) -> str:
    """A node's metadata without what is timed (an LLM node's `duration_ms`)."""
    return repr({k: v for k, v in metadata.items() if "duration" not in k})


def _seen(app: agentmap.CompiledWorkflow, state: dict[str, Any]) -> tuple[Any, ...]:
    """Everything a user sees of a run: final state, summary (inputs and results too), errors, both streams."""
    result = app.invoke(dict(state))
    summary = sorted(
        (e.name, e.success, e.error or "", repr(e.inputs), repr(e.result), _facts(e.metadata)) for e in result.summary
    )
    updates = sorted(repr(chunk) for chunk in app.stream(dict(state)))
    values = [repr(sorted(chunk.items())) for chunk in app.stream(dict(state), stream_mode="values")]
    return result.success, summary, sorted(result.errors), updates, values, result.state


def _both(monkeypatch: pytest.MonkeyPatch, source: Any, state: dict[str, Any]) -> tuple[Any, Any]:
    """What a run shows with narrowed node inputs, and with every node given the whole state."""
    narrowed = agentmap.compile(source, state_keys=tuple(state))
    with monkeypatch.context() as patch:
        patch.setattr(compiler, "_narrowed", lambda *args: None)
        whole = agentmap.compile(source, state_keys=tuple(state))
    return narrowed, whole


@pytest.mark.parametrize("path", sorted(GRAPHS.glob("*.csv")), ids=lambda p: p.stem)
def test_every_shipped_workflow_runs_the_same_with_narrowed_inputs(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    state_file = path.with_suffix(".state.json")
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    narrowed, whole = _both(monkeypatch, path, state)
    a, b = _seen(narrowed, state), _seen(whole, state)
    if path.stem in NOT_REPEATABLE:
        assert a[:3] == b[:3] or (a[0], len(a[1])) == (b[0], len(b[1]))
    else:
        assert a == b


@pytest.mark.parametrize("seed", range(60))
def test_random_graphs_run_the_same_with_narrowed_inputs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seed: int
) -> None:
    path = tmp_path / "g.csv"
    path.write_text(_random_graph(seed), encoding="utf-8")
    try:
        narrowed, whole = _both(monkeypatch, path, {"seed": 1})
    except WorkflowValidationError:
        pytest.skip("the random graph is not a valid workflow (e.g. two branches write one key)")
    assert _seen(narrowed, {"seed": 1}) == _seen(whole, {"seed": 1})


def test_a_plain_node_reads_only_its_input_fields(write_csv: Any) -> None:
    rows = "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\nG,A,echo,x|y,a,B\nG,B,echo,a,b,\n"
    app = agentmap.compile(write_csv(rows))
    assert app.graph.nodes["A"].channels == ["x", "y"]  # not the other keys of the state
    assert app.invoke({"x": 1, "y": 2, "z": 3}).state["b"] == {"a": {"x": 1, "y": 2}}


class _PeekingAgent(BaseAgent):
    """Reads a key that is not among its Input_Fields in its `_pre_process` hook."""

    def _pre_process(self, state: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
        return state, {**inputs, "peeked": state.get("secret")}

    def process(self, inputs: dict[str, Any]) -> Any:
        return inputs


def test_an_agent_with_hooks_sees_the_whole_state(write_csv: Any) -> None:
    registry = AgentRegistry()
    registry.register("peek", _PeekingAgent)
    app = agentmap.compile(
        write_csv("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,A,peek,x,out\n"),
        registry=registry,
        state_keys=["secret"],
    )
    assert app.invoke({"x": 1, "secret": "s"}).state["out"] == {"x": 1, "peeked": "s"}


class _TidyingAgent(BaseAgent):
    """A `_pre_process` hook that reads only the inputs, and says so."""

    @classmethod
    def reads_only_inputs(cls) -> bool:
        return True

    def _pre_process(self, state: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
        return state, {key: str(value).strip() for key, value in inputs.items()}

    def process(self, inputs: dict[str, Any]) -> Any:
        return inputs


def test_an_agent_declaring_it_reads_only_its_inputs_is_narrowed_despite_its_hooks(write_csv: Any) -> None:
    registry = AgentRegistry()
    registry.register("tidy", _TidyingAgent)
    registry.register("peek", _PeekingAgent)
    rows = "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\nG,A,tidy,x,out,B\nG,B,peek,x,seen,\n"
    app = agentmap.compile(write_csv(rows), registry=registry, state_keys=["secret"])
    assert app.graph.nodes["A"].channels == ["x"]  # declared: only its input
    assert "secret" in app.graph.nodes["B"].channels  # hooks, no declaration: the whole state
    assert app.invoke({"x": " 1 ", "secret": "s"}).state["out"] == {"x": "1"}


def test_a_node_with_a_router_sees_the_whole_state(write_csv: Any) -> None:
    functions = write_csv(
        "def pick(state, success_target=None, failure_target=None):\n    return 'B' if state.get('secret') else 'C'\n",
        "functions/pick.py",
    )
    rows = "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\n"
    rows += "G,A,echo,x,a,func:pick\nG,B,echo,a,b,\nG,C,echo,a,c,\n"
    app = agentmap.compile(write_csv(rows), functions_dir=functions.parent, state_keys=["secret"])
    assert "b" in app.invoke({"x": 1, "secret": True}).state
    assert "c" in app.invoke({"x": 1}).state


def test_a_node_without_input_fields_still_runs(write_csv: Any) -> None:
    rows = "GraphName,Node,AgentType,Input_Fields,Output_Field,Prompt\nG,A,default,,out,hi\n"
    app = agentmap.compile(write_csv(rows))
    assert app.invoke({"x": 1}).state["out"] == "[A] hi"
