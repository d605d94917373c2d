"""Building a Workflow from a file: cells parsed, every problem collected with its row and column."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentmap.spec.loader import parse_selector, read_workflow
from agentmap.spec.models import FuncRef

WriteCsv = Callable[..., Path]


def test_parse_selector_splits_file_and_graph() -> None:
    assert parse_selector("graphs/flow.csv::Main") == (Path("graphs/flow.csv"), "Main")
    assert parse_selector(Path("flow.csv")) == (Path("flow.csv"), None)
    assert parse_selector("flow.csv::") == (Path("flow.csv"), None)
    assert parse_selector("::Inner") == (Path(""), "Inner")


def test_rows_become_nodes_with_every_cell_parsed(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        graph_name,Step,Type,Instructions,desc,Config,Inputs,Output,next_on_success,next_on_failure,ToolFile,Tools
        Flow,Ask,Echo,"Hi {name}",asks,"{""k"": 1}",name:who|age,answer|score,Done,Oops,tools.py,a|b
        Flow,Done,,,,,,,,,,
        Flow,Oops,failure,,,,,,,,,
        """
    )
    workflow, issues = read_workflow(path)
    assert issues == []
    (graph,) = workflow.graphs
    assert graph.name == "Flow"
    assert graph.file == str(path)
    assert graph.columns["Node"] == "Step"
    ask = graph.nodes[0]
    assert ask.model_dump() == {
        "name": "Ask",
        "agent_type": "Echo",
        "prompt": "Hi {name}",
        "description": "asks",
        "context": {"k": 1},
        "inputs": ("name:who", "age"),
        "outputs": ("answer", "score"),
        "edge": None,
        "success_next": ("Done",),
        "failure_next": ("Oops",),
        "tool_source": "tools.py",
        "available_tools": ("a", "b"),
        "row": 2,
    }
    assert graph.nodes[1].agent_type == "" and graph.nodes[1].context == {}
    assert [n.row for n in graph.nodes] == [2, 3, 4]


def test_several_graphs_keep_file_order_and_rows_may_interleave(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        GraphName,Node,Edge
        First,A,B
        Second,X,
        First,B,func:pick
        """
    )
    workflow, issues = read_workflow(path)
    assert issues == []
    assert workflow.graph_names == ["First", "Second"]
    first = workflow.get("first")
    assert first is not None and [n.name for n in first.nodes] == ["A", "B"]
    assert first.nodes[1].edge == FuncRef(name="pick")


def test_file_prompt_is_loaded_relative_to_the_workflow(write_csv: WriteCsv, tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "greet.txt").write_text("Hello, {name}!\nWelcome.", encoding="utf-8")
    path = write_csv("GraphName,Node,Prompt\nG,A,file:prompts/greet.txt\n")
    workflow, issues = read_workflow(path)
    assert issues == []
    assert workflow.graphs[0].nodes[0].prompt == "Hello, {name}!\nWelcome."


def test_every_bad_cell_is_reported_with_row_and_column_as_written(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        Graph,name,Configuration,InputFields,OutputField,Target,on_success,Template
        G,A,{not json,,,,,
        G,B,,a:b:c,,,,
        G,C,,,x:y,,,
        G,D,,,,X|func:f,,
        G,E,,,,,func:,
        G,F,,,,,,file:nowhere.txt
        G,,,,,,,
        ,H,,,,,,
        G,Fine,,,,,,
        """
    )
    workflow, issues = read_workflow(path)
    found = [(i.row, i.column, i.code) for i in issues]
    assert found == [
        (2, "Configuration", "bad-context"),
        (3, "InputFields", "bad-field"),
        (4, "OutputField", "bad-field"),
        (5, "Target", "bad-target"),
        (6, "on_success", "bad-target"),
        (7, "Template", "bad-prompt-file"),
        (8, "name", "missing-node-name"),
        (9, "Graph", "missing-graph-name"),
    ]
    assert all(i.severity == "error" and i.file == str(path) for i in issues)
    assert issues[0].node == "A" and issues[0].graph == "G"
    assert "this row has no name" in issues[6].message
    # reading went on: good rows (and rows whose bad cell was dropped) are still there
    assert [n.name for n in workflow.graphs[0].nodes] == ["A", "B", "C", "D", "E", "F", "Fine"]


def test_header_problems_are_reported_on_the_header_line(write_csv: WriteCsv) -> None:
    path = write_csv("# comment\nGraphName,Colour,AgentType\nG,red,echo\n")
    workflow, issues = read_workflow(path)
    assert [(i.row, i.column, i.code) for i in issues] == [
        (2, "Colour", "unknown-column"),
        (2, "Node", "missing-column"),
    ]
    assert workflow.graphs == ()


def test_header_without_rows_is_no_graphs(write_csv: WriteCsv) -> None:
    workflow, issues = read_workflow(write_csv("GraphName,Node,AgentType\n"))
    assert workflow.graphs == ()
    assert [(i.code, i.row) for i in issues] == [("no-graphs", None)]
    assert "no graph rows" in issues[0].message


def test_unknown_column_warning_does_not_stop_reading(write_csv: WriteCsv) -> None:
    workflow, issues = read_workflow(write_csv("GraphName,Node,Notes\nG,A,hello\n"))
    assert [(i.severity, i.code, i.column, i.row) for i in issues] == [("warning", "unknown-column", "Notes", 1)]
    assert workflow.graphs[0].nodes[0].name == "A"
