"""OpenTelemetry spans of runs, checked with an in-memory exporter: the tree, the attributes, the failures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import agentmap
from agentmap.observe import tracing_from_settings

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "graphs"


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _tree(finished: tuple[ReadableSpan, ...]) -> dict[str, list[str]]:
    """Each span's name -> the names of its children, in start order."""
    by_id = {s.context.span_id: s for s in finished}
    children: dict[str, list[str]] = {s.name: [] for s in finished}
    for span in sorted(finished, key=lambda s: s.start_time or 0):
        if span.parent is not None and span.parent.span_id in by_id:
            children[by_id[span.parent.span_id].name].append(span.name)
    return children


def _named(finished: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    return next(s for s in finished if s.name == name)


def _attrs(finished: tuple[ReadableSpan, ...], name: str) -> dict[str, Any]:
    """The attributes of the span called `name` (values typed loosely: the tests know what each holds)."""
    attributes = _named(finished, name).attributes
    assert attributes is not None
    return dict(attributes)


def test_parallel_branches_are_siblings_under_one_run(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    result = agentmap.compile(GRAPHS / "parallel.csv", tracing=provider).invoke({"city": "Lisbon"})
    assert result.success
    finished = exporter.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1
    tree = _tree(finished)
    assert sorted(tree["agentmap.run Briefing"]) == sorted(
        f"agentmap.node {n}" for n in ("Start", "Weather", "News", "Agenda", "Join")
    )
    run = _named(finished, "agentmap.run Briefing")
    assert run.parent is None and run.attributes is not None
    assert run.attributes["agentmap.success"] is True and run.attributes["agentmap.graph"] == "Briefing"
    news = _attrs(finished, "agentmap.node News")
    assert news is not None
    assert news["agentmap.csv.row"] == 4 and news["agentmap.agent_type"] == "template"
    assert news["agentmap.workflow.file"].endswith("parallel.csv") and news["agentmap.node.attempt"] == 1
    assert "agentmap.node.inputs" not in news  # no state values unless content is asked for


def test_subgraph_runs_nest_under_their_node(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    app = agentmap.compile(GRAPHS / "subgraph.csv::Main", tracing=provider, state_keys=["first", "last"])
    assert app.invoke({"first": "Ada", "last": "Lovelace"}).success
    tree = _tree(exporter.get_finished_spans())
    assert tree["agentmap.run Main"] == ["agentmap.node Prepare", "agentmap.node Greet", "agentmap.node Decorate"]
    assert tree["agentmap.node Greet"] == ["agentmap.run HelloWorld"]
    assert tree["agentmap.run HelloWorld"] == ["agentmap.node Greet", "agentmap.node Finish"]
    assert tree["agentmap.node Decorate"] == ["agentmap.run Frame"]


def test_llm_node_with_a_tool_loop(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    app = agentmap.compile(GRAPHS / "llm_offline.csv", tracing=provider, state_keys=["request"])
    assert app.invoke({"request": "please title case hello world"}).success
    finished = exporter.get_finished_spans()
    tree = _tree(finished)
    assert tree["agentmap.node Assistant"] == ["chat offline", "execute_tool title_case", "chat offline"]
    assert tree["agentmap.node Count"] == ["execute_tool word_count"]
    chat = _attrs(finished, "chat offline")
    assert chat is not None
    assert chat["gen_ai.operation.name"] == "chat" and chat["gen_ai.request.model"] == "offline"
    assert chat["gen_ai.usage.input_tokens"] > 0 and chat["gen_ai.usage.output_tokens"] > 0
    assert "gen_ai.input.messages" not in chat  # prompts only with content tracing
    tool = _attrs(finished, "execute_tool title_case")
    assert tool is not None and tool["gen_ai.tool.name"] == "title_case" and "gen_ai.tool.call.result" not in tool


def test_content_tracing_puts_values_and_prompts_in_spans(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    tracing = agentmap.observe.resolve_tracing(provider, content=True)
    app = agentmap.compile(GRAPHS / "llm_offline.csv", tracing=tracing, state_keys=["request"])
    app.invoke({"request": "please title case hello world"})
    finished = exporter.get_finished_spans()
    chat = _attrs(finished, "chat offline")
    assert chat is not None and "please title case hello world" in chat["gen_ai.input.messages"]
    assert "Hello World" in _attrs(finished, "execute_tool title_case")["gen_ai.tool.call.result"]
    assert json.loads(_attrs(finished, "agentmap.node Count")["agentmap.node.inputs"]) == {
        "text": "please title case hello world"
    }


def test_a_failing_node_is_an_error_span(spans: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path) -> None:
    provider, exporter = spans

    @agentmap.agent("observe_boom")
    class Boom(agentmap.BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            raise KeyError("no such account")

    csv = tmp_path / "fail.csv"
    csv.write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Success_Next,Failure_Next\n"
        "G,Charge,observe_boom,,amount,receipt,Done,Explain\n"
        "G,Done,echo,,receipt,out,,\n"
        "G,Explain,echo,,errors,out,,\n",
        encoding="utf-8",
    )
    result = agentmap.compile(csv, tracing=provider).invoke({"amount": 3})
    assert result.failed_nodes == ["Charge"]
    finished = exporter.get_finished_spans()
    charge = _named(finished, "agentmap.node Charge")
    assert charge.status.status_code is StatusCode.ERROR and "no such account" in (charge.status.description or "")
    assert charge.attributes is not None and charge.attributes["error.type"] == "KeyError"
    assert charge.attributes["agentmap.success"] is False and charge.attributes["agentmap.handled"] is True
    run = _named(finished, "agentmap.run G")  # Explain, Charge's Failure_Next, handles the failure
    assert run.status.status_code is not StatusCode.ERROR and run.attributes is not None
    assert run.attributes["agentmap.success"] is True
    assert _tree(finished)["agentmap.run G"] == ["agentmap.node Charge", "agentmap.node Explain"]


def test_orchestrator_trace_events_become_span_events(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    state = json.loads((GRAPHS / "trip_planner.state.json").read_text(encoding="utf-8"))
    app = agentmap.compile(GRAPHS / "trip_planner.csv", tracing=provider, state_keys=list(state))
    assert app.invoke(state).success
    finished = exporter.get_finished_spans()
    node = _named(finished, "agentmap.node plan_trip")
    assert node.attributes is not None
    trace_id = node.attributes["agentmap.trace_id"]
    names = [e.name for e in node.events]
    assert "plan:received" in names and "step:complete" in names and names[-1] == "orchestrate:complete"
    assert all(e.attributes is not None and e.attributes["trace_id"] == trace_id for e in node.events)
    assert node.start_time is not None and all(node.start_time - 10**9 <= e.timestamp for e in node.events)
    assert {"execute_tool search_flights", "execute_tool search_hotels"} <= set(
        _tree(finished)["agentmap.node plan_trip"]
    )


def test_an_installed_tracer_provider_traces_without_asking(
    spans: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, exporter = spans
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    agentmap.compile(GRAPHS / "hello_world.csv").invoke({"name": "Ada"})
    assert [s.name for s in exporter.get_finished_spans()][-1] == "agentmap.run HelloWorld"


def test_stream_and_thread_id_are_traced(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    app = agentmap.compile(GRAPHS / "hello_world.csv", tracing=provider, checkpointer="memory")
    list(app.stream({"name": "Ada"}, {"configurable": {"thread_id": "t-7"}}))
    run = _named(exporter.get_finished_spans(), "agentmap.run HelloWorld")
    assert run.attributes is not None and run.attributes["agentmap.thread_id"] == "t-7"


def test_settings_choose_the_exporter(tmp_path: Path) -> None:
    assert tracing_from_settings(None) is None
    assert tracing_from_settings({"tracing": {"exporter": None}}) is None
    spans_file = tmp_path / "spans.jsonl"
    tracing = tracing_from_settings({"tracing": {"exporter": f"file:{spans_file}", "content": True}})
    assert tracing is not None and tracing.content is True
    agentmap.compile(GRAPHS / "hello_world.csv", tracing=tracing).invoke({"name": "Ada"})
    tracing.flush()
    names = [json.loads(line)["name"] for line in spans_file.read_text(encoding="utf-8").splitlines()]
    assert names == ["agentmap.node Greet", "agentmap.node Finish", "agentmap.run HelloWorld"]
    with pytest.raises(agentmap.AgentMapError, match="unknown trace exporter"):
        tracing_from_settings(None, "zipkin")


class _Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.runs: dict[UUID, tuple[str, UUID | None]] = {}

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self.runs[run_id] = (str(kw.get("name") or (serialized or {}).get("name")), parent_run_id)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self.runs[run_id] = ("chat-model", parent_run_id)

    def on_tool_start(
        self, serialized: Any, input_str: str, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self.runs[run_id] = (f"tool:{(serialized or {}).get('name')}", parent_run_id)

    def ancestors(self, run_id: UUID) -> list[str]:
        names, parent = [], self.runs[run_id][1]
        while parent is not None and parent in self.runs:
            names.append(self.runs[parent][0])
            parent = self.runs[parent][1]
        return names


def test_langchain_callbacks_see_nested_runs() -> None:
    """LangSmith (or any LangChain callback handler) sees model and tool calls nested in their node and graph."""
    recorder = _Recorder()
    app = agentmap.compile(GRAPHS / "llm_offline.csv", state_keys=["request"])
    app.invoke({"request": "please title case hello world"}, {"callbacks": [recorder]})
    model_runs = [run_id for run_id, (name, _) in recorder.runs.items() if name == "chat-model"]
    tool_runs = [run_id for run_id, (name, _) in recorder.runs.items() if name == "tool:title_case"]
    assert len(model_runs) == 2 and len(tool_runs) == 1
    for run_id in [*model_runs, *tool_runs]:
        ancestry = recorder.ancestors(run_id)
        assert ancestry[0] == "Assistant" and ancestry[-1] == "LLMOfflineDemo"


def test_batch_runs_are_traced_one_run_each(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    app = agentmap.compile(GRAPHS / "hello_world.csv", tracing=provider)
    results = app.batch([{"name": "Ada"}, {"name": "Grace"}])
    assert [r.state["greeting"] for r in results] == ["Hello, Ada!", "Hello, Grace!"]
    runs = [s for s in exporter.get_finished_spans() if s.name == "agentmap.run HelloWorld"]
    assert len(runs) == 2 and len({s.context.trace_id for s in runs}) == 2


def test_a_paused_run_ends_its_open_node_span_and_draws_it_amber(
    spans: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    from langgraph.types import interrupt

    @agentmap.agent("observe_ask")
    class Ask(agentmap.BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            return interrupt({"question": "Your name?"})

    csv = tmp_path / "ask.csv"
    csv.write_text("GraphName,Node,AgentType,Output_Field,Edge\nG,Ask,observe_ask,answer,Show\nG,Show,echo,out,\n")
    provider, exporter = spans
    app = agentmap.compile(csv, tracing=provider, checkpointer="memory")
    paused = app.invoke({}, {"configurable": {"thread_id": "t"}})
    assert paused.interrupts
    finished = exporter.get_finished_spans()
    ask = _attrs(finished, "agentmap.node Ask")
    run = _attrs(finished, "agentmap.run G")
    assert ask is not None and ask["agentmap.paused"] is True and run is not None and run["agentmap.paused"] is True
    assert 'class="node paused" data-node="Ask"' in paused.draw() and "run paused" in paused.draw()


def test_a_request_parent_context_becomes_a_link() -> None:
    from agentmap.observe.tracing import _describe
    from agentmap.runtime.tracking import NodeExecution

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    parent = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    execution = NodeExecution("Work", 1.0, 2.0, 1.0, success=True)
    execution.facts["parent_contexts"] = [{"traceparent": parent, "orchestrator": "boss"}, {"task": "no link"}]
    span = provider.get_tracer("t").start_span("agentmap.node Work")
    _describe(span, execution, content=False)
    span.end()
    (link,) = exporter.get_finished_spans()[0].links
    assert f"{link.context.trace_id:032x}" == "ab" * 16 and f"{link.context.span_id:016x}" == "cd" * 8
    assert link.attributes is not None and link.attributes["orchestrator"] == "boss"


def test_orchestrator_step_requests_carry_the_span_that_made_them(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    state = json.loads((GRAPHS / "trip_planner.state.json").read_text(encoding="utf-8"))
    app = agentmap.compile(GRAPHS / "trip_planner.csv", tracing=provider, state_keys=list(state))
    planner = app.agents["trip_planner"].protocol  # type: ignore[attr-defined]
    original, seen = planner.process, []

    async def recording(request: Any) -> Any:
        seen.append(request.metadata.parent_context)
        return await original(request)

    planner.process = recording
    assert app.invoke(state).success
    node = _named(exporter.get_finished_spans(), "agentmap.node plan_trip")
    assert seen and seen[0]["orchestrator"] == "plan_trip"
    assert seen[0]["traceparent"].startswith(f"00-{node.context.trace_id:032x}-{node.context.span_id:016x}-")
