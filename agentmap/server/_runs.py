"""Runs: each one streams a `CompiledWorkflow` on the event loop and records its events for every follower.

A run is LangGraph's async stream (`astream`): no thread per run, no thread per checkpoint write; nodes whose
agents are synchronous run in the server's thread pool, async ones on the loop. At most `workers` runs
execute at once; more wait their turn.

A run's events (the stream modes the client asked for, `metadata` first, `error` on failure) are kept in
order, so `runs.stream`, `runs.join_stream` and the viewer read the same sequence however late they come.
`nodes` is AgentMap's own stream mode: one event per node start and end (`running`, `succeeded`, `failed`,
`paused`) and a `nodes/summary` event with the execution summary when the run ends.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentmap.runtime.events import RunHooks
from agentmap.runtime.results import total_usage
from agentmap.server._encode import jsonable
from agentmap.server._records import RunRecord, now
from agentmap.server._run_states import RunStatus

if TYPE_CHECKING:
    from agentmap.runtime.events import RunInfo
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.tracking import ExecutionTracker, NodeExecution
    from agentmap.server._graphs import Assistant

__all__ = ["GRAPH_MODES", "STREAM_MODES", "Run", "RunRequest", "emitter", "execute", "wanted_event"]

_log = logging.getLogger("agentmap.server")

GRAPH_MODES = ("values", "updates", "custom", "messages", "messages-tuple", "debug", "tasks", "checkpoints")
STREAM_MODES = (*GRAPH_MODES, "nodes")
"""The stream modes a run accepts: LangGraph's (but `events`) and AgentMap's `nodes`."""


@dataclass
class RunRequest:
    """What a run does, checked and resolved by the routes."""

    assistant: Assistant
    thread_id: str | None
    input: Any
    stream_modes: tuple[str, ...]
    config: dict[str, Any]
    metadata: dict[str, Any]
    kwargs: dict[str, Any]
    multitask_strategy: str = "enqueue"
    stateless: bool = False
    payload: dict[str, Any] = field(default_factory=dict)
    """What rebuilds the request on any replica (the request body, its thread and route), kept in the store."""
    pinned: bool = False
    """The request named its version (`config.configurable.assistant_version`): the run runs `assistant`, not the
    revision its thread's checkpoint names."""
    """What rebuilds the request on any replica (the request body, its thread and route, its user), kept in the
    store."""
    user_id: str | None = None
    """The identity of the user who started it (`--auth`), or None."""


@dataclass
class Run:
    """One run and its recorded events."""

    run_id: str
    request: RunRequest
    created_at: str = field(default_factory=now)
    updated_at: str = ""
    status: RunStatus = RunStatus.PENDING
    events: list[tuple[str, Any]] = field(default_factory=list)
    values: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    paused: bool = False
    """The run stopped to wait: on a question (`interrupt()`), or before/after a node it was asked to."""
    cancel_reason: str | None = None
    moved: bool = False
    """Stopped here to be continued by a replica (its lease was taken over, it was handed back, or the database
    went away): its end, and its result, are the ones that replica writes to the store."""
    attempt: int = 1
    """How many times a replica claimed it (more than once: taken over, after a kill or a handover)."""
    shared: set[int] = field(default_factory=set)
    """The numbers its events (of this attempt, here) got in a shared run store."""
    usage: dict[str, Any] = field(default_factory=dict)
    """The tokens and cost of the run's model calls (`RunResult.usage`), shown in its metadata once it ended."""
    held_until: float = math.inf
    """Until when (`time.monotonic()`) this replica surely holds the run's lease: its last claim or renewal of
    the lease that succeeded was sent `--lease` seconds before. Past it, another replica may have claimed the
    run, so no further step starts here (`held`)."""
    lease_lost: bool = False
    """Stopped before a step because its lease may have run out (`held_until` passed): handed back to the queue,
    whose next claim decides which replica continues it."""
    cancelled: threading.Event = field(default_factory=threading.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def thread_id(self) -> str:
        """The run's thread (a throwaway id for a stateless run)."""
        return self.request.thread_id or self.run_id

    def accepted(self) -> RunRecord:
        """The run's record as the store accepts it (`pending`, with what rebuilds it on any replica)."""
        request = self.request
        return RunRecord(
            run_id=self.run_id,
            thread_id=self.thread_id,
            assistant_id=request.assistant.assistant_id,
            created_at=self.created_at,
            updated_at=self.created_at,
            metadata=dict(request.metadata),
            multitask_strategy=request.multitask_strategy,
            graph_id=request.assistant.graph_id,
            request=request.payload,
            stateless=request.stateless,
            user_id=request.user_id,
        )

    def record(self) -> dict[str, Any]:
        """The run as LangGraph's server returns it."""
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "assistant_id": self.request.assistant.assistant_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at or self.created_at,
            "status": self.status,
            "metadata": {**self.request.metadata, **({"usage": self.usage} if self.usage else {})},
            "multitask_strategy": self.request.multitask_strategy,
            "cancel_reason": self.cancel_reason,
            "kwargs": self.request.payload.get("body", {}),  # what the run was asked to do, as LangGraph shows it
        }

    def held(self) -> bool:
        """Whether this replica surely still holds the run's lease (once not, `lease_lost` says so for good)."""
        if time.monotonic() >= self.held_until:
            self.lease_lost = True
        return not self.lease_lost

    def cancel(self, reason: str = "cancelled by the client") -> None:
        """Ask the run (executing on this replica, or kept here for its client) to stop after the step it is in."""
        self.cancel_reason = reason
        self.cancelled.set()

    def stopping(self) -> bool:
        """Whether the run must not start its next step here: a client asked it to stop (or it is handed over),
        or its lease may have run out."""
        return self.cancelled.is_set() or not self.held()

    def push(self, event: str, data: Any) -> None:
        """Record an event and wake the listeners (on the event loop's thread)."""
        self.events.append((event, data))
        self.wake()

    @property
    def changed(self) -> asyncio.Event:
        """Set at the next event (or at the run's end)."""
        return self._changed

    def wake(self) -> None:
        """Wake the listeners (a new event, or the run's end)."""
        self._changed.set()
        self._changed = asyncio.Event()

    def result(self) -> dict[str, Any]:
        """What `runs.wait` and `runs.join` return: the final values, or `{"__error__": ...}`."""
        if self.error is not None:
            return {"__error__": self.error}
        return self.values or {}

    async def follow(
        self, modes: tuple[str, ...] | None = None, heartbeat: float | None = None
    ) -> AsyncIterator[tuple[str, Any]]:
        """Every event so far, then each new one until the run ends (only `modes`, when given).

        With `heartbeat`, an empty event `("", None)` comes after that many seconds without one.
        """
        async for _, event, data in self.follow_indexed(modes, heartbeat):
            yield event, data

    async def follow_indexed(
        self, modes: tuple[str, ...] | None = None, heartbeat: float | None = None, start: int = 0
    ) -> AsyncIterator[tuple[int, str, Any]]:
        """Every event so far (from index `start` of `events`), then each new one until the run ends (only `modes`,
        when given), each with its index in `events`.

        With `heartbeat`, an empty event `(-1, "", None)` comes after that many seconds without one.
        """
        index = start
        while True:
            changed = self._changed
            while index < len(self.events):
                event, data = self.events[index]
                index += 1
                if wanted_event(event, modes):
                    yield index - 1, event, data
            if self.done.is_set():
                return
            try:
                await asyncio.wait_for(changed.wait(), heartbeat)
            except TimeoutError:
                yield -1, "", None


def wanted_event(event: str, modes: tuple[str, ...] | None) -> bool:
    """Whether a follower that asked for `modes` (None: all) gets `event` (`metadata` and `error` always)."""
    return modes is None or event in ("metadata", "error") or _mode_of(event) in modes


def _mode_of(event: str) -> str:
    if event == "messages":
        return "messages-tuple"
    return event.partition("/")[0].partition("|")[0]


def emitter(run: Run) -> Callable[[str, Any], None]:
    """`emit(event, data)` for the run: recorded at once on the loop's thread, handed to the loop from others
    (a synchronous node's tracker events come from a worker thread), in the order they were emitted."""
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()

    def emit(event: str, data: Any) -> None:
        if threading.get_ident() == loop_thread:
            run.push(event, data)
        else:
            loop.call_soon_threadsafe(run.push, event, data)

    return emit


async def execute(run: Run, emit: Callable[[str, Any], None]) -> RunStatus:
    """Run the graph on the event loop; return the run's final status.

    A run on a thread runs the revision the thread runs (`Thread.app`: its request's, unless the thread was moved
    meanwhile), compiled from its stored files in a worker thread when this replica has not compiled it yet.
    """
    request = run.request
    app: CompiledWorkflow = request.assistant.stateless
    if not request.stateless and request.pinned:
        app = request.assistant.app
    elif not request.stateless:
        thread = request.assistant.app.thread(run.thread_id)
        app = await asyncio.to_thread(lambda: thread.app)
    wanted = set(request.stream_modes)

    tracker = app.new_tracker()
    config = {**request.config, "metadata": {**request.config.get("metadata", {}), "run_id": run.run_id}}
    config["configurable"] = {**config.get("configurable", {}), "thread_id": run.thread_id}
    modes = _langgraph_modes(wanted)
    stream = app.astream(
        request.input,
        config,  # type: ignore[arg-type]
        tracker=tracker,
        hooks=[_NodeEvents(emit)] if "nodes" in wanted else (),
        stream_mode=modes,
        subgraphs="messages" in modes,  # a subgraph's LLM nodes stream their tokens too; its other chunks are dropped
        **request.kwargs,
    )
    final, interrupts, paused = await _follow(run, stream, wanted, emit)
    run.usage = total_usage(tracker.summary)
    success = tracker.update_graph_success()
    values = jsonable({**final, "graph_success": success})
    if interrupts:
        values["__interrupt__"] = jsonable(interrupts)
    run.values = values
    run.paused = paused and not run.cancelled.is_set() and not run.lease_lost
    if "nodes" in wanted:
        _emit_node_summary(tracker, success, interrupts, emit, paused=run.paused)
    if run.cancelled.is_set() or run.lease_lost:
        return RunStatus.INTERRUPTED
    return RunStatus.INTERRUPTED if paused else RunStatus.SUCCESS


def _langgraph_modes(wanted: set[str]) -> list[str]:
    """The LangGraph stream modes that give the server's `wanted` modes (values and updates always)."""
    modes = ["values", "updates"]
    if "messages" in wanted or "messages-tuple" in wanted:
        modes.append("messages")
    modes += [m for m in ("custom", "debug", "tasks", "checkpoints") if m in wanted]
    return modes


async def _follow(
    run: Run, stream: Any, wanted: set[str], emit: Callable[[str, Any], None]
) -> tuple[dict[str, Any], list[Any], bool]:
    """Emit the stream's chunks the client wants until it ends or the run is cancelled.

    Returns:
        The final values (without `__interrupt__`), the interrupts the run paused on, and whether it paused
        (also true, with no interrupts, before or after a node named by `interrupt_before`/`interrupt_after`).
    """
    messages = _Messages()
    final: dict[str, Any] = {}
    interrupts: list[Any] = []
    paused = False
    try:
        async for part in stream:
            namespace, mode, chunk = part if len(part) == 3 else ((), *part)
            if namespace and mode != "messages":
                continue
            if mode == "values":  # a step's last chunk: the next step starts only once we read on
                final = dict(chunk)
                interrupts = list(final.pop("__interrupt__", ()))
                if "values" in wanted:
                    emit("values", jsonable({**final, **({"__interrupt__": interrupts} if interrupts else {})}))
                if run.stopping():  # asked to stop, or another replica may hold it now: not one step more here
                    break
            elif mode == "updates":
                if isinstance(chunk, dict) and "__interrupt__" in chunk:
                    interrupts, paused = list(chunk["__interrupt__"]), True
                if "updates" in wanted:
                    emit("updates", jsonable(chunk))
            elif mode == "messages":
                for event, data in messages.events(chunk, wanted):
                    emit(event, data)
            else:
                emit(mode, jsonable(chunk))
    finally:
        await stream.aclose()  # closing the stream stops the graph (after the step it is in)
    return final, interrupts, paused or bool(interrupts)


class _NodeEvents(RunHooks):
    """The `nodes` stream mode: an event per node start and end of the run (on a resumed thread, its earlier
    steps' nodes first)."""

    def __init__(self, emit: Callable[[str, Any], None]) -> None:
        self.emit = emit

    def node_started(self, run: RunInfo, node: NodeExecution) -> None:
        self.emit("nodes", _node_event(node))

    node_ended = node_started


def _emit_node_summary(
    tracker: ExecutionTracker,
    success: bool,
    interrupts: list[Any],
    emit: Callable[[str, Any], None],
    *,
    paused: bool,
) -> None:
    """The `nodes` events at the end of a run: the nodes left paused, then the summary."""
    for execution in tracker.summary:
        if interrupts and execution.success is None:
            emit("nodes", {**_node_event(execution), "status": "paused"})
    emit("nodes/summary", {"success": success, "paused": paused, "summary": _summary(tracker.summary)})


def _node_event(execution: NodeExecution) -> dict[str, Any]:
    status = "running" if execution.success is None else "succeeded" if execution.success else "failed"
    return {"node": execution.name, "status": status, "duration": execution.duration, "error": execution.error}


def _summary(summary: list[NodeExecution]) -> list[dict[str, Any]]:
    return [jsonable(e.to_dict()) for e in summary]


class _Messages:
    """LangGraph's `messages` mode as the server's events: tuples, or partial/complete messages by id (a message
    streamed in chunks is complete with its last chunk)."""

    def __init__(self) -> None:
        self._partial: dict[str, Any] = {}

    def events(self, chunk: Any, wanted: set[str]) -> list[tuple[str, Any]]:
        message, metadata = chunk
        found: list[tuple[str, Any]] = []
        if "messages-tuple" in wanted:
            found.append(("messages", [jsonable(message), jsonable(metadata)]))
        if "messages" in wanted:
            key = str(getattr(message, "id", None) or id(message))
            if key not in self._partial:
                found.append(("messages/metadata", {key: {"metadata": jsonable(metadata)}}))
            if type(message).__name__.endswith("Chunk"):
                from langchain_core.messages import message_chunk_to_message

                so_far = self._partial.get(key)
                self._partial[key] = message if so_far is None else so_far + message
                last = getattr(message, "chunk_position", None) == "last"
                event = "messages/complete" if last else "messages/partial"
                found.append((event, [jsonable(message_chunk_to_message(self._partial[key]))]))
            else:
                self._partial[key] = message
                found.append(("messages/complete", [jsonable(message)]))
        return found
