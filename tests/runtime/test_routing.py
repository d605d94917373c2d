"""Routing: router functions, static edges with joins, and per-node decisions returned as Commands."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END

import agentmap
from agentmap.errors import AgentNotFoundError, NodeError
from agentmap.runtime.routing import Route, load_router, static_edges
from agentmap.spec.loader import read_workflow
from agentmap.spec.models import FuncRef, GraphSpec

WriteCsv = Callable[..., Path]


def _graph(write_csv: WriteCsv, text: str) -> GraphSpec:
    workflow, issues = read_workflow(write_csv(text))
    assert issues == []
    return workflow.graphs[0]


def test_func_name_is_found_in_its_own_file_then_in_any_file(tmp_path: Path) -> None:
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "choose.py").write_text("def choose(state, ok, bad):\n    return 'own file'\n", encoding="utf-8")
    (functions / "routes.py").write_text("def other(state, ok, bad):\n    return 'shared file'\n", encoding="utf-8")
    (functions / "_skip.py").write_text("def hidden(state, ok, bad):\n    return 'x'\n", encoding="utf-8")
    assert load_router(FuncRef(name="choose"), functions)({}, None, None) == "own file"
    assert load_router(FuncRef(name="other"), functions)({}, None, None) == "shared file"
    with pytest.raises(AgentNotFoundError) as info:
        load_router(FuncRef(name="hidden"), functions)
    assert info.value.code == "unknown-function"
    assert str(functions) in info.value.message
    assert "def hidden(state, success_target, failure_target):" in (info.value.hint or "")


def test_func_module_function_is_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_routes_mod.py").write_text("def pick(state, ok, bad):\n    return ok\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_routes_mod", raising=False)
    allowed = ["my_routes_mod", "no_such_mod_x"]
    assert load_router(FuncRef(name="pick", module="my_routes_mod"), tmp_path / "nowhere", allowed)({}, "A", "B") == "A"
    with pytest.raises(AgentNotFoundError, match="cannot import module 'no_such_mod_x'"):
        load_router(FuncRef(name="pick", module="no_such_mod_x"), tmp_path / "nowhere", allowed)
    with pytest.raises(AgentNotFoundError, match="module 'my_routes_mod'"):
        load_router(FuncRef(name="absent", module="my_routes_mod"), tmp_path / "nowhere", allowed)


def test_static_edges_join_parallel_branches_once(write_csv: WriteCsv) -> None:
    graph = _graph(
        write_csv,
        """
        GraphName,Node,Edge
        G,S,A|B
        G,A,A2
        G,A2,J
        G,B,J
        G,J,K
        G,K,
        """,
    )
    assert static_edges(graph) == [("S", "A"), ("S", "B"), ("A", "A2"), ("J", "K"), (["A2", "B"], "J")]


def test_nodes_with_success_or_failure_targets_get_no_static_edges(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv, "GraphName,Node,Edge,Success_Next,Failure_Next\nG,A,,B,C\nG,B,C,,\nG,C,,,\n")
    assert static_edges(graph) == [("B", "C")]


def _route(graph: GraphSpec, node: str, routers: dict[FuncRef, Any] | None = None) -> Route:
    return Route(graph, graph.by_name[node], routers or {})


def test_route_follows_success_or_failure(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv, "GraphName,Node,Success_Next,Failure_Next\nG,A,B|C,D\nG,B,,\nG,C,,\nG,D,,\nG,E,,\n")
    route = _route(graph, "A")
    assert route.destinations == ("B", "C", "D")
    ok = route({}, {"out": 1, "last_action_success": True})
    assert (ok.goto, ok.update) == (["B", "C"], {"out": 1, "last_action_success": True})
    assert route({}, {"last_action_success": False}).goto == ["D"]
    assert _route(graph, "B")({}, {"last_action_success": True}).goto == END


def test_router_gets_the_merged_state_and_both_targets(write_csv: WriteCsv) -> None:
    graph = _graph(
        write_csv, "GraphName,Node,Edge,Success_Next,Failure_Next\nG,A,func:pick,B,C|D\nG,B,,,\nG,C,,,\nG,D,,,\n"
    )
    calls: list[tuple[dict[str, Any], Any, Any]] = []

    def pick(state: dict[str, Any], success: Any, failure: Any) -> Any:
        calls.append((state, success, failure))
        return failure if state["last_action_success"] is False else success

    route = _route(graph, "A", {FuncRef(name="pick"): pick})
    command = route({"x": 1, "errors": ["old"]}, {"last_action_success": False, "errors": ["new"]})
    assert command.goto == ["C", "D"]
    assert calls == [({"x": 1, "last_action_success": False, "errors": ["old", "new"]}, "B", "C|D")]


@pytest.mark.parametrize(
    ("returned", "goto"), [(None, END), ("END", END), (["B", "__end__"], ["B"]), ("B | C", ["B", "C"])]
)
def test_router_results(write_csv: WriteCsv, returned: Any, goto: Any) -> None:
    graph = _graph(write_csv, "GraphName,Node,Edge\nG,A,func:pick\nG,B,\nG,C,\n")
    route = _route(graph, "A", {FuncRef(name="pick"): lambda *_: returned})
    assert route({}, {"last_action_success": True}).goto == goto


def test_router_returning_an_unknown_node_is_a_node_error_at_its_cell(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv, "GraphName,Node,on_success\nG,A,func:pick\nG,B,\n")
    route = _route(graph, "A", {FuncRef(name="pick"): lambda *_: "Bee"})
    with pytest.raises(NodeError) as info:
        route({}, {"last_action_success": True})
    err = info.value
    assert err.code == "bad-route"
    assert err.location is not None
    assert (err.location.row, err.location.column) == (2, "on_success")
    assert "returned 'Bee'" in err.message and "nodes: A, B" in err.message


def test_a_router_file_that_does_not_import_is_reported_not_raised(tmp_path: Path) -> None:
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "pick.py").write_text("def pick(state, ok, bad:\n", encoding="utf-8")
    with pytest.raises(AgentNotFoundError) as info:
        load_router(FuncRef(name="pick"), functions)
    assert info.value.code == "unknown-function"
    assert "pick.py" in info.value.message and "SyntaxError" in info.value.message


def test_a_router_module_that_fails_on_import_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "exploding_routes.py").write_text("raise RuntimeError('boom at import')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AgentNotFoundError, match="boom at import") as info:
        load_router(FuncRef(name="pick", module="exploding_routes"), tmp_path)
    assert info.value.code == "unknown-function"


def test_a_router_node_is_drawn_with_conditional_edges_to_the_nodes_it_may_pick() -> None:
    graphs = Path(__file__).resolve().parents[2] / "graphs"
    mermaid = agentmap.compile(graphs / "custom_router.csv").draw_mermaid()
    assert "Receive -.-> Express;" in mermaid and "Receive -.-> Review;" in mermaid
    assert "Receive --> __end__" not in mermaid


def _order(write_csv: WriteCsv, text: str, state: dict[str, Any]) -> list[str]:
    return [record.name for record in agentmap.compile(write_csv(text)).invoke(state).summary]


def _in_steps(order: list[str], *steps: str) -> bool:
    """Whether the nodes ran in `steps`, one after another ("B C": the nodes of one step, which run at once, so in
    either order: `C` before `B` was seen under load)."""
    sizes = [len(step.split()) for step in steps]
    cut = [sorted(order[sum(sizes[:n]) : sum(sizes[: n + 1])]) for n in range(len(steps))]
    return sum(sizes) == len(order) and cut == [sorted(step.split()) for step in steps]


_DYNAMIC_JOIN = """
GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
G,A,echo,x,a,B|C,,
G,B,success,x,b,,J,
G,C,echo,x,c,C2,,
G,C2,success,x,c2,,J,
G,J,echo,x,j,,,
"""


def test_a_join_reached_through_success_next_runs_once_after_every_branch(write_csv: WriteCsv) -> None:
    order = _order(write_csv, _DYNAMIC_JOIN, {"x": 1})
    assert _in_steps(order, "A", "B C", "C2", "J"), order


def test_a_plain_join_whose_branch_may_end_early_still_runs_for_the_other_branch(write_csv: WriteCsv) -> None:
    text = """
    GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
    G,A,echo,x,a,B|C,,
    G,B,branching,x,b,,B2,
    G,B2,echo,x,b2,J,,
    G,C,echo,x,c,J,,
    G,J,echo,x,j,,,
    """
    order = _order(write_csv, text, {"x": True})
    assert _in_steps(order, "A", "B C", "B2", "J"), order
    order = _order(write_csv, text, {"x": False})
    assert _in_steps(order, "A", "B C", "J"), order


def test_a_join_on_a_single_path_runs_at_once_and_takes_no_extra_step(write_csv: WriteCsv) -> None:
    text = """
    GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
    G,A,branching,x,a,,B|C,C2
    G,B,success,x,b,,J,
    G,C,echo,x,c,C2,,
    G,C2,success,x,c2,,J,
    G,J,echo,x,j,K,,
    G,K,echo,x,k,,,
    """
    workflow = agentmap.compile(write_csv(text))
    result = workflow.invoke({"x": False}, config={"recursion_limit": 5})
    assert [r.name for r in result.summary] == ["A", "C2", "J", "K"]
    order = [r.name for r in workflow.invoke({"x": True}).summary]
    assert _in_steps(order, "A", "B C", "C2", "J", "K"), order


def test_nested_joins_the_outer_one_waits_for_the_inner_one(write_csv: WriteCsv) -> None:
    text = """
    GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
    G,A,echo,x,a,B|C,,
    G,B,echo,x,b,B1|B2,,
    G,B1,success,x,b1,,JB,
    G,B2,success,x,b2,,JB,
    G,JB,echo,x,jb,JB2,,
    G,JB2,success,x,jb2,,J,
    G,C,echo,x,c,C1,,
    G,C1,success,x,c1,,J,
    G,J,echo,x,j,,,
    """
    order = _order(write_csv, text, {"x": 1})
    assert order.count("J") == 1
    assert order.index("J") > order.index("JB2")


def test_a_dotted_router_name_is_told_to_use_a_colon(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def pick(state, success_target=None, failure_target=None):\n    return None\n")
    with pytest.raises(AgentNotFoundError) as info:
        load_router(FuncRef(name="bad.pick"), tmp_path)
    assert info.value.code == "unknown-function"
    assert "write func:bad:pick" in (info.value.hint or "") and "def bad.pick" not in (info.value.hint or "")
