"""Each served graph as an A2A agent on `agentmap serve`, through the official `a2a-sdk`: its routes, card, the
SDK's request handler and call contexts.

`/a2a/{assistant}` (the assistant id or graph id) is the agent's JSON-RPC endpoint (A2A 1.0 method names and
0.3's `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`), its card at
`/a2a/{assistant}/.well-known/agent-card.json`. The SDK's request handler keeps the tasks; behind it, a message's
`contextId` is a thread, a task is a run on the server's run queue (`server/_run_start.py`), a pause is
`input-required` (the next message of the task answers it), the final state an artifact; a task that pauses or
ends is also written to the server's item store, so with `--checkpoint` a paused task outlives a restart (how a
task runs and is kept: `a2a_tasks.py`). The SDK is imported only when the server starts with it installed
(`agentmap[a2a]`). With `--auth`, a task is a run of its caller (its user in the run, the caller's
`threads.create_run` handler asked), and a task whose context is another user's thread is not found. Full story:
csv_specs/a2a.md.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from agentmap.protocols._jsonrpc import Refused, read_message
from agentmap.protocols._tools import describe
from agentmap.protocols.a2a_messages import check_answer_fits, check_params, input_keys, run_input
from agentmap.protocols.a2a_tasks import CALLER, INPUT, STREAMED, executor, task_store
from agentmap.server._models import THREAD_ID_RULE, ApiError, valid_thread_id
from agentmap.server._users import caller_in

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._graphs import Assistant

__all__ = ["a2a_routes"]

_CARD = "/.well-known/agent-card.json"
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
        tasks = task_store(server, assistant.graph_id)
        handler = _handler(assistant, tasks)(
            agent_executor=executor(server, assistant),
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
            context.state[CALLER] = caller
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
            context.state[INPUT] = run_input(assistant, params.message)
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
            context.state[STREAMED] = True  # the executor reports each node only to a client that streams
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
