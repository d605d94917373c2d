"""Chain fusion (`compile(fuse=True)`): the same runs in fewer LangGraph steps."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

import agentmap
from agentmap.errors import WorkflowValidationError

GRAPHS = Path(__file__).parents[2] / "graphs"
# These write to a database or stamp trace ids and times: their runs differ from one run to the next anyway.
NOT_REPEATABLE = {"task_assistant", "trip_planner"}


def outcome(result: agentmap.RunResult) -> tuple[Any, ...]:
    """What a user sees of a run: success, the per-node summary, errors.

    Nodes of parallel branches start in the order their threads happen to run, fused or not, so the summary
    and the errors are compared as collections.
    """
    summary = sorted((e.name, e.success, e.error or "") for e in result.summary)
    return result.success, summary, sorted(result.errors)


def chunks(app: agentmap.CompiledWorkflow, state: dict[str, Any]) -> list[str]:
    """The per-node stream of a run (as text, sorted: parallel branches of one step come in any order)."""
    return sorted(repr(chunk) for chunk in app.stream(dict(state)))


def both(source: Any, state: dict[str, Any], **options: Any) -> tuple[agentmap.CompiledWorkflow, ...]:
    keys = tuple(state)
    return (
        agentmap.compile(source, state_keys=keys, **options),
        agentmap.compile(source, state_keys=keys, fuse=True, **options),
    )


@pytest.mark.parametrize("path", sorted(GRAPHS.glob("*.csv")), ids=lambda p: p.stem)
def test_every_shipped_workflow_runs_the_same_fused(path: Path) -> None:
    state_file = path.with_suffix(".state.json")
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    plain, fused = both(path, state)
    a, b = plain.invoke(dict(state)), fused.invoke(dict(state))
    assert outcome(a) == outcome(b)
    if path.stem not in NOT_REPEATABLE:
        assert a.state == b.state
        assert chunks(plain, state) == chunks(fused, state)


def random_graph(seed: int) -> str:
    """A random acyclic graph of deterministic nodes: chains, fan-outs, joins, success/failure branches."""
    rng = random.Random(seed)
    n = rng.randint(3, 14)
    rows = ["GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next"]
    for i in range(n):
        kind = rng.choice(["echo", "echo", "echo", "default", "success", "failure"])
        later = [f"n{j}" for j in range(i + 1, n)]
        edge = success = failure = ""
        if later:
            shape = rng.random()
            if shape < 0.55:
                edge = rng.choice(later[:3])
            elif shape < 0.7 and len(later) > 1:
                edge = "|".join(rng.sample(later[:4], 2))
            elif shape < 0.95:
                success = rng.choice(later[:3])
                failure = rng.choice(later) if rng.random() < 0.7 else ""
        source = f"f{rng.randrange(i)}" if i else "seed"
        rows.append(f"G,n{i},{kind},{source},f{i},{edge},{success},{failure}")
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("seed", range(150))
def test_random_graphs_run_the_same_fused(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "g.csv"
    path.write_text(random_graph(seed), encoding="utf-8")
    try:
        plain, fused = both(path, {"seed": 1})
    except WorkflowValidationError:
        pytest.skip("the random graph is not a valid workflow (e.g. two branches write one key)")
    a, b = plain.invoke({"seed": 1}), fused.invoke({"seed": 1})
    assert a.state == b.state
    assert outcome(a) == outcome(b)
    assert chunks(plain, {"seed": 1}) == chunks(fused, {"seed": 1})


CHAIN = """GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
C,A,echo,x,a,,B,
C,B,failure,a,b,,C,Recover
C,C,echo,b,c,,,
C,Recover,echo,a,r,,,
"""


def test_a_failing_node_inside_a_chain_takes_its_failure_next(write_csv: Any) -> None:
    fused = agentmap.compile(write_csv(CHAIN), fuse=True)
    assert fused.fused == {"A": ["A", "B", "C"]}
    result = fused.invoke({"x": 1})
    assert [e.name for e in result.summary] == ["A", "B", "Recover"]
    assert result.state["r"] == {"a": {"x": 1}} and "c" not in result.state
    assert result.errors and result.errors[0].startswith("Error in B")
    assert result.state["last_action_success"] is True


def test_each_node_of_a_chain_records_its_own_step(write_csv: Any) -> None:
    rows = ["GraphName,Node,AgentType,Input_Fields,Output_Field,Edge"]
    rows += [f"L,n{i},echo,k{i},k{i + 1},{f'n{i + 1}' if i < 49 else ''}" for i in range(50)]
    app = agentmap.compile(write_csv("\n".join(rows) + "\n"), fuse=True)
    assert list(app.graph.builder.nodes) == ["n0"]  # one LangGraph step for fifty CSV nodes
    result = app.invoke({"k0": 7})
    assert [e.name for e in result.summary] == [f"n{i}" for i in range(50)]
    assert all(e.duration is not None and e.duration >= 0 for e in result.summary)
    chunks = list(app.stream({"k0": 7}))
    assert [next(iter(c)) for c in chunks] == [f"n{i}" for i in range(50)]


def test_nodes_named_by_interrupt_before_are_never_fused(write_csv: Any) -> None:
    rows = "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\n" + "".join(
        f"I,{n},echo,{i},{o},{nxt}\n"
        for n, i, o, nxt in [("A", "x", "a", "B"), ("B", "a", "b", "C"), ("C", "b", "c", "D"), ("D", "c", "d", "")]
    )
    app = agentmap.compile(write_csv(rows), fuse=True, interrupt_before=["B"], checkpointer="memory")
    assert app.fused == {"C": ["C", "D"]}
    config: Any = {"configurable": {"thread_id": "t"}}
    app.invoke({"x": 1}, config)
    assert app.graph.get_state(config).next == ("B",)
    assert app.invoke(None, config).state["d"] == {"c": {"b": {"a": {"x": 1}}}}


def test_a_pausing_node_stays_alone_so_resuming_reruns_nothing_else(write_csv: Any) -> None:
    rows = (
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
        "P,A,echo,,,x,a,Ask\n"
        'P,Ask,input,Name?,"{""interrupt"": true}",,name,B\n'
        "P,B,echo,,,name,b,C\n"
        "P,C,echo,,,b,c,\n"
    )
    app = agentmap.compile(write_csv(rows), fuse=True, checkpointer="memory")
    assert app.fused == {"B": ["B", "C"]}
    config: Any = {"configurable": {"thread_id": "p"}}
    assert app.invoke({"x": 1}, config).interrupts
    result = app.invoke(Command(resume="Ada"), config)
    assert [e.name for e in result.summary if not e.metadata.get("before_resume")] == ["Ask", "B", "C"]
    assert result.state["c"] == {"b": {"name": "Ada"}}


async def test_fused_chains_run_under_ainvoke_and_astream(write_csv: Any) -> None:
    plain, fused = both(write_csv(CHAIN), {"x": 1})
    assert (await fused.ainvoke({"x": 1})).state == (await plain.ainvoke({"x": 1})).state
    assert [c async for c in fused.astream({"x": 1})] == [c async for c in plain.astream({"x": 1})]
