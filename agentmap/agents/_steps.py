"""How one node run of an agent goes: the runtime-owned machinery behind `BaseAgent.run` / `arun`.

`agents.runner` owns it: `run_node` / `arun_node` / `fail_node` are these functions, and `BaseAgent.run`
calls them too, so a compiled node and a direct `agent.run(state)` take the same path in one frame. An
agent subclass never sees this module; it overrides `process` and the `_pre_process` / `_post_process` hooks.
"""

from __future__ import annotations

import inspect
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, NamedTuple

from agentmap.agents._bridge import is_control_flow, run_sync
from agentmap.agents._contract import escape_signal, hook_changes, hook_snapshot, log_text
from agentmap.agents._node_calls import begin_node
from agentmap.agents._run_context import in_run

if TYPE_CHECKING:
    from agentmap.agents.base import BaseAgent, Tracker

__all__ = ["arun_node", "fail_node", "run_node", "tracker_for"]


class _Trace(NamedTuple):
    """One node run's execution id and start time, for its trace lines: the run's own, never the agent's (one
    agent object serves every run of a compiled workflow, concurrent ones included)."""

    execution_id: str
    started: float


def tracker_for(agent: BaseAgent) -> Tracker:
    """The tracker `agent`'s run records on; raises the contract's ValueError when there is none."""
    tracker = agent._execution_tracker
    if tracker is None and agent.environment.new_tracker is not None and in_run():
        tracker = agent.environment.new_tracker()  # a node of someone else's LangGraph graph
    if tracker is None:
        raise ValueError(
            f"ExecutionTracker not provided to agent '{agent.name}'. "
            "Please inject execution_tracker dependency using DI fixtures in tests or provide "
            "execution_tracker in constructor."
        )
    return tracker


def run_node(agent: BaseAgent, state: Any, tracker: Tracker | None = None, *, via_run: bool = False) -> dict[str, Any]:
    """`agent.run(state)`, recording on `tracker` (the run's) when given.

    An agent that overrides `run` (the contract says not to) is called through its own `run`, which finds
    the tracker itself; `BaseAgent.run` passes `via_run` (it is that call).
    """
    if agent._own_run and not via_run:
        return agent.run(state)
    state, inputs, tracker, trace = _start(agent, state, tracker)
    before = hook_snapshot(state, True) if agent._own_hooks else None
    try:
        state, inputs = agent._pre_process(state, inputs)
        process = agent.aprocess if agent._async_only else agent.process  # type: ignore[attr-defined]
        output = process(inputs)
        if inspect.iscoroutine(output):
            output = run_sync(output)
        return _succeed(agent, state, inputs, output, tracker, before, trace)
    except Exception as exc:
        if is_control_flow(exc):
            raise
        return _fail(agent, state, inputs, exc, tracker, before, trace)
    except (SystemExit, KeyboardInterrupt) as exc:  # an agent cannot end the process: its node fails
        return _fail(agent, state, inputs, escape_signal(exc), tracker, before, trace)


async def arun_node(
    agent: BaseAgent, state: Any, tracker: Tracker | None = None, *, via_run: bool = False
) -> dict[str, Any]:
    """The async twin of `run_node`: `await agent.arun(state)`."""
    if agent._own_arun and not via_run:
        return await agent.arun(state)
    state, inputs, tracker, trace = _start(agent, state, tracker)
    before = hook_snapshot(state, True) if agent._own_hooks else None
    try:
        state, inputs = agent._pre_process(state, inputs)
        aprocess = getattr(agent, "aprocess", None)
        output = await aprocess(inputs) if aprocess is not None else agent.process(inputs)
        if inspect.isawaitable(output):
            output = await output
        return _succeed(agent, state, inputs, output, tracker, before, trace)
    except Exception as exc:
        if is_control_flow(exc):
            raise
        return _fail(agent, state, inputs, exc, tracker, before, trace)
    except (SystemExit, KeyboardInterrupt) as exc:
        return _fail(agent, state, inputs, escape_signal(exc), tracker, before, trace)


def fail_node(agent: BaseAgent, state: Any, error: Exception, tracker: Tracker | None = None) -> dict[str, Any]:
    """The contract's failure of `agent`'s node with `error`, when the runtime ended it (a timeout, say).

    It is what `run` returns when `process` raises `error`: logged, recorded on the tracker (the one given,
    else the agent's), `_post_process` applied, and the error update returned. It writes no `RUN FAILED`
    trace line: the node's own run, still going where the runtime stopped waiting for it, writes its end.

    Raises:
        ValueError: No tracker given, and the agent has none (not in a run).
    """
    return _fail(agent, state, {}, error, tracker if tracker is not None else tracker_for(agent))


def _start(agent: BaseAgent, state: Any, tracker: Tracker | None) -> tuple[Any, dict[str, Any], Tracker, _Trace | None]:
    log = agent._log
    trace = None
    if log.tracing():
        trace = _Trace(str(uuid.uuid4())[:8], time.time())
        agent.log_trace(f"\n*** AGENT {agent.name} RUN START [{trace.execution_id}] at {trace.started} ***")
    elif log.logger is None:
        agent.log_trace("")  # raises the contract's ValueError
    if tracker is None or agent._given_tracker is not None:  # a tracker given to the agent comes first
        tracker = tracker_for(agent)
    inputs = agent._io.inputs(state)
    begin_node(agent.name)  # the call journal numbers this run's model and tool calls from 0
    tracker.record_node_start(agent.name, inputs)
    return state, inputs, tracker, trace


def _succeed(
    agent: BaseAgent,
    state: Any,
    inputs: dict[str, Any],
    output: Any,
    tracker: Tracker,
    before: dict[str, Any] | None,
    trace: _Trace | None,
) -> dict[str, Any]:
    state, output = agent._post_process(state, inputs, output)
    update = agent._io.update(output)
    if before is not None:
        update = {**hook_changes(before, state), **update}
    tracker.record_node_result(agent.name, success=True, result=output)
    update["last_action_success"] = True
    if output is not None and agent._log.enabled(logging.DEBUG):
        agent.log_debug(f"Set output field '{agent.output_field}' = {log_text(output)}")
    _trace_end(agent, trace, "COMPLETED")
    return update


def _fail(
    agent: BaseAgent,
    state: Any,
    inputs: dict[str, Any],
    exc: Exception,
    tracker: Tracker,
    before: dict[str, Any] | None = None,
    trace: _Trace | None = None,
) -> dict[str, Any]:
    error_msg = f"Error in {agent.name}: {exc}"
    debugging = agent._log.enabled(logging.DEBUG)
    handled = agent.name in agent.environment.handled_failures  # a designed path: Failure_Next goes on
    log = agent.log_info if handled else agent.log_error
    log(error_msg, exc_info=exc if debugging else None)  # the traceback when debugging
    agent.record_metadata(_error_code=getattr(exc, "code", None) or type(exc).__name__)  # for traces
    tracker.record_node_result(agent.name, False, error=error_msg)
    error_updates: dict[str, Any] = {
        "graph_success": tracker.update_graph_success(),
        "last_action_success": False,
        "errors": [error_msg],
    }
    try:
        state, post = agent._post_process(state, inputs, error_updates)
        if isinstance(post, dict) and "last_action_success" in post:
            error_updates = post
    except Exception as post_error:
        agent.log_error(f"Error in post-processing: {post_error}")
    _trace_end(agent, trace, "FAILED")
    return {**hook_changes(before, state), **error_updates}


def _trace_end(agent: BaseAgent, trace: _Trace | None, outcome: str) -> None:
    """The contract's `RUN COMPLETED [id] in X.XXXXs` / `RUN FAILED [id] in X.XXXXs` trace line."""
    if trace is not None:
        duration = time.time() - trace.started
        agent.log_trace(f"\n*** AGENT {agent.name} RUN {outcome} [{trace.execution_id}] in {duration:.4f}s ***")
