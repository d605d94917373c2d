"""Each served graph as an A2A agent on `agentmap serve`, through the official `a2a-sdk`.

`/a2a/{assistant}` (the assistant id or graph id) is the agent's JSON-RPC endpoint (A2A 1.0 method names and
0.3's `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`), its card at
`/a2a/{assistant}/.well-known/agent-card.json`. The SDK's request handler keeps the tasks; this module is
the agent behind it: a message's `contextId` is a thread, a task is a run on the server's run queue
(`server/_run_start.py`), a pause is `input-required` (the next message of the task answers it), the final
state an artifact. A task that pauses or ends is also written to the server's item store, so with
`--checkpoint` a paused task outlives a restart. The SDK is imported only when the server starts with it
installed (`agentmap[a2a]`). With `--auth`, a task is a run of its caller (its user in the run, the caller's
`threads.create_run` handler asked), and a task whose context is another user's thread is not found. Full story:
csv_specs/a2a.md.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from agentmap.errors import AgentMapError
from agentmap.protocols._jsonrpc import Refused, read_message
from agentmap.protocols._tools import describe, reply
from agentmap.protocols.a2a_messages import answer_of, check_answer_fits, check_params, input_keys, run_input
from agentmap.server._models import THREAD_ID_RULE, ApiError, RunCreate, valid_thread_id
from agentmap.server._run_start import start_run
from agentmap.server._users import Caller, caller_in

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._graphs import Assistant
    from agentmap.server._runs import Run

__all__ = ["a2a_routes"]

_CARD = "/.well-known/agent-card.json"
_NAMESPACE = ("agentmap", "a2a-tasks")
"""Where the tasks are kept in the server's item store."""
_INPUT = "agentmap.a2a.input"
"""A new task's input, checked by the handler before the SDK records the task, in the request's call context."""
_STREAMED = "agentmap.a2a.streamed"
"""Set in a request's call context when the client streams (`message/stream`)."""
_CALLER = "agentmap.a2a.caller"
"""The request's `Caller` (`_users.py`), in its call context."""
_DEPTH = 32
"""The deepest nesting of a message read (the message's own object counted): the SDK makes a data part a protobuf
Struct, two or three protobuf levels a JSON level within protobuf's 100, so a data part of objects nested more than
about 33 levels failed there (-32603 internal error)."""


def a2a_routes(server: Server) -> APIRouter:
    """The A2A routes of every assistant (a 501 naming the extra when `a2a-sdk` is not installed)."""
    router = APIRouter(tags=["a2a"], include_in_schema=False)
    if server.config.compile_options.tracing is None:  # the SDK's own spans follow --trace (about 1 ms a message)
        os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")
    try:
        import a2a  # noqa: F401
    except ImportError:

        @router.api_route("/a2a/{path:path}", methods=["GET", "POST"])
        def missing(path: str) -> None:
            raise ApiError(501, "not-supported", "A2A needs the a2a-sdk package", hint='pip install "agentmap[a2a]"')

        return router
    agents = {a.assistant_id: _Agent(server, a) for a in server.assistants.all}

    def agent(key: str) -> _Agent:
        return agents[server.assistant(key).assistant_id]  # a 404 listing the graphs when unknown

    @router.get("/a2a/{key}" + _CARD)
    async def card(key: str, request: Request) -> Response:
        """The agent card of one assistant, its endpoint on the address the client used (if the caller's
        `assistants.read` handler lets them see the assistant)."""
        served = agent(key)
        visible = await caller_in(request.scope).decide(
            "assistants", "read", {"assistant_id": served.assistant.assistant_id}
        )
        if visible is not None and not visible.matches(served.assistant.to_json()["metadata"]):
            raise ApiError(404, "assistant-not-found", f"no assistant {key!r}")
        return served.card_response(str(request.base_url).rstrip("/") + f"/a2a/{key}")

    @router.post("/a2a/{key}")
    async def rpc(key: str, request: Request) -> Response:
        """The assistant's A2A JSON-RPC endpoint: the message checked (`read_message`, and a 0.3 method's params:
        `check_params`) before the SDK reads it (the SDK reads the same body again); one refused is answered with
        its JSON-RPC error (200, as the SDK's)."""
        served = agent(key)
        try:
            check_params(read_message(await request.body(), max_depth=_DEPTH))
        except Refused as refused:
            return Response(json.dumps(refused.answer()), media_type="application/json")
        found: Response = await served.dispatcher.handle_requests(request)
        return found

    return router


class _Agent:
    """One assistant as an A2A agent: its card, the SDK's handler, and the executor running its tasks."""

    def __init__(self, server: Server, assistant: Assistant) -> None:
        from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher

        self.assistant = assistant
        self.card = _card(assistant, "http://localhost/a2a/" + assistant.graph_id, server.config.api_key is not None)
        tasks = _task_store(server, assistant.graph_id)
        handler = _handler(assistant, tasks)(
            agent_executor=_executor(server, assistant),
            task_store=tasks,
            agent_card=self.card,
        )
        self.dispatcher = JsonRpcDispatcher(
            request_handler=handler, context_builder=_contexts(), enable_v0_3_compat=True
        )

    def card_response(self, url: str) -> Response:
        from a2a.server.request_handlers.response_helpers import agent_card_to_dict
        from a2a.types.a2a_pb2 import AgentCard

        card = AgentCard()
        card.CopyFrom(self.card)
        for interface in card.supported_interfaces:
            interface.url = url
        return Response(json.dumps(agent_card_to_dict(card)), media_type="application/json")


def _contexts() -> Any:
    """The SDK's call contexts, with the request's `Caller`, and its user named by identity (the SDK keeps the tasks
    it holds in memory apart by that name)."""
    from a2a.auth.user import User
    from a2a.server.routes.common import DefaultServerCallContextBuilder

    class Named(User):
        def __init__(self, identity: str) -> None:
            self.identity = identity

        @property
        def is_authenticated(self) -> bool:
            return True

        @property
        def user_name(self) -> str:
            return self.identity

    class Builder(DefaultServerCallContextBuilder):
        def build(self, request: Request) -> Any:
            context = super().build(request)
            caller = caller_in(request.scope)
            context.state[_CALLER] = caller
            if caller.identity is not None:
                context.user = Named(caller.identity)
            return context

    return Builder()


def _handler(assistant: Assistant, tasks: Any) -> Any:
    """The SDK's request handler; a message is checked before the SDK takes it (an error there would fail the
    task): a new task's input, or the answer to a paused task's question."""
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.utils.errors import InvalidParamsError

    async def check(params: Any, context: Any) -> None:
        context_id = params.message.context_id
        if context_id and not valid_thread_id(context_id):  # the context is the thread: its id names it
            raise InvalidParamsError(f"message.contextId {context_id[:40]!r} is refused: {THREAD_ID_RULE}")
        if not params.message.task_id:
            context.state[_INPUT] = run_input(assistant, params.message)
            return
        task = await tasks.get(params.message.task_id, context)
        if task is not None and task.status.HasField("message"):
            await asyncio.to_thread(check_answer_fits, assistant, task.context_id, params.message)

    class Handler(DefaultRequestHandler):
        async def on_message_send(self, params: Any, context: Any) -> Any:
            await check(params, context)
            return await super().on_message_send(params, context)

        async def on_message_send_stream(self, params: Any, context: Any) -> AsyncGenerator[Any, None]:
            await check(params, context)
            context.state[_STREAMED] = True  # the executor reports each node only to a client that streams
            async for event in super().on_message_send_stream(params, context):
                yield event

    return Handler


def _card(assistant: Assistant, url: str, keyed: bool) -> Any:
    """The agent card: the graph's description, one skill (the graph), the API key scheme when one is set."""
    from a2a.types.a2a_pb2 import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        APIKeySecurityScheme,
        SecurityRequirement,
        SecurityScheme,
    )
    from a2a.utils.constants import PROTOCOL_VERSION_CURRENT

    keys = input_keys(assistant)
    how = (
        f"Send the input key {keys[0]!r} as text, or a data part with the state."
        if len(keys) == 1
        else f"Send a data part with the input keys: {', '.join(keys)}."
        if keys
        else "Send any message: the graph takes no input."
    )
    description = describe(assistant)
    card = AgentCard(
        name=assistant.graph_id,
        description=description,
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_CURRENT)
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id=assistant.graph_id,
                name=assistant.graph_id,
                description=f"{description}\n{how}",
                tags=["agentmap", "workflow"],
            )
        ],
    )
    if keyed:
        card.security_schemes["apiKey"].CopyFrom(
            SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Api-Key"))
        )
        requirement = SecurityRequirement()
        requirement.schemes["apiKey"]  # a map of messages: reading a key adds it
        card.security_requirements.append(requirement)
    return card


def _executor(server: Server, assistant: Assistant) -> Any:
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
                state = context.call_context.state.get(_INPUT) or run_input(assistant, context.message)
                body = RunCreate(
                    assistant_id=assistant.assistant_id, input=state, if_not_exists="create", stream_mode=["nodes"]
                )
            caller = context.call_context.state.get(_CALLER) if context.call_context else None
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
            streamed = bool(context.call_context.state.get(_STREAMED))
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


def _task_store(server: Server, graph_id: str) -> Any:
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
            if found is not None or _INPUT in context.state:  # a message without a task id: a new task
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
            caller = context.state.get(_CALLER)
            if not isinstance(caller, Caller) or caller.authorization is None:
                return True
            try:
                visible = await caller.decide("threads", "read", {"thread_id": task.context_id})
            except ApiError:
                return False
            found = await run_in_threadpool(server.store.threads.get, task.context_id, visible)
            return found is not None

    return Tasks()
