"""`/mcp` on `agentmap serve`: the tools of `agentmap mcp` over MCP streamable HTTP, with the official `mcp` SDK.

The same tools (`McpGraphs`, `build_server`) over the server's own assistants and checkpointer: a pause asks
the client through elicitation when it can, else returns the question and a thread id for the `resume` tool;
with a SQLite or PostgreSQL `--checkpoint`, a paused run can be answered after a restart. The server's API key
rule covers `/mcp` like every route (its middleware stands in front of the whole application), and so do its auth
handlers (`--auth`): a tool call is a run of its caller (`threads.create_run`, its user in the run), the `resume`
tool sees only the caller's threads, and an MCP session is its first caller's alone.

```python
endpoint = McpEndpoint(server)          # in create_app: app.router.routes.append(endpoint.route())
async with endpoint.run():              # in the app's lifespan: the SDK's session manager runs
    ...
```
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from agentmap.errors import AgentMapError
from agentmap.server._models import RunCreate
from agentmap.server._security import error_body
from agentmap.server._users import Caller, caller_in

if TYPE_CHECKING:
    from agentmap.protocols.mcp import Leg, _Progress
    from agentmap.server._app import Server
    from agentmap.server._graphs import Assistant

__all__ = ["MCP_PATH", "McpEndpoint"]

MCP_PATH = "/mcp"
_log = logging.getLogger("agentmap.mcp")
_served = logging.getLogger("agentmap.server")  # the server's start-up lines

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class McpEndpoint:
    """The ASGI endpoint at `/mcp`: the SDK's streamable HTTP session manager over the server's graphs, or a JSON
    error saying why there is none (the `mcp` SDK not installed, no graph to offer)."""

    def __init__(self, server: Server) -> None:
        self.manager: Any = None
        self.tools: list[str] = []
        self.refusal: dict[str, Any] | None = None
        self.origins = frozenset(server.config.cors_origins)
        self.sessions: dict[str, str | None] | None = {} if server.auth is not None else None
        """With `--auth`: the identity of each MCP session's first caller (the only one it answers)."""
        try:
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        except ImportError:
            self.refusal = error_body(
                "missing-extra",
                "/mcp needs the MCP Python SDK, which is not installed on this server",
                hint='pip install "agentmap[mcp-server]" and restart agentmap serve',
            )
            return
        from agentmap.protocols.mcp import McpGraphs, build_server

        try:
            graphs = McpGraphs(server.assistants, _QueuedRuns(server))
        except AgentMapError as err:  # no graph it can offer, a graph named `resume`: the rest still serves
            _log.warning("/mcp offers no tools: %s (%s)", err.message, err.hint)
            self.refusal = error_body(str(err.code), f"/mcp offers no tools: {err.message}", hint=err.hint)
            return
        self.tools = [tool.name for tool in graphs.tools()]
        sdk_log = logging.getLogger("mcp.server.streamable_http")
        if not any(isinstance(f, _EndedStreamNoise) for f in sdk_log.filters):
            sdk_log.addFilter(_EndedStreamNoise())
        self.manager = StreamableHTTPSessionManager(build_server(graphs), max_request_body_size=server.config.max_body)

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """The session manager running (sessions and their tool calls end when the block does)."""
        if self.manager is None:
            yield
            return
        async with self.manager.run():
            _served.info("MCP clients use %s (streamable HTTP): tools %s", MCP_PATH, ", ".join(self.tools))
            yield

    def route(self) -> Any:
        """The Starlette route of `/mcp` (GET, POST and DELETE, as streamable HTTP uses them) to this endpoint."""
        from starlette.routing import Route

        return Route(MCP_PATH, self, methods=["GET", "POST", "DELETE"], include_in_schema=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = dict(scope.get("headers", ())).get(b"origin")
        if origin is not None and not {origin.decode("latin-1"), "*"} & self.origins:
            # a web page's request (a page whose host name was made to point at this machine, say): only the
            # origins the server allows browsers from (--cors-origin) may reach the tools
            refusal = error_body(
                "forbidden-origin",
                f"/mcp refuses requests from the web page at {origin.decode('latin-1')}",
                hint="allow a browser client's origin with agentmap serve --cors-origin ORIGIN",
            )
            await _send_json(send, 403, refusal, scope)
            return
        if self.manager is not None:
            session = dict(scope.get("headers", ())).get(b"mcp-session-id", b"").decode("latin-1")
            identity = caller_in(scope).identity
            if self.sessions is not None and session in self.sessions and self.sessions[session] != identity:
                refusal = error_body("forbidden", "this MCP session belongs to another user", hint=_NEW_SESSION)
                await _send_json(send, 403, refusal, scope)
                return
            if scope["method"] == "POST":  # the message checked before the SDK reads it; refused: answered here
                checked = await self._checked(scope, receive, send)
                if checked is None:
                    return
                receive = checked
            ended = [False, False]  # response started, response ended

            async def tracked(message: MutableMapping[str, Any]) -> None:
                ended[0] = ended[0] or message["type"] == "http.response.start"
                ended[1] = message["type"] == "http.response.body" and not message.get("more_body", False)
                if message["type"] == "http.response.start" and self.sessions is not None:
                    self._own(message, identity)
                await send(message)

            await self.manager.handle_request(scope, receive, tracked)
            if ended[0] and not ended[1]:  # an event stream the SDK leaves open when the server stops: end it
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        assert self.refusal is not None
        await _send_json(send, 404, self.refusal, scope)

    def _own(self, start: MutableMapping[str, Any], identity: str | None) -> None:
        """Keep the identity of the caller a new session was made for (the SDK names it in the answer's headers)."""
        assert self.sessions is not None
        made = dict(start.get("headers", ())).get(b"mcp-session-id")
        if made is not None and made.decode("latin-1") not in self.sessions:
            if len(self.sessions) >= 10_000:  # the oldest sessions are long gone (the SDK keeps none that long)
                del self.sessions[next(iter(self.sessions))]
            self.sessions[made.decode("latin-1")] = identity

    @staticmethod
    async def _checked(scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """The POSTed message read by `read_message` (the server's body limit has bounded it), replayed to the SDK;
        None when it was refused and answered: a request with its JSON-RPC error (200, as any answer to a request),
        anything else 400 (what streamable HTTP answers to input it cannot accept). A refused response of the
        client goes on as an error response to the request it answered."""
        from agentmap.protocols._jsonrpc import Refused, read_message

        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        try:
            read_message(bytes(body), null_id=False)  # MCP: a request's id is never null
        except Refused as refused:
            if refused.kind != "response":
                await _send_json(send, 200 if refused.kind == "request" else 400, refused.answer(), scope, rpc=True)
                return None
            body = bytearray(json.dumps(refused.instead()).encode())
        sent = [False]

        async def replay() -> MutableMapping[str, Any]:
            if not sent[0]:
                sent[0] = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        return replay


_NEW_SESSION = "start a session of your own (initialize without an Mcp-Session-Id header)"


async def _send_json(send: Send, status: int, body: dict[str, Any], scope: Scope, *, rpc: bool = False) -> None:
    """An error document, with the request id the server's middleware gave the request (not in a JSON-RPC
    message: `rpc`)."""
    request_id = scope.get("state", {}).get("request_id")
    data = json.dumps({**body, "request_id": request_id} if request_id and not rpc else body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class _QueuedRuns:
    """A tool call's run as a run of the server's queue (`_run_start.start_run`, as `runs.wait` and A2A): its
    thread shows `interrupted` while it waits for an answer, `runs.list` lists it, and a run a replica accepted
    is continued by another when that one stops. The client's cancellation cancels the run after its step. Each
    run is its caller's (the user the server's auth handlers gave the HTTP request carrying the call)."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def _caller(self, ctx: Any) -> Caller:
        """The caller of the HTTP request that carried the SDK request of `ctx`."""
        from agentmap.protocols.mcp import invalid_params

        request = getattr(ctx, "request", None)
        if request is None and self.server.auth is not None:  # never: a call comes in a POST
            raise invalid_params("the call came without an HTTP request, so the server cannot tell who sent it")
        return caller_in(request.scope) if request is not None else Caller()

    async def visible(self, thread_id: str, ctx: Any) -> bool:
        from starlette.concurrency import run_in_threadpool

        from agentmap.protocols.mcp import invalid_params

        try:
            visible = await self._caller(ctx).decide("threads", "read", {"thread_id": thread_id})
        except AgentMapError as err:
            raise invalid_params(err) from None
        return await run_in_threadpool(self.server.store.threads.get, thread_id, visible) is not None

    async def start(
        self, assistant: Assistant, state: dict[str, Any], thread_id: str | None, progress: _Progress
    ) -> Leg:
        body = RunCreate(
            assistant_id=assistant.assistant_id,
            input=state,
            metadata={"source": "mcp"},
            stream_mode=["nodes"],
            if_not_exists="create" if thread_id else None,
        )
        return await self._leg(body, thread_id, progress)

    async def answer(self, assistant: Assistant, thread_id: str, answer: Any, progress: _Progress) -> Leg:
        body = RunCreate(
            assistant_id=assistant.assistant_id,
            command={"resume": answer},
            metadata={"source": "mcp"},
            stream_mode=["nodes"],
        )
        return await self._leg(body, thread_id, progress)

    async def _leg(self, body: Any, thread_id: str | None, progress: _Progress) -> Leg:
        from agentmap.protocols.mcp import Leg, invalid_params
        from agentmap.server._run_start import start_run

        try:
            run = await start_run(self.server, body, thread_id, "MCP tool call", self._caller(progress.ctx))
        except AgentMapError as err:  # an answer that does not fit, a thread with nothing to resume, refused
            raise invalid_params(err) from None
        try:
            if progress.token is not None:
                async for event, data in run.follow(("nodes",)):
                    if event == "nodes" and data.get("status") in ("succeeded", "failed"):
                        await progress.finished(str(data["node"]))
            values = await self.server.runs.acceptor.outcome(
                run
            )  # wherever the run ended (another replica may finish it)
        except asyncio.CancelledError:  # the client cancelled the call
            run.cancel("cancelled by the MCP client")
            raise
        error = values.get("__error__")
        if error is not None:  # an error stopped the run: its message in one paragraph
            why = " ".join(str(error.get("message", "")).split())
            return Leg(thread_id, error=f"{error['error']}: {why}" if error["code"] == "run-error" else why)
        interrupts = [SimpleNamespace(id=i.get("id"), value=i.get("value")) for i in values.pop("__interrupt__", ())]
        ends = [data for event, data in run.events if event == "nodes/summary"]
        summary = [SimpleNamespace(**e) for e in ends[-1].get("summary", ())] if ends else []
        return Leg(thread_id, values, interrupts, summary, bool(values.pop("graph_success", True)))


class _EndedStreamNoise(logging.Filter):
    """Drops the SDK's error traceback for a client's event stream that its own session end closed (the client's
    DELETE closes the stream under the writer): nothing failed, and a server log shows no tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        import anyio

        error = record.exc_info[1] if record.exc_info else None
        ended = isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError)
        return not (ended and record.getMessage() == "Error in standalone SSE writer")
