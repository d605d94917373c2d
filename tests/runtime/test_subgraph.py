"""The graph agent type: subgraphs of the same or another file, input/output mappings, nested summaries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import agentmap

WriteCsv = Callable[..., Path]

OUTER = """
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
Outer,Prepare,template,"{user}",,user,who,Call,,
Outer,Call,graph,,{workflow=::Inner},name=who,greeting=message,,Done,Failed
Outer,Done,template,"done: {greeting}",,greeting,out,,,
Outer,Failed,template,"failed: {errors}",,errors,out,,,
Inner,Hello,template,"Hello, {name}!",,name,message,Check,,
Inner,Check,branching,,"{""success_values"": [""Hello, Ada!""]}",message,checked,,,
"""


def test_same_file_subgraph_maps_inputs_and_outputs_and_nests_its_summary(write_csv: WriteCsv) -> None:
    result = agentmap.run(f"{write_csv(OUTER)}::Outer", {"user": "Ada"})
    assert result.success is True
    assert result.state["greeting"] == "Hello, Ada!"
    assert result.state["out"] == "done: Hello, Ada!"
    assert "message" not in result.state and "name" not in result.state  # child keys stay in the child
    call = next(e for e in result.summary if e.name == "Call")
    assert call.subgraph is not None
    assert [(e.name, e.success) for e in call.subgraph] == [("Hello", True), ("Check", True)]
    assert [e.name for e in result.summary] == ["Prepare", "Call", "Done"]
    assert result.to_dict()["summary"][1]["subgraph"][0]["name"] == "Hello"


async def test_subgraph_runs_under_ainvoke(write_csv: WriteCsv) -> None:
    result = await agentmap.compile(write_csv(OUTER), "Outer").ainvoke({"user": "Ada"})
    assert result.state["out"] == "done: Hello, Ada!"
    assert [e.name for e in result.summary[1].subgraph or []] == ["Hello", "Check"]


def test_a_failing_subgraph_fails_its_node_which_takes_failure_next(write_csv: WriteCsv) -> None:
    result = agentmap.run(f"{write_csv(OUTER)}::Outer", {"user": "Bob"})
    assert result.success is True  # Call's Failure_Next handles it: a designed path
    assert [(e.name, e.handled) for e in result.summary] == [("Prepare", False), ("Call", True), ("Failed", False)]
    (error,) = result.errors
    assert error.startswith("Error in Call: subgraph 'Inner' failed at Check: Error in Check:")
    assert result.state["out"] == f"failed: {[error]}"
    call = result.summary[1]
    assert call.subgraph is not None and [e.success for e in call.subgraph] == [True, False]


def test_other_file_subgraph_with_a_single_output_gets_the_childs_whole_state(write_csv: WriteCsv) -> None:
    write_csv(
        'GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nLib,Shout,template,"{text}!!",text,loud\n',
        name="lib/other.csv",
    )
    main = write_csv(
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field\n"
        'Main,Call,graph,"{""workflow"": ""lib/other.csv::Lib""}",text=msg,result\n'
    )
    result = agentmap.run(main, {"msg": "hey"})
    assert result.state["result"] == {"text": "hey", "loud": "hey!!"}


def test_other_file_with_one_graph_needs_no_selector(write_csv: WriteCsv) -> None:
    write_csv('GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nLib,Up,template,"{t}?",t,q\n', name="lib.csv")
    main = write_csv(
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field\nM,Call,graph,{workflow=lib.csv},t,q=q\n"
    )
    assert agentmap.run(main, {"t": "why"}).state["q"] == "why?"


@pytest.mark.parametrize(
    ("context", "needle"),
    [
        ("", 'a graph node needs Context {"workflow": "::GraphName"}'),
        ("{workflow=::Nope}", "has no graph 'Nope'"),
        ("{workflow=missing.csv::G}", "does not exist"),
        ("{workflow=::Outer}", "contains itself through graph nodes (a cycle)"),
    ],
)
def test_bad_references_are_config_errors_at_the_context_cell(write_csv: WriteCsv, context: str, needle: str) -> None:
    path = write_csv(f"GraphName,Node,AgentType,Config\nOuter,Call,graph,{context}\n")
    issues = agentmap.validate(path)
    assert [(i.row, i.column, i.code) for i in issues] == [(2, "Config", "bad-config")]
    assert needle in issues[0].message


def test_a_missing_subgraph_file_is_named_as_written_with_the_few_nearest(write_csv: WriteCsv) -> None:
    for name in ("hello_world", "parallel", "branching", "trip_planner", "summary"):
        write_csv("GraphName,Node,AgentType\nG,A,echo\n", name=f"lib/{name}.csv")
    for cell, expected in (
        ("lib/helo_world.csv", "subgraph file 'lib/helo_world.csv' does not exist; did you mean 'lib/hello_world."),
        ("lib/zzz.csv", "subgraph file 'lib/zzz.csv' does not exist; the nearest names in 'lib': "),
        ("nope/a.csv", "subgraph file 'nope/a.csv' does not exist: there is no folder 'nope' next to the workflow"),
    ):
        path = write_csv(f"GraphName,Node,AgentType,Context\nOuter,Call,graph,{{workflow={cell}::G}}\n")
        (issue,) = agentmap.validate(path)
        assert issue.message.startswith(expected), issue.message
        assert str(path.parent) not in issue.message
        assert issue.message.count(".csv'") <= 4  # the few nearest, not every file of the folder


def test_an_indirect_cycle_through_another_file_is_found(write_csv: WriteCsv) -> None:
    write_csv("GraphName,Node,AgentType,Context\nB,Back,graph,{workflow=a.csv::A}\n", name="b.csv")
    a = write_csv("GraphName,Node,AgentType,Context\nA,Go,graph,{workflow=b.csv::B}\n", name="a.csv")
    (issue,) = agentmap.validate(a)
    assert issue.code == "bad-config" and "(a cycle)" in issue.message


def test_a_subgraph_in_another_folder_finds_the_parents_configured_functions_folder(
    write_csv: WriteCsv, tmp_path: Path
) -> None:
    routers = tmp_path / "shared_routers"
    routers.mkdir()
    (routers / "pick.py").write_text("def pick(state, success, failure):\n    return 'B'\n", encoding="utf-8")
    write_csv(
        "GraphName,Node,AgentType,Prompt,Output_Field,Edge\nLib,A,success,,a,func:pick\nLib,B,success,b!,b,\n",
        name="lib/child.csv",
    )
    main = write_csv(
        'GraphName,Node,AgentType,Context,Output_Field\nMain,Call,graph,"{""workflow"": ""lib/child.csv""}",b=b\n'
    )
    result = agentmap.run(main, {}, functions_dir=routers)
    assert result.success is True
    assert result.state["b"] == "b!"
    assert [e.name for e in result.summary[0].subgraph or []] == ["A", "B"]
