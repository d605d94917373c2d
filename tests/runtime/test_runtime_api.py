"""load / validate / compile / run: selectors, one parser for validate and compile, and file-level errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentmap
from agentmap import ConfigError, GraphNotFoundError, WorkflowFileError, WorkflowValidationError
from agentmap.agents.questions import question
from agentmap.runtime.api import select_graph
from agentmap.spec.loader import read_workflow

WriteCsv = Callable[..., Path]

TWO_GRAPHS = """
GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field
Greeting,Hello,template,"Hello, {name}!",name,greeting
Farewell,Bye,template,"Bye, {name}!",name,farewell
"""


def test_load_reads_and_validates_every_graph(write_csv: WriteCsv) -> None:
    workflow = agentmap.load(write_csv(TWO_GRAPHS))
    assert workflow.graph_names == ["Greeting", "Farewell"]


def test_load_raises_with_every_error_of_every_graph(write_csv: WriteCsv) -> None:
    path = write_csv("GraphName,Node,AgentType,Edge\nA,One,nope,\nB,Two,echo,Nowhere\n")
    with pytest.raises(WorkflowValidationError) as info:
        agentmap.load(path)
    err = info.value
    assert [(i.row, i.code) for i in err.issues] == [(2, "unknown-agent-type"), (3, "unknown-target")]
    lines = str(err).splitlines()
    assert lines[0] == f"2 validation errors in {path}:"
    assert lines[1].startswith(f"  {path}:2:AgentType: error[unknown-agent-type]: unknown agent type 'nope'")
    assert lines[2].startswith(f"  {path}:3:Edge: error[unknown-target]")


def test_load_not_strict_returns_the_workflow_validate_reports_on(write_csv: WriteCsv) -> None:
    path = write_csv("GraphName,Node,AgentType,Edge\nA,One,nope,\nB,Two,echo,Nowhere\n")
    workflow = agentmap.load(path, strict=False)
    assert workflow.graph_names == ["A", "B"]
    assert [(i.node, i.code) for i in agentmap.validate(workflow)] == [
        ("One", "unknown-agent-type"),
        ("Two", "unknown-target"),
    ]
    with pytest.raises(WorkflowFileError):
        agentmap.load(path.with_name("missing.csv"), strict=False)


def test_compile_selects_a_graph_by_suffix_or_argument_in_any_case(write_csv: WriteCsv) -> None:
    path = write_csv(TWO_GRAPHS)
    assert agentmap.compile(f"{path}::Farewell").invoke({"name": "Ada"}).state["farewell"] == "Bye, Ada!"
    assert agentmap.compile(path, "greeting").name == "Greeting"
    assert agentmap.run(path, {"name": "Bo"}, graph="Farewell").state["farewell"] == "Bye, Bo!"


def test_several_graphs_and_none_named_lists_them(write_csv: WriteCsv) -> None:
    path = write_csv(TWO_GRAPHS)
    with pytest.raises(GraphNotFoundError) as info:
        agentmap.compile(path)
    err = info.value
    assert err.code == "graph-not-selected"
    assert "holds 2 graphs (Greeting, Farewell); say which to use" in err.message
    assert err.hint == (
        f"append ::GraphName to the path; run one of them with:\n  agentmap run {path}::Greeting"
        f"\n  agentmap run {path}::Farewell"
    )


def test_unknown_graph_lists_the_graphs_and_suggests_one(write_csv: WriteCsv) -> None:
    path = write_csv(TWO_GRAPHS)
    with pytest.raises(GraphNotFoundError) as info:
        agentmap.compile(f"{path}::Farewel")
    assert info.value.code == "graph-not-found"
    assert "has no graph 'Farewel'; did you mean 'Farewell'? (graphs there: Greeting, Farewell)" in info.value.message
    (issue,) = agentmap.validate(f"{path}::Nothing")
    assert (issue.code, issue.file, issue.row) == ("graph-not-found", str(path), None)
    assert "(graphs there: Greeting, Farewell)" in issue.message


def test_select_graph_of_a_single_graph_needs_no_name(write_csv: WriteCsv) -> None:
    workflow, _ = read_workflow(write_csv("GraphName,Node\nOnly,A\n"))
    assert select_graph(workflow, None).name == "Only"


def test_validate_and_compile_report_the_same_findings(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        GraphName,Node,AgentType,Input_Fields,Output_Field,Edge
        G,A,echo,q,a,B|C
        G,B,echo,a,x,
        G,C,echo,a,x,
        G,D,ech,,,
        """
    )
    issues = agentmap.validate(path)
    with pytest.raises(WorkflowValidationError) as info:
        agentmap.compile(path)
    assert info.value.issues == issues
    assert [(i.severity, i.code) for i in issues] == [
        ("error", "parallel-write"),
        ("error", "unknown-agent-type"),
        ("warning", "unreachable-node"),
    ]


def test_validate_one_graph_of_several(write_csv: WriteCsv) -> None:
    path = write_csv("GraphName,Node,AgentType\nGood,A,echo\nBad,B,nope\n")
    assert agentmap.validate(path, "Good") == []
    assert agentmap.validate(f"{path}::Good") == []
    assert [i.code for i in agentmap.validate(path)] == ["unknown-agent-type"]


def test_warnings_do_not_stop_compile(write_csv: WriteCsv) -> None:
    path = write_csv("GraphName,Node,Input_Fields,Colour\nG,A,,red\nG,B,never_set,\n")
    assert {i.code for i in agentmap.validate(path)} == {"unknown-column", "unreachable-node", "unset-input"}
    assert agentmap.run(path, {"never_set": 1}).success is True


def test_compile_accepts_a_workflow_or_a_graph_spec(write_csv: WriteCsv) -> None:
    workflow = agentmap.load(write_csv(TWO_GRAPHS))
    assert agentmap.compile(workflow, "Farewell").invoke({"name": "X"}).state["farewell"] == "Bye, X!"
    spec = workflow.get("Greeting")
    assert spec is not None
    assert agentmap.compile(spec).invoke({"name": "Y"}).state["greeting"] == "Hello, Y!"
    assert agentmap.validate(workflow) == []


def test_run_keeps_initial_keys_no_node_uses(write_csv: WriteCsv) -> None:
    path = write_csv("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,A,echo,q,a\n")
    result = agentmap.run(path, {"q": 1, "session": "s1"})
    assert result.state["session"] == "s1" and result.state["a"] == {"q": 1}


def test_settings_reach_agents_through_their_environment(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv("GraphName,Node\nG,A\n"), settings={"model": "offline"})
    assert app.agents["A"].environment.settings == {"model": "offline"}


def test_functions_and_agents_folders_can_be_named(write_csv: WriteCsv, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "routes").mkdir(parents=True)
    (elsewhere / "agents").mkdir()
    (elsewhere / "routes" / "r.py").write_text("def go_right(state, ok, bad):\n    return 'Right'\n", encoding="utf-8")
    (elsewhere / "agents" / "x.py").write_text(
        "from agentmap import BaseAgent\nclass ElsewhereAgent(BaseAgent):\n"
        "    def process(self, inputs):\n        return 'from elsewhere'\n",
        encoding="utf-8",
    )
    path = write_csv("GraphName,Node,AgentType,Output_Field,Edge\nG,Start,elsewhere,out,func:go_right\nG,Right,,,\n")
    assert [i.code for i in agentmap.validate(path)] == ["unknown-agent-type", "unknown-function"]
    result = agentmap.run(path, functions_dir=elsewhere / "routes", agents_dir=elsewhere / "agents")
    assert result.state["out"] == "from elsewhere"
    assert [e.name for e in result.summary] == ["Start", "Right"]


def test_the_thread_helpers_take_the_compile_options_as_one_object(write_csv: WriteCsv, tmp_path: Path) -> None:
    from agentmap.interface import agent_for
    from agentmap.runtime.durable import open_thread
    from agentmap.runtime.threads import thread_history

    agents = tmp_path / "elsewhere"
    agents.mkdir()
    (agents / "x.py").write_text(
        "from agentmap import BaseAgent\nclass ElsewhereAgent(BaseAgent):\n"
        "    def process(self, inputs):\n        return 'from elsewhere'\n",
        encoding="utf-8",
    )
    path = write_csv("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Start,elsewhere,prompt,out\n")
    options = agentmap.CompileOptions(agents_dir=agents)
    saver = agentmap.checkpointer(str(tmp_path / "runs.db"))
    app = agentmap.compile(path, options=options.but(checkpointer=saver, state_keys=("note",)))
    assert app.invoke({"prompt": "hi"}, {"configurable": {"thread_id": "t1"}}).state["out"] == "from elsewhere"
    assert options.but(debug=True).langgraph == {"debug": True}  # LangGraph's compile keywords kept apart

    (found,) = agentmap.threads(saver, options=options)
    assert found.status == "done"  # compiled with the custom agents folder: without it the file does not compile
    assert [t.status for t in agentmap.threads(saver)] == ["unknown"]
    info, history = thread_history(saver, "t1", options=options)
    assert info.status == "done" and history
    assert open_thread(saver, "t1", options=options).status() == "done"
    assert open_thread(saver, "t1", agents_dir=agents).status() == "done"  # the keywords still work
    run_agent = agent_for(path, prompt_key="prompt", content_key="out", options=options)

    async def ask() -> dict[str, Any]:
        return await run_agent("hi")

    assert asyncio.run(ask())["content"] == "from elsewhere"
    with pytest.raises(TypeError, match="either options=CompileOptions"):
        agentmap.threads(saver, options=options, agents_dir=agents)
    with pytest.raises(TypeError, match="unexpected keyword argument 'agent_dir'"):
        open_thread(saver, "t1", agent_dir=agents)


def test_compile_options_from_settings_name_the_folders_and_the_policy(tmp_path: Path) -> None:
    from agentmap.config import load_settings

    (tmp_path / "agentmap.yaml").write_text(
        "paths:\n  custom_agents: mine\nexecution:\n  success_policy: final_node\n", encoding="utf-8"
    )
    options = agentmap.CompileOptions.from_settings(load_settings(cwd=tmp_path))
    assert Path(str(options.agents_dir)).name == "mine" and options.success_policy == "final_node"
    assert options.reading()["agents_dir"] == options.agents_dir and "success_policy" not in options.reading()


# -- file-level errors ----------------------------------------------------------------------------


def test_missing_file_suggests_the_close_name(write_csv: WriteCsv, tmp_path: Path) -> None:
    write_csv("GraphName,Node\nG,A\n", name="hello_world.csv")
    with pytest.raises(WorkflowFileError) as info:
        agentmap.compile(tmp_path / "hello_wrld.csv::G")
    assert info.value.code == "file-not-found"
    assert f"did you mean {tmp_path / 'hello_world.csv'}?" == info.value.hint
    (issue,) = agentmap.validate(tmp_path / "hello_wrld.csv")
    assert (issue.code, issue.severity) == ("file-not-found", "error")
    assert "hello_world.csv" in issue.fix


@pytest.mark.parametrize(
    ("name", "content", "code"),
    [
        ("flow.txt", b"GraphName,Node\nG,A\n", "unsupported-format"),
        ("flow.csv", b"\x00\x01\x02binary", "not-text"),
        ("flow.csv", b"GraphName,Node\nG,Caf\x81\n", "not-text"),  # neither UTF-8 nor Windows-1252
        ("flow.csv", b"", "empty-file"),
    ],
)
def test_unreadable_files_raise_and_validate_reports_them(tmp_path: Path, name: str, content: bytes, code: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(WorkflowFileError) as info:
        agentmap.compile(path)
    assert info.value.code == code
    assert [i.code for i in agentmap.validate(path)] == [code]


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(WorkflowFileError) as info:
        agentmap.load(tmp_path)
    assert info.value.code == "not-a-file"


def test_header_only_file_has_no_graphs(write_csv: WriteCsv) -> None:
    path = write_csv("GraphName,Node,AgentType\n")
    (issue,) = agentmap.validate(path)
    assert (issue.code, issue.row) == ("no-graphs", None)
    with pytest.raises(WorkflowValidationError) as info:
        agentmap.compile(path)
    assert [i.code for i in info.value.issues] == ["no-graphs"]


def test_validate_reports_broken_python_files_instead_of_raising(write_csv: WriteCsv) -> None:
    write_csv("def pick(state, ok, bad:\n", name="functions/pick.py")
    path = write_csv("GraphName,Node,next\nG,A,func:pick\n")
    (issue,) = agentmap.validate(path)
    assert (issue.row, issue.column, issue.code) == (2, "next", "unknown-function")
    write_csv("class Oops(:\n", name="custom_agents/oops.py")
    assert [i.code for i in agentmap.validate(path)] == ["unknown-function"]  # no node needs oops.py
    path = write_csv("GraphName,Node,AgentType\nG,A,oops\n")
    (issue,) = agentmap.validate(path)
    assert (issue.row, issue.column, issue.code) == (2, "AgentType", "unknown-agent-type")
    assert "oops.py" in issue.message and "paths.custom_agents" in issue.message


def test_compile_reports_every_error_of_its_graph_at_once_and_ignores_other_graphs(write_csv: WriteCsv) -> None:
    path = write_csv(
        "GraphName,Node,AgentType,Context,Success_Next\n"
        "Broken,A,ecoh,{bad,Nowhere\n"  # a bad cell (read time) and two graph findings
        "Good,B,echo,,\n"
    )
    with pytest.raises(WorkflowValidationError) as caught:
        agentmap.compile(path, "Broken")
    codes = sorted(i.code for i in caught.value.issues if i.severity == "error")
    assert codes == ["bad-context", "unknown-agent-type", "unknown-target"]
    assert agentmap.compile(path, "Good").invoke({}).success is True  # Broken's bad cell is not Good's problem


ASK = """
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
Ask,Name,input,"What is your name, {title}?","{""interrupt"": true}",title,name,Greet
Ask,Greet,template,"Hello, {name}!",,name,greeting,
"""


def test_compile_accepts_memory_as_a_checkpointer(write_csv: WriteCsv) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    app = agentmap.compile(write_csv(ASK), checkpointer="memory")
    assert isinstance(app.graph.checkpointer, InMemorySaver)
    config: Any = {"configurable": {"thread_id": "one"}}
    paused = app.invoke({"title": "sir"}, config)
    assert [i.value for i in paused.interrupts] == [question("Name", "input", "What is your name, sir?")]
    assert app.invoke(Command(resume="Ada"), config).state["greeting"] == "Hello, Ada!"


@pytest.mark.parametrize("spelling", ["{path}", "sqlite:{path}"])
def test_a_sqlite_checkpoint_file_survives_a_new_compile(write_csv: WriteCsv, tmp_path: Path, spelling: str) -> None:
    from langgraph.types import Command

    path = write_csv(ASK)
    db = tmp_path / "runs.db"
    config: Any = {"configurable": {"thread_id": "t1"}}
    first = agentmap.compile(path, checkpointer=spelling.format(path=db))
    assert first.invoke({"title": "sir"}, config).interrupts
    assert db.is_file()
    again = agentmap.compile(path, checkpointer=spelling.format(path=db))  # as a new process would
    result = again.invoke(Command(resume="Ada"), config)
    assert result.success and not result.interrupts
    assert result.state["greeting"] == "Hello, Ada!"
    assert [e.name for e in result.summary] == ["Name", "Greet"]


def test_a_checkpoint_file_in_a_missing_folder_is_a_config_error(write_csv: WriteCsv, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"folder .*missing does not exist"):
        agentmap.compile(write_csv(ASK), checkpointer=str(tmp_path / "missing" / "runs.db"))


def test_an_unknown_checkpointer_string_is_a_config_error(write_csv: WriteCsv) -> None:
    with pytest.raises(ConfigError, match="unknown checkpointer 'postgres'") as info:
        agentmap.compile(write_csv(ASK), checkpointer="postgres")
    assert "memory" in (info.value.hint or "")


def test_a_checkpointer_object_passes_through(write_csv: WriteCsv) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    assert agentmap.compile(write_csv(ASK), checkpointer=saver).graph.checkpointer is saver


def test_interrupt_mode_without_a_checkpointer_fails_the_node_saying_what_to_pass(write_csv: WriteCsv) -> None:
    result = agentmap.compile(write_csv(ASK)).invoke({"title": "sir"})
    assert not result.success and result.failed_nodes == ["Name"]
    assert 'checkpointer="memory"' in result.errors[0]


def test_compile_takes_its_options_as_one_object(write_csv: WriteCsv) -> None:
    path = write_csv(TWO_GRAPHS)
    app = agentmap.compile(path, "Greeting", options=agentmap.CompileOptions(state_keys=("note",), fuse=True))
    assert app.invoke({"name": "Ada", "note": "kept"}).state["note"] == "kept"
    with pytest.raises(TypeError, match="either options=CompileOptions"):
        agentmap.compile(path, "Greeting", fuse=True, options=agentmap.CompileOptions())
