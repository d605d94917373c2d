"""Graph checks: names, types, routing, parallel writes, reachability and unset inputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentmap.spec.loader import read_workflow
from agentmap.spec.models import GraphSpec, Issue
from agentmap.spec.validation import branch_depths, check_graph, fan_outs

WriteCsv = Callable[..., Path]
KNOWN = {"", "default", "echo", "summary"}


def _graph(write_csv: WriteCsv, text: str) -> GraphSpec:
    workflow, issues = read_workflow(write_csv(text))
    assert [i for i in issues if i.severity == "error"] == []
    return workflow.graphs[0]


def _check(graph: GraphSpec) -> list[Issue]:
    return check_graph(
        graph,
        known_type=lambda name: name.lower() in KNOWN,
        unknown_type_message=lambda name: f"unknown agent type {name!r}",
        unknown_type_fix=lambda name: f"register {name}",
    )


def _found(issues: list[Issue]) -> list[tuple[int | None, str | None, str, str]]:
    return [(i.row, i.column, i.code, i.severity) for i in issues]


def test_a_clean_graph_has_no_findings(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv, "GraphName,Node,Input_Fields,Output_Field,Edge\nG,A,q,a,B\nG,B,a,b,\n")
    assert _check(graph) == []


def test_duplicate_reserved_and_unknown_type_are_reported_on_their_rows(write_csv: WriteCsv) -> None:
    graph = _graph(
        write_csv,
        """
        GraphName,step,Agent,Edge
        G,A,echo,B
        G,B,ecko,__end__
        G,A,echo,
        G,__end__,echo,
        """,
    )
    issues = _check(graph)
    assert _found(issues) == [
        (3, "Agent", "unknown-agent-type", "error"),
        (4, "step", "duplicate-node", "error"),
        (5, "step", "reserved-name", "error"),
    ]
    assert "first on row 2" in issues[1].message
    assert issues[0].message == "unknown agent type 'ecko'" and issues[0].fix == "register ecko"


def test_edge_with_success_next_conflicts_in_a_graph_built_in_python(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv, "GraphName,Node,next,on_success\nG,A,B,\nG,B,,\n")
    node = graph.nodes[0].model_copy(update={"success_next": ("B",)})
    issues = _check(graph.model_copy(update={"nodes": (node, graph.nodes[1])}))
    assert _found(issues) == [(2, "next", "edge-conflict", "error")]


def test_edge_with_success_next_in_a_file_follows_edge_with_a_warning(write_csv: WriteCsv) -> None:
    workflow, issues = read_workflow(write_csv("GraphName,Node,next,on_failure\nG,A,B,C\nG,B,,\nG,C,,\n"))
    assert [(i.row, i.column, i.code, i.severity) for i in issues] == [
        (2, "next", "edge-overrides-branches", "warning")
    ]
    assert "on_failure=C" in issues[0].message
    node = workflow.graphs[0].nodes[0]
    assert node.edge == ("B",) and node.failure_next is None


def test_edge_router_with_success_and_failure_targets_is_allowed(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv, "GraphName,Node,Edge,Success_Next,Failure_Next\nG,A,func:pick,B,C\nG,B,,,\nG,C,,,\n")
    assert _check(graph) == []


def test_unknown_target_names_the_column_and_suggests_a_node(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv, "GraphName,Node,SuccessTarget,FailureTarget\nG,Start,Finsh,Nowhere\nG,Finish,,\n")
    issues = _check(graph)
    assert _found(issues) == [
        (2, "SuccessTarget", "unknown-target", "error"),
        (2, "FailureTarget", "unknown-target", "error"),
        (3, "Node", "unreachable-node", "warning"),  # the misspelt target was its only way in
    ]
    assert "did you mean 'Finish'?" in issues[0].message
    assert "did you mean" not in issues[1].message
    assert "Start, Finish" in issues[1].fix


def test_parallel_branches_writing_one_key_name_both_writers(write_csv: WriteCsv) -> None:
    graph = _graph(
        write_csv,
        """
        GraphName,Node,Output_Field,Edge
        G,Split,,Left|Right
        G,Left,result,Join
        G,Right,result,Join
        G,Join,,
        """,
    )
    issues = _check(graph)
    assert _found(issues) == [(4, "Output_Field", "parallel-write", "error")]
    assert "'Left' and 'Right'" in issues[0].message


def test_parallel_branches_may_write_reduced_keys_and_the_join_is_not_a_conflict(write_csv: WriteCsv) -> None:
    graph = _graph(
        write_csv,
        """
        GraphName,Node,Input_Fields,Output_Field,Edge
        G,Split,q,,Left|Right
        G,Left,q,left|errors|messages,Join
        G,Right,q,right|errors|messages,Join
        G,Join,left|right,result,
        """,
    )
    assert _check(graph) == []


def test_same_key_at_different_depths_of_branches_is_not_parallel(write_csv: WriteCsv) -> None:
    graph = _graph(
        write_csv,
        """
        GraphName,Node,Output_Field,Edge
        G,Split,,A|B
        G,A,x,A2
        G,A2,,Join
        G,B,y,B2
        G,B2,x,Join
        G,Join,,
        """,
    )
    assert _check(graph) == []


def test_unreachable_node_is_a_warning_unless_a_router_may_reach_it(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv, "GraphName,Node,Edge\nG,A,B\nG,B,\nG,Orphan,B\n")
    issues = _check(graph)
    assert _found(issues) == [(4, "Node", "unreachable-node", "warning")]
    routed = _graph(write_csv, "GraphName,Node,Edge\nG,A,func:pick\nG,B,\nG,Orphan,B\n")
    assert _check(routed) == []


def test_unset_input_is_a_warning_that_respects_data_flow(write_csv: WriteCsv) -> None:
    graph = _graph(
        write_csv,
        """
        GraphName,Node,Input_Fields,Output_Field,Success_Next,Failure_Next
        G,A,question,draft,B,C
        G,B,draft|question|errors,final,,
        G,C,final,,,
        """,
    )
    issues = _check(graph)
    # C runs only after A failed; only B, on the other branch, writes `final`
    assert _found(issues) == [(4, "Input_Fields", "unset-input", "warning")]
    assert "'final'" in issues[0].message


def test_fan_outs_and_branch_depths(write_csv: WriteCsv) -> None:
    graph = _graph(
        write_csv,
        """
        GraphName,Node,Edge
        G,S,A|B
        G,A,A2
        G,A2,J
        G,B,J
        G,J,
        """,
    )
    assert fan_outs(graph) == [("S", ("A", "B"))]
    assert branch_depths(graph, "S", ("A", "B")) == [{"A": 1, "A2": 2}, {"B": 1}]


def test_a_loop_with_no_way_out_is_a_warning_at_the_cell_that_closes_it(write_csv: WriteCsv) -> None:
    trapped = _graph(write_csv, "GraphName,Node,Edge\nG,A,B\nG,B,C\nG,C,B\n")
    assert _found(_check(trapped)) == [(4, "Edge", "endless-loop", "warning")]
    # The same loop with a way out: C ends the graph when it succeeds, or goes round again when it fails.
    leaves = _graph(write_csv, "GraphName,Node,Edge,Success_Next,Failure_Next\nG,A,B,,\nG,B,C,,\nG,C,,,B\n")
    assert _check(leaves) == []
    itself = _graph(write_csv, "GraphName,Node,Success_Next,Failure_Next\nG,A,A,A\n")
    assert _found(_check(itself)) == [
        (2, "Success_Next", "endless-loop", "warning"),
        (2, "Failure_Next", "endless-loop", "warning"),
    ]
