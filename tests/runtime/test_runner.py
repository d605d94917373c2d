"""CompiledWorkflow: invoke/ainvoke/stream/astream/batch/abatch, config passthrough, checkpoints, interrupts."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from timing import scaled

import agentmap
from agentmap import BaseAgent, ConfigError, NodeError
from agentmap.runtime.events import RunHooks

WriteCsv = Callable[..., Path]

FLOW = """
GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
Flow,Greet,template,"Hello, {name}!",name,greeting,,Check,
Flow,Check,branching,,ok,verdict,,Done,Sorry
Flow,Done,success,done,,status,,,
Flow,Sorry,failure,not ok,,,,,
"""


@pytest.fixture
def app(write_csv: WriteCsv) -> agentmap.CompiledWorkflow:
    return agentmap.compile(write_csv(FLOW))


def test_invoke_returns_state_success_and_summary(app: agentmap.CompiledWorkflow) -> None:
    result = app.invoke({"name": "Ada", "ok": "yes", "extra": [1]})
    assert result.success is True
    assert result.state["greeting"] == "Hello, Ada!"
    assert result.state["status"] == "done"
    assert result.state["extra"] == [1]  # keys the graph does not use are kept
    assert result.state["graph_success"] is True
    assert [e.name for e in result.summary] == ["Greet", "Check", "Done"]
    assert result.errors == [] and result.failed_nodes == []
    data = result.to_dict()
    assert data["success"] is True and [s["name"] for s in data["summary"]] == ["Greet", "Check", "Done"]


class _Buffering(RunHooks):
    """Run hooks that buffer, as a tracer's exporter does."""

    def __init__(self) -> None:
        self.flushed = 0

    def flush(self) -> None:
        self.flushed += 1


def test_flush_has_the_buffering_observers_send_what_they_hold(app: agentmap.CompiledWorkflow) -> None:
    observer = _Buffering()
    app.observers.append(observer)
    app.flush()
    assert observer.flushed == 1


def test_a_failure_takes_failure_next_and_the_run_fails(app: agentmap.CompiledWorkflow) -> None:
    result = app.invoke({"name": "Ada", "ok": "no"})
    assert result.success is False
    assert [e.name for e in result.summary] == ["Greet", "Check", "Sorry"]
    assert result.failed_nodes == ["Check", "Sorry"]
    assert result.errors == ["Error in Check: ok='no' is a failure value", "Error in Sorry: not ok"]
    assert "status" not in result.state


def test_initial_state_must_be_a_dict(app: agentmap.CompiledWorkflow) -> None:
    with pytest.raises(ConfigError) as info:
        app.invoke(["name"])  # type: ignore[arg-type]
    assert info.value.code == "bad-state"
    assert "must be a dict" in info.value.message


def test_a_state_without_an_input_no_node_writes_is_refused_naming_the_key(
    app: agentmap.CompiledWorkflow, write_csv: WriteCsv, caplog: pytest.LogCaptureFixture
) -> None:
    for run in (lambda: app.invoke(), lambda: list(app.stream({"nmae": "Ada", "ok": "yes"})), lambda: app.batch([{}])):
        with pytest.raises(ConfigError) as info:
            run()
        assert info.value.code == "missing-state" and "'name', read by node 'Greet'" in info.value.message
    with pytest.raises(ConfigError, match="did you mean 'name'"):
        app.invoke({"nmae": "Ada", "ok": "yes"})
    lenient = agentmap.compile(write_csv(FLOW), missing_inputs="warn")
    with caplog.at_level("WARNING", logger="agentmap.runtime"):
        result = lenient.invoke()  # the older behaviour, asked for: the nodes read None
    assert result.state["greeting"] == "Hello, None!" and result.failed_nodes == ["Check", "Sorry"]
    assert any("the initial state has no 'name'" in r.getMessage() for r in caplog.records)
    assert agentmap.compile(write_csv(FLOW), missing_inputs="ignore").invoke().state["greeting"] == "Hello, None!"
    with pytest.raises(ConfigError, match="missing_inputs must be one of error, warn, ignore"):
        agentmap.compile(write_csv(FLOW), missing_inputs="loud")  # type: ignore[arg-type]


def test_a_node_with_a_context_default_needs_no_input_and_a_saved_thread_counts(write_csv: WriteCsv) -> None:
    flow = write_csv(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
        'G,Ask,input,"Name for {who}?","{""default"": ""Ada""}",who,name,Greet\n'
        'G,Greet,template,"Hello, {name} and {friend}!",,name|friend,greeting,\n'
    )
    app = agentmap.compile(flow, checkpointer=InMemorySaver())
    with pytest.raises(ConfigError, match="no 'friend', read by node 'Greet'") as info:
        app.invoke({})
    assert "'who'" not in info.value.message  # read only by a node with a default
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    assert app.invoke({"friend": "Bo"}, config).state["greeting"] == "Hello, Ada and Bo!"
    assert app.invoke({}, config).success  # the thread's saved values hold a friend


def test_the_graph_of_a_compiled_workflow_embedded_in_langgraph_takes_a_partial_state(app: Any) -> None:
    assert app.graph.invoke({"ok": "yes"})["greeting"] == "Hello, None!"  # LangGraph's rules, unchecked


async def test_ainvoke_matches_invoke(app: agentmap.CompiledWorkflow) -> None:
    state = {"name": "Ada", "ok": "yes"}
    sync, other = app.invoke(state), await app.ainvoke(state)
    assert other.state == sync.state
    assert [e.name for e in other.summary] == [e.name for e in sync.summary]


def test_stream_yields_one_update_per_node(app: agentmap.CompiledWorkflow) -> None:
    chunks = list(app.stream({"name": "Ada", "ok": "yes"}))
    assert [next(iter(c)) for c in chunks] == ["Greet", "Check", "Done"]
    assert chunks[0]["Greet"] == {"greeting": "Hello, Ada!", "last_action_success": True}
    values = list(app.stream({"name": "Ada", "ok": "yes"}, stream_mode="values"))
    assert values[-1]["status"] == "done"


async def test_astream_yields_one_update_per_node(app: agentmap.CompiledWorkflow) -> None:
    names = [next(iter(c)) async for c in app.astream({"name": "Ada", "ok": "no"})]
    assert names == ["Greet", "Check", "Sorry"]


def test_stream_with_a_tracker_records_the_summary(app: agentmap.CompiledWorkflow) -> None:
    heard: list[tuple[str, bool | None]] = []

    class Heard(RunHooks):
        def node_started(self, run: agentmap.RunInfo, node: agentmap.NodeExecution) -> None:
            heard.append((node.name, node.success))

        node_ended = node_started

    tracker = app.new_tracker()
    for _ in app.stream({"name": "Ada", "ok": "yes"}, tracker=tracker, hooks=[Heard()]):
        pass
    assert [e.name for e in tracker.summary] == ["Greet", "Check", "Done"]
    assert heard[:2] == [("Greet", None), ("Greet", True)]


def test_batch_runs_each_state_with_its_own_summary(app: agentmap.CompiledWorkflow) -> None:
    results = app.batch([{"name": "A", "ok": "yes"}, {"name": "B", "ok": "no"}])
    assert [r.success for r in results] == [True, False]
    assert [r.state["greeting"] for r in results] == ["Hello, A!", "Hello, B!"]
    assert [len(r.summary) for r in results] == [3, 3]


def test_a_batch_of_a_workflow_that_only_computes_runs_in_the_calling_thread(write_csv: WriteCsv) -> None:
    path = write_csv(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        "G,Greet,template,Hello {name},name,greeting,Echo\nG,Echo,echo,,greeting,echoed,\n"
    )
    states = [{"name": str(i)} for i in range(20)]
    for fuse in (False, True):
        app = agentmap.compile(path, fuse=fuse)
        assert app.computes_only
        threads: set[int] = set()
        results = app.batch(states, {"callbacks": [_ThreadSeen(threads)]})
        assert threads == {threading.get_ident()}
        assert [r.state for r in results] == [app.invoke(s).state for s in states]
        assert all(r.success and len(r.summary) == 2 for r in results)


class _ThreadSeen(BaseCallbackHandler):
    """Notes the thread each node starts in."""

    def __init__(self, threads: set[int]) -> None:
        self.threads = threads

    def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        self.threads.add(threading.get_ident())


def test_a_batch_with_an_agent_that_may_wait_runs_its_states_concurrently(write_csv: WriteCsv) -> None:
    barrier = threading.Barrier(4, timeout=scaled(10))

    class Meet(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            barrier.wait()  # passes only when four states run at once
            return inputs["name"]

    type_name = f"meet_{uuid.uuid4().hex[:8]}"
    agentmap.agent(type_name)(Meet)
    path = write_csv(f"GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Meet,{type_name},name,met\n")
    app = agentmap.compile(path)
    assert not app.computes_only
    results = app.batch([{"name": str(i)} for i in range(4)])
    assert [r.state["met"] for r in results] == ["0", "1", "2", "3"]


async def test_abatch_runs_each_state_with_its_own_summary(app: agentmap.CompiledWorkflow) -> None:
    results = await app.abatch([{"name": "A", "ok": "no"}, {"name": "B", "ok": "yes"}])
    assert [r.success for r in results] == [False, True]
    assert [r.failed_nodes for r in results] == [["Check", "Sorry"], []]


def test_concurrent_invokes_on_one_workflow_do_not_mix_summaries(app: agentmap.CompiledWorkflow) -> None:
    results: dict[int, agentmap.RunResult] = {}
    barrier = threading.Barrier(6)

    def go(i: int) -> None:
        barrier.wait()
        results[i] = app.invoke({"name": str(i), "ok": "yes" if i % 2 else "no"})

    threads = [threading.Thread(target=go, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, result in results.items():
        assert result.state["greeting"] == f"Hello, {i}!"
        assert [e.name for e in result.summary][-1] == ("Done" if i % 2 else "Sorry")
        assert len(result.summary) == 3


def test_recursion_limit_becomes_a_clear_node_error(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv("GraphName,Node,Edge\nLoop,Ping,Pong\nLoop,Pong,Ping\n"))
    with pytest.raises(NodeError) as info:
        app.invoke({}, {"recursion_limit": 7})
    err = info.value
    assert err.code == "recursion-limit"
    assert "recursion limit (7 steps)" in err.message
    assert '{"recursion_limit": 28}' in (err.hint or "")  # four times the limit it met
    with pytest.raises(NodeError, match="recursion limit"):
        list(app.stream({}, {"recursion_limit": 4}))


class _NodeCounter(RunHooks):
    def __init__(self) -> None:
        self.started = 0

    def node_started(self, run: Any, node: Any) -> None:
        self.started += 1


@pytest.mark.parametrize("size", [2, 12])
def test_a_loop_without_an_exit_stops_after_ten_steps_per_node_and_at_least_fifty(
    write_csv: WriteCsv, size: int
) -> None:
    rows = "".join(f"Loop,N{i},echo,N{(i + 1) % size}\n" for i in range(size))
    app = agentmap.compile(write_csv("GraphName,Node,AgentType,Edge\n" + rows))
    limit = max(50, 10 * size)  # the derivation csv_specs/cli.md documents (--recursion-limit)
    counter = _NodeCounter()
    with pytest.raises(NodeError) as info:
        app.invoke({}, hooks=[counter])
    assert counter.started == limit  # one node a step: the run stopped at the graph's limit, not LangGraph's 10,007
    assert info.value.code == "recursion-limit" and f"recursion limit ({limit} steps)" in info.value.message
    assert f"`--recursion-limit {4 * limit}`" in (info.value.hint or "")
    for way in (lambda: list(app.stream({})), lambda: app.batch([{}, {}])):
        with pytest.raises(NodeError, match=rf"recursion limit \({limit} steps\)"):
            way()
    with pytest.raises(NodeError, match=r"recursion limit \(3 steps\)"):
        app.invoke({}, {"recursion_limit": 3})  # a limit given still wins


async def test_an_async_run_has_the_same_default_limit(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv("GraphName,Node,AgentType,Edge\nLoop,A,echo,B\nLoop,B,echo,A\n"))
    with pytest.raises(NodeError, match=r"recursion limit \(50 steps\)"):
        await app.ainvoke({})
    with pytest.raises(NodeError, match=r"recursion limit \(50 steps\)"):
        _ = [chunk async for chunk in app.astream({})]


class _Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.started: list[str] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.started.append(str(kwargs.get("name")))


def test_callbacks_in_config_receive_node_events(app: agentmap.CompiledWorkflow) -> None:
    recorder = _Recorder()
    app.invoke({"name": "Ada", "ok": "yes"}, {"callbacks": [recorder]})
    assert {"Greet", "Check", "Done"} <= set(recorder.started)


def test_checkpointer_keeps_state_per_thread(write_csv: WriteCsv) -> None:
    path = write_csv(
        'GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nG,Greet,template,"Hi {name}",name,greeting\n'
    )
    app = agentmap.compile(path, checkpointer=InMemorySaver())
    one: RunnableConfig = {"configurable": {"thread_id": "one"}}
    two: RunnableConfig = {"configurable": {"thread_id": "two"}}
    app.invoke({"name": "Ada"}, one)
    app.invoke({"name": "Bob"}, two)
    assert app.graph.get_state(one).values["greeting"] == "Hi Ada"
    assert app.graph.get_state(two).values["greeting"] == "Hi Bob"
    assert "__agentmap_tracker" not in str(app.graph.get_state(one).metadata)


def test_sqlite_checkpointer_round_trips_through_a_real_file(write_csv: WriteCsv, tmp_path: Path) -> None:
    sqlite = pytest.importorskip("langgraph.checkpoint.sqlite")
    path = write_csv('GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nG,Greet,template,"Hi {name}",name,g\n')
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    with sqlite.SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        agentmap.compile(path, checkpointer=saver).invoke({"name": "Ada"}, config)
    with sqlite.SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        state = agentmap.compile(path, checkpointer=saver).graph.get_state(config)
    assert state.values["g"] == "Hi Ada"


class _SyncAsk(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        self.record_metadata(asked=inputs["question"])
        return interrupt({"question": inputs["question"]})


class _AsyncAsk(BaseAgent):
    async def process(self, inputs: dict[str, Any]) -> Any:
        self.record_metadata(asked=inputs["question"])
        return interrupt({"question": inputs["question"]})


@pytest.mark.parametrize("cls", [_SyncAsk, _AsyncAsk])
@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
async def test_interrupt_in_a_custom_agent_pauses_and_resumes(
    write_csv: WriteCsv, cls: type[BaseAgent], use_async: bool
) -> None:
    type_name = f"ask_{uuid.uuid4().hex[:8]}"
    agentmap.agent(type_name)(cls)
    path = write_csv(
        f"GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        f"G,Ask,{type_name},,question,answer,Show\nG,Show,template,You said {{answer}},answer,shown,\n"
    )
    app = agentmap.compile(path, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "chat"}}

    async def call(state: Any) -> agentmap.RunResult:
        return await app.ainvoke(state, config) if use_async else app.invoke(state, config)

    paused = await call({"question": "Your name?"})
    assert [i.value for i in paused.interrupts] == [{"question": "Your name?"}]
    assert "answer" not in paused.state and paused.errors == []
    assert [(e.name, e.success, e.metadata) for e in paused.summary] == [
        ("Ask", None, {"asked": "Your name?", "paused": True})  # the node waiting for the answer
    ]
    resumed = await call(Command(resume="Ada"))
    assert resumed.interrupts == ()
    assert resumed.state["shown"] == "You said Ada"
    assert resumed.success is True and resumed.errors == []


def test_bad_success_policy_is_refused_at_compile(write_csv: WriteCsv) -> None:
    with pytest.raises(ValueError, match="unknown success policy 'most'"):
        agentmap.compile(write_csv("GraphName,Node\nG,A\n"), success_policy="most")  # type: ignore[arg-type]


def test_draw_mermaid_and_repr(app: agentmap.CompiledWorkflow) -> None:
    text = app.draw_mermaid()
    assert all(name in text for name in ("Greet", "Check", "Done", "Sorry"))
    assert repr(app).startswith("<CompiledWorkflow 'Flow': 4 nodes from ")
    assert app.name == "Flow"
