"""The BaseAgent contract (seed 004): constructor, logging, hooks, partial updates and async agents."""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

import pytest
from pydantic import BaseModel

from agentmap.agents.base import TRACE, AgentEnvironment, BaseAgent
from agentmap.runtime.tracking import ExecutionTracker

LOG = logging.getLogger("tests.agents.base")


class Upper(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        return {k: str(v).upper() for k, v in inputs.items()}


class Boom(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        raise RuntimeError("kaput")


def _agent(cls: type[BaseAgent] = Upper, context: dict[str, Any] | None = None, **kwargs: Any) -> BaseAgent:
    kwargs.setdefault("logger", LOG)
    kwargs.setdefault("execution_tracker", ExecutionTracker())
    return cls("Node", "Say {text}", context, **kwargs)


def test_constructor_derives_attributes_from_context() -> None:
    agent = BaseAgent(
        "Writer", "Write {topic}", {"input_fields": ["topic"], "output_field": "draft", "description": "drafts"}
    )
    assert (agent.name, agent.prompt, agent.prompt_template) == ("Writer", "Write {topic}", "Write {topic}")
    assert agent.input_fields == ["topic"]
    assert agent.output_field == "draft"
    assert agent.description == "drafts"


def test_constructor_defaults() -> None:
    agent = BaseAgent("A", "")
    assert agent.context == {}
    assert agent.input_fields == []
    assert agent.output_field == "output"
    assert agent.description == ""
    assert agent.validate_config("", {}, AgentEnvironment()) == []


@pytest.mark.parametrize("method", ["log_debug", "log_info", "log_warning", "log_error", "log_trace"])
def test_logging_without_a_logger_raises_value_error(method: str) -> None:
    agent = BaseAgent("Lonely", "")
    with pytest.raises(ValueError, match="Logger not provided to agent 'Lonely'"):
        getattr(agent, method)("hello")


@pytest.mark.parametrize(
    ("method", "level"),
    [
        ("log_debug", logging.DEBUG),
        ("log_info", logging.INFO),
        ("log_warning", logging.WARNING),
        ("log_error", logging.ERROR),
        ("log_trace", logging.INFO),  # the contract: getattr(logger, "trace", logger.info)
    ],
)
def test_log_methods_prefix_the_agent_and_use_their_level(
    method: str, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    agent = _agent()
    with caplog.at_level(TRACE, logger=LOG.name):
        getattr(agent, method)("value %s", 42)
    (record,) = [r for r in caplog.records if r.name == LOG.name]
    assert record.levelno == level
    assert record.getMessage() == "[Upper:Node] value 42"
    assert getattr(record, "agentmap_trace", False) is (method == "log_trace")


def test_run_without_a_logger_raises_value_error() -> None:
    agent = Upper("A", "", execution_tracker=ExecutionTracker())
    with pytest.raises(ValueError, match="Logger not provided"):
        agent.run({})


def test_run_without_a_tracker_raises_value_error() -> None:
    agent = Upper("A", "", logger=LOG)
    with pytest.raises(ValueError, match="ExecutionTracker not provided to agent 'A'"):
        agent.run({})


def test_success_returns_only_the_output_and_the_success_flag() -> None:
    tracker = ExecutionTracker()
    agent = _agent(context={"input_fields": ["text"], "output_field": "shout"}, execution_tracker=tracker)
    update = agent.run({"text": "hi", "unrelated": 1})
    assert update == {"shout": {"text": "HI"}, "last_action_success": True}
    (entry,) = tracker.summary
    assert (entry.name, entry.success, entry.inputs, entry.result) == ("Node", True, {"text": "hi"}, {"text": "HI"})


def test_invoke_is_an_alias_of_run() -> None:
    agent = _agent(context={"input_fields": ["text"], "output_field": "shout"})
    assert agent.invoke({"text": "a"}) == agent.run({"text": "a"})


def test_a_none_output_writes_no_field() -> None:
    class Nothing(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            return None

    assert _agent(Nothing).run({}) == {"last_action_success": True}


def test_failure_returns_the_error_update_and_records_it() -> None:
    tracker = ExecutionTracker()
    agent = _agent(Boom, {"output_field": "never"}, execution_tracker=tracker)
    update = agent.run({})
    assert update == {"graph_success": False, "last_action_success": False, "errors": ["Error in Node: kaput"]}
    (entry,) = tracker.summary
    assert (entry.success, entry.error) == (False, "Error in Node: kaput")


def test_failure_reports_graph_success_under_the_trackers_policy() -> None:
    tracker = ExecutionTracker("critical_nodes", critical_nodes=["Other"])
    assert _agent(Boom, execution_tracker=tracker).run({})["graph_success"] is True


def test_process_is_abstract() -> None:
    update = _agent(BaseAgent).run({})
    assert update["errors"] == ["Error in Node: Subclasses must implement process()"]


def test_inputs_missing_from_state_read_as_none_and_renames_apply() -> None:
    class Capture(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            return inputs

    agent = _agent(Capture, {"input_fields": ["query:question", "answer=reply", "missing"]})
    assert agent.run({"query": "q?", "reply": "r"})["output"] == {"question": "q?", "answer": "r", "missing": None}


def test_inputs_are_read_from_a_pydantic_state() -> None:
    class State(BaseModel):
        text: str = "model"

    agent = _agent(context={"input_fields": ["text"]})
    assert agent.run(State())["output"] == {"text": "MODEL"}


def test_several_output_fields_take_keys_of_a_dict_result() -> None:
    class Pair(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            return {"text": "t", "score": 3, "extra": "dropped"}

    update = _agent(Pair, {"output_field": "answer=text|score"}).run({})
    assert update == {"answer": "t", "score": 3, "last_action_success": True}


def test_several_output_fields_need_a_dict_with_those_keys() -> None:
    class Wrong(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            return self.context["value"]

    not_dict = _agent(Wrong, {"output_field": "a|b", "value": "text"}).run({})
    assert "must return a dict with the keys a, b; it returned str" in not_dict["errors"][0]
    missing = _agent(Wrong, {"output_field": "a|b", "value": {"a": 1}}).run({})
    assert missing["last_action_success"] is False
    assert "has no key 'b'" in missing["errors"][0]


def test_pre_and_post_process_hooks_shape_inputs_and_output() -> None:
    class Hooked(Upper):
        def _pre_process(self, state: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
            return state, {**inputs, "added": state["extra"]}

        def _post_process(self, state: Any, inputs: dict[str, Any], output: Any) -> tuple[Any, Any]:
            return state, {"wrapped": output, "seen": sorted(inputs)}

    update = _agent(Hooked, {"input_fields": ["text"]}).run({"text": "a", "extra": "b"})
    assert update["output"] == {"wrapped": {"text": "A", "added": "B"}, "seen": ["added", "text"]}


def test_post_process_sees_the_error_update_and_may_replace_it() -> None:
    seen: list[Any] = []

    class Recover(Boom):
        def _post_process(self, state: Any, inputs: dict[str, Any], output: Any) -> tuple[Any, Any]:
            seen.append(output)
            return state, {**output, "last_action_success": False, "note": "handled"}

    update = _agent(Recover).run({})
    assert seen == [{"graph_success": False, "last_action_success": False, "errors": ["Error in Node: kaput"]}]
    assert update["note"] == "handled"


def test_a_failing_post_process_after_a_failure_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    class BadPost(Boom):
        def _post_process(self, state: Any, inputs: dict[str, Any], output: Any) -> tuple[Any, Any]:
            raise KeyError("post")

    with caplog.at_level(logging.ERROR, logger=LOG.name):
        update = _agent(BadPost).run({})
    assert update["errors"] == ["Error in Node: kaput"]
    assert "Error in post-processing: 'post'" in caplog.text


def test_context_is_never_modified() -> None:
    context = {"input_fields": ["text"], "output_field": "a|b", "nested": {"k": [1]}}
    before = copy.deepcopy(context)
    agent = _agent(Upper, context)
    agent.run({"text": "x"})  # fails: Upper returns no 'a'/'b'
    _agent(Upper, {"input_fields": ["text"], "nested": context["nested"]}).run({"text": "y"})
    assert context == before


def test_record_metadata_lands_on_the_nodes_summary_entry() -> None:
    class Meter(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            self.record_metadata(model="m1", tokens=12)
            return "ok"

    tracker = ExecutionTracker()
    _agent(Meter, execution_tracker=tracker).run({})
    assert tracker.summary[0].metadata == {"model": "m1", "tokens": 12}


class AsyncProcess(BaseAgent):
    async def process(self, inputs: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return f"async {inputs.get('text')}"


class AsyncTwin(BaseAgent):
    async def aprocess(self, inputs: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return f"twin {inputs.get('text')}"


class BothWays(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        return "sync"

    async def aprocess(self, inputs: dict[str, Any]) -> Any:
        return "async"


def test_is_async() -> None:
    assert AsyncProcess.is_async() and AsyncTwin.is_async() and BothWays.is_async()
    assert not Upper.is_async()


@pytest.mark.parametrize(("cls", "expected"), [(AsyncProcess, "async x"), (AsyncTwin, "twin x"), (BothWays, "sync")])
def test_run_drives_async_agents_to_completion(cls: type[BaseAgent], expected: str) -> None:
    update = _agent(cls, {"input_fields": ["text"]}).run({"text": "x"})
    assert update == {"output": expected, "last_action_success": True}


@pytest.mark.parametrize(
    ("cls", "expected"), [(AsyncProcess, "async x"), (AsyncTwin, "twin x"), (BothWays, "async"), (Upper, {"text": "X"})]
)
async def test_arun_awaits_async_agents_and_runs_sync_ones(cls: type[BaseAgent], expected: Any) -> None:
    update = await _agent(cls, {"input_fields": ["text"]}).arun({"text": "x"})
    assert update == {"output": expected, "last_action_success": True}


async def test_arun_failure_is_the_same_error_update() -> None:
    class AsyncBoom(BaseAgent):
        async def process(self, inputs: dict[str, Any]) -> Any:
            raise ValueError("late")

    update = await _agent(AsyncBoom).arun({})
    assert update == {"graph_success": False, "last_action_success": False, "errors": ["Error in Node: late"]}


class Pauses(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        from langgraph.errors import GraphInterrupt

        raise GraphInterrupt(())


class APauses(BaseAgent):
    async def process(self, inputs: dict[str, Any]) -> Any:
        from langgraph.errors import GraphInterrupt

        raise GraphInterrupt(())


def test_langgraph_control_flow_signals_are_not_failures() -> None:
    from langgraph.errors import GraphInterrupt

    tracker = ExecutionTracker()
    with pytest.raises(GraphInterrupt):
        _agent(Pauses, execution_tracker=tracker).run({})
    assert tracker.summary[0].success is None  # paused, neither succeeded nor failed


async def test_langgraph_control_flow_signals_pass_through_arun() -> None:
    from langgraph.errors import GraphInterrupt

    with pytest.raises(GraphInterrupt):
        await _agent(APauses).arun({})


def test_a_post_process_raising_after_success_makes_the_node_fail_once() -> None:
    class BadPost(Upper):
        calls = 0

        def _post_process(self, state: Any, inputs: dict[str, Any], output: Any) -> tuple[Any, Any]:
            BadPost.calls += 1
            if BadPost.calls == 1:
                raise ValueError("bad output")
            return state, output

    tracker = ExecutionTracker()
    update = _agent(BadPost, execution_tracker=tracker).run({})
    assert update["last_action_success"] is False
    assert update["errors"] == ["Error in Node: bad output"]
    assert [(r.name, r.success, r.error) for r in tracker.summary] == [("Node", False, "Error in Node: bad output")]


def test_a_failure_logs_its_traceback_only_when_debugging(caplog: pytest.LogCaptureFixture) -> None:
    class Boom(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            raise RuntimeError("boom")

    logger = logging.getLogger("agentmap.test.debug")
    tracker = ExecutionTracker()
    agent = Boom("B", "", {}, logger, tracker)
    with caplog.at_level(logging.WARNING, logger=logger.name):
        agent.run({})
    assert caplog.records[-1].exc_info is None
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        agent.run({})
    error = [r for r in caplog.records if r.levelno == logging.ERROR][-1]
    assert error.exc_info is not None and "boom" in str(error.exc_info[1])


def test_a_logger_injected_after_construction_is_used(caplog: pytest.LogCaptureFixture) -> None:
    agent = BaseAgent("late", "")
    with pytest.raises(ValueError, match="Logger not provided to agent 'late'"):
        agent.log_info("x")
    agent._logger = logging.getLogger("agentmap.test.late")
    with caplog.at_level(logging.INFO, logger="agentmap.test.late"):
        agent.log_info("now it logs")
    assert "[BaseAgent:late] now it logs" in caplog.text
