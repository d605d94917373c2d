"""The spec models: Workflow, GraphSpec, NodeSpec, FuncRef and Issue."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentmap.spec.loader import read_workflow
from agentmap.spec.models import FuncRef, GraphSpec, Issue, NodeSpec, Workflow

WriteCsv = Callable[..., Path]


def test_workflow_round_trips_through_json(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        GraphName,Node,Context,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
        G,A,"{""k"": [1, 2]}",x:y,out,,B|C,func:mod:pick
        G,B,,,,func:route,,
        G,C,,,,,,
        """
    )
    workflow, _ = read_workflow(path)
    again = Workflow.model_validate_json(workflow.model_dump_json())
    assert again == workflow
    assert again.graphs[0].nodes[0].failure_next == FuncRef(name="pick", module="mod")
    assert again.graphs[0].nodes[0].success_next == ("B", "C")


def test_models_are_frozen() -> None:
    node = NodeSpec(name="A")
    with pytest.raises(ValidationError):
        node.name = "B"


def test_graph_entry_lookup_and_columns() -> None:
    graph = GraphSpec(
        name="G",
        nodes=(NodeSpec(name="Start", edge=("End",)), NodeSpec(name="End"), NodeSpec(name="Start", row=9)),
        columns={"Edge": "next"},
    )
    assert graph.entry == "Start"
    assert graph.by_name["Start"].row is None  # the first of duplicates
    assert graph.column("Edge") == "next"
    assert graph.column("Prompt") == "Prompt"


def test_node_next_cells_and_successors() -> None:
    node = NodeSpec(name="A", success_next=("B", "C"), failure_next=FuncRef(name="pick"))
    assert node.next_cells() == [("Success_Next", ("B", "C")), ("Failure_Next", FuncRef(name="pick"))]
    assert node.successors() == {"B", "C"}
    assert NodeSpec(name="Z").next_cells() == []


def test_workflow_get_prefers_exact_case_then_any_case() -> None:
    lower, upper = GraphSpec(name="main", nodes=()), GraphSpec(name="Main", nodes=())
    workflow = Workflow(graphs=(lower, upper))
    assert workflow.get("Main") is upper
    assert workflow.get("MAIN") is lower
    assert workflow.get("other") is None
    assert workflow.graph_names == ["main", "Main"]


def test_issue_location_and_text() -> None:
    issue = Issue(
        severity="error", code="unknown-target", message="bad", fix="fix it", file="f.csv", row=3, column="next"
    )
    assert issue.where == "f.csv:3:next"
    assert str(issue) == "f.csv:3:next: error[unknown-target]: bad -> fix it"
    assert Issue(severity="warning", code="c", message="m").where == "<workflow>"
    assert Issue(severity="warning", code="c", message="m", file="f.csv", column="Node").where == "f.csv:Node"


def test_the_nodes_and_graphs_read_are_what_model_construct_makes(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge
        G,A,echo,"{""k"": [1, 2]}",x,out,B
        G,B,echo,,out,,
        """
    )
    workflow, _ = read_workflow(path)
    graph = workflow.graphs[0]
    made: list[tuple[GraphSpec | NodeSpec, GraphSpec | NodeSpec]] = [
        (graph, GraphSpec.model_construct(**{name: getattr(graph, name) for name in GraphSpec.model_fields}))
    ]
    made += [
        (node, NodeSpec.model_construct(**{name: getattr(node, name) for name in NodeSpec.model_fields}))
        for node in graph.nodes
    ]
    for read, constructed in made:
        assert read == constructed and repr(read) == repr(constructed)
        assert read.model_fields_set == constructed.model_fields_set
        assert read.model_dump() == constructed.model_dump()
        assert read.model_copy(update={"name": "Z"}).name == "Z" and read.name != "Z"
    with pytest.raises(ValidationError):
        graph.nodes[0].name = "Z"  # still frozen
