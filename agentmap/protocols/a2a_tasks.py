"""An A2A task of `agentmap serve` (`a2a.py`): run as a run of the server's queue (`executor`: a message's
`contextId` the thread, `server/_run_start.start_run`; its nodes reported to a client that streams, a pause
`input-required`, the final state an artifact) and kept (`task_store`: the SDK's in-memory store for live tasks, the
server's item store for a pause and an end, so with `--checkpoint` a paused task outlives a restart; with `--auth`,
a task whose thread the caller may not read is not found). The SDK is imported only when the server starts with it
installed (`agentmap[a2a]`).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from agentmap.errors import AgentMapError
from agentmap.protocols._tools import reply
from agentmap.protocols.a2a_messages import answer_of, run_input
from agentmap.server._models import ApiError, RunCreate
from agentmap.server._run_start import start_run
from agentmap.server._users import Caller

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._graphs import Assistant
    from agentmap.server._runs import Run

__all__ = ["CALLER", "INPUT", "STREAMED", "executor", "task_store"]

_NAMESPACE = ("agentmap", "a2a-tasks")
"""Where the tasks are kept in the server's item store."""
INPUT = "agentmap.a2a.input"
"""A new task's input, checked by the handler before the SDK records the task, in the request's call context."""
STREAMED = "agentmap.a2a.streamed"
"""Set in a request's call context when the client streams (`message/stream`)."""
CALLER = "agentmap.a2a.caller"
"""The request's `Caller` (`_users.py`), in its call context."""


def executor(server: Server, assistant: Assistant) -> Any:
    """The SDK's agent executor of `assistant`'s tasks: each message a run of the server's queue."""
    from a2a.helpers import new_task
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.tasks.task_updater import TaskUpdater
    from a2a.types.a2a_pb2 import TaskState
    from a2a.utils.errors import InvalidParamsError

    class Executor(AgentExecutor):
        """Runs a task as a run of the server's queue and reports its nodes, pause, result or failure."""

        def __init__(self) -> None:
            self.running: dict[str, Run] = {}

        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            task_id, thread_id = str(context.task_id), str(context.context_id)
            task = context.current_task
            waiting = task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            if task is not None and not waiting:  # it ended while this message waited its turn: one answer a pause
                return  # no run; the reply is the task as it ended
            if waiting:
                resume = {"resume": answer_of(context.message)}
                body = RunCreate(assistant_id=assistant.assistant_id, command=resume, stream_mode=["nodes"])
            else:
                state = context.call_context.state.get(INPUT) or run_input(assistant, context.message)
                body = RunCreate(
                    assistant_id=assistant.assistant_id, input=state, if_not_exists="create", stream_mode=["nodes"]
                )
            caller = context.call_context.state.get(CALLER) if context.call_context else None
            try:
                run = await start_run(server, body, thread_id, "A2A message", caller or Caller())
            except AgentMapError as err:
                raise InvalidParamsError(f"{err.message} ({err.hint})" if err.hint else err.message) from None
            updater = TaskUpdater(event_queue, task_id, thread_id)
            if task is None:
                history = [context.message] if context.message else []
                submitted = new_task(task_id, thread_id, TaskState.TASK_STATE_SUBMITTED, history=history)
                await event_queue.enqueue_event(submitted)
            self.running[task_id] = run
            streamed = bool(context.call_context.state.get(STREAMED))
            try:
                if streamed:  # a status a node; a client that does not stream is answered once, at the end
                    async for event, data in run.follow(("nodes",)):
                        if event == "nodes" and data.get("status") in ("succeeded", "failed"):
                            text = f"node {data['node']} {data['status']}"
                            await updater.start_work(updater.new_agent_message([_text(text)]))
                result = await server.runs.acceptor.outcome(run)  # wherever it ended (another replica may finish it)
            except asyncio.CancelledError:
                run.cancel("cancelled by the A2A client")
                raise
            finally:
                self.running.pop(task_id, None)
            ends = [data for event, data in run.events if event == "nodes/summary"]
            summary = [SimpleNamespace(**e) for e in ends[-1].get("summary", ())] if ends else []
            await _finish(assistant, run, result, summary, updater)

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            run = self.running.get(str(context.task_id))
            if run is not None:
                run.cancel("cancelled by the A2A client")
                await run.done.wait()
            await TaskUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()

    return Executor()


def _text(text: str) -> Any:
    from a2a.helpers import new_text_part

    return new_text_part(text)


async def _finish(assistant: Assistant, run: Run, result: dict[str, Any], summary: Sequence[Any], updater: Any) -> None:
    """The task's end (`result`: what the run ended with, `RunAcceptance.outcome`): failed with the error,
    input-required with the question, or the result as artifacts."""
    from a2a.helpers import new_data_part

    error = result.get("__error__")
    if error is not None:
        await updater.failed(updater.new_agent_message([_text(f"{error['code']}: {error['message']}")]))
        return
    values = dict(result)
    interrupts = values.pop("__interrupt__", None)
    if run.cancelled.is_set() and not run.moved:  # a run handed over to another replica was not cancelled
        await updater.cancel()
        return
    if interrupts:
        asked = interrupts[0].get("value") if isinstance(interrupts[0], Mapping) else interrupts[0]
        text = str(asked.get("question", asked)) if isinstance(asked, Mapping) else str(asked)
        await updater.requires_input(updater.new_agent_message([_text(text), new_data_part(asked)]))
        return
    success = bool(values.pop("graph_success", True))
    text = reply(assistant, values, summary, success)
    await updater.add_artifact([new_data_part(values), _text(text)], name="result")
    if success:
        await updater.complete()
    else:
        await updater.failed(updater.new_agent_message([_text(text)]))


def task_store(server: Server, graph_id: str) -> Any:
    """The SDK's in-memory task store for the tasks that run or wait; a task that pauses or ends is also written
    to the item store, which alone keeps it once it has ended (memory holds only live tasks, and an ended one
    until its write is done: the reply does not wait for it) and which is read for a task not in memory (an
    ended one, or any after a restart). A task still running when the server stops
    is not kept: its run is continued by the run queue and its thread holds the result. With `--auth`, a task
    whose thread (its context) the caller's `threads.read` filter hides is not found."""
    items = server.items
    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types.a2a_pb2 import Task, TaskState

    namespace = (*_NAMESPACE, graph_id)
    running = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    live = (*running, TaskState.TASK_STATE_INPUT_REQUIRED)

    async def write(task: Task) -> None:
        blob = base64.b64encode(task.SerializeToString()).decode()
        await run_in_threadpool(items.put, namespace, task.id, {"task": blob})

    class Tasks(InMemoryTaskStore):
        def __init__(self) -> None:
            super().__init__()
            self.writing: set[asyncio.Task[None]] = set()

        async def save(self, task: Task, context: ServerCallContext) -> None:
            if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:  # a pause: kept before the client hears
                await write(task)
            await super().save(task, context)
            if task.status.state not in live:  # an end: kept without holding up the reply (memory has it meanwhile)
                ending = asyncio.get_running_loop().create_task(self._ended(task, context))
                self.writing.add(ending)
                ending.add_done_callback(self.writing.discard)

        async def _ended(self, task: Task, context: ServerCallContext) -> None:
            try:
                await write(task)
            finally:
                await super().delete(task.id, context)

        async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
            found: Task | None = await super().get(task_id, context)
            if found is not None or INPUT in context.state:  # a message without a task id: a new task
                return found if found is None or await self._seen(found, context) else None
            item = await run_in_threadpool(items.get, namespace, task_id)
            if item is None:
                return None
            task: Task = Task.FromString(base64.b64decode(item.value["task"]))
            if not await self._seen(task, context):
                return None
            if task.status.state in live:
                await super().save(task, context)
            return task

        async def _seen(self, task: Task, context: ServerCallContext) -> bool:
            """Whether the caller may see the task: its context is a thread their `threads.read` filter shows."""
            caller = context.state.get(CALLER)
            if not isinstance(caller, Caller) or caller.authorization is None:
                return True
            try:
                visible = await caller.decide("threads", "read", {"thread_id": task.context_id})
            except ApiError:
                return False
            found = await run_in_threadpool(server.store.threads.get, task.context_id, visible)
            return found is not None

    return Tasks()
