"""The FastAPI application: assistants, health, the viewer, error handling; threads and runs from their modules."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentmap._version import __version__
from agentmap.errors import AgentMapError, GraphNotFoundError, NodeError, WorkflowFileError
from agentmap.runtime.items import item_store
from agentmap.server._audit import Audit
from agentmap.server._auth_load import load_auth
from agentmap.server._bodies import api_router
from agentmap.server._config import ServeConfig
from agentmap.server._crons import cron_routes, tick_crons
from agentmap.server._graphs import Assistant, Assistants, open_checkpointer
from agentmap.server._items import item_routes
from agentmap.server._models import ApiError, AssistantSearch, refuse_unsupported
from agentmap.server._reach import Reach
from agentmap.server._rebuild import rebuilder
from agentmap.server._records import ThreadRecord
from agentmap.server._run_manager import RunManager
from agentmap.server._run_routes import run_routes
from agentmap.server._security import Guard, error_body, server_public
from agentmap.server._store import open_store
from agentmap.server._threads import snapshot_of, thread_routes
from agentmap.server._users import Caller, CallerOf, Users
from agentmap.server._versions import Versions, version_routes
from agentmap.server._viewer import viewer_page
from agentmap.server._webhooks import Webhooks

if TYPE_CHECKING:
    from agentmap.server._filters import Filter

__all__ = ["Server", "create_app"]

_log = logging.getLogger("agentmap.server")


class Server:
    """What the routes share: the assistants, the checkpointer, the thread store and the runs."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.auth = load_auth(config.auth) if config.auth else None  # a bad auth file fails before any compile
        self.checkpointer = open_checkpointer(config.checkpoint)
        self.items = item_store(config.checkpoint)  # nodes and the /store endpoints share it
        self.assistants = Assistants.load(
            # a run's input is checked once, as it is accepted (`_run_request`), as `config.missing_inputs` says
            config.targets,
            self.checkpointer,
            options=config.compile_options.but(store=self.items, missing_inputs="ignore"),
        )
        self.store = open_store(config.checkpoint)
        self.versions = Versions(self.store)
        """The assistants' versions: which one a run takes, reloading a changed file."""
        for assistant in self.assistants.all:
            self.versions.serve(assistant)
        self.audit = Audit(config.audit, content=config.audit_content, store=self.store) if config.audit else None
        self.runs = RunManager(
            self.store,
            graphs=[a.graph_id for a in self.assistants.all],
            rebuild=rebuilder(self),
            workers=config.workers,
            lease=config.lease,
            webhooks=Webhooks(config.webhook_secret, timeout=config.webhook_timeout),
            quota=config.quota,
        )

    def close(self) -> None:
        """Stop the runs, send the spans their tracer still holds, and close the files."""
        self.runs.close()
        for assistant in self.assistants.all:
            for view in (assistant, *assistant.views()):
                view.app.flush()
                view.stateless.flush()
        if self.audit is not None:
            self.audit.close()  # what is queued is written before the store closes
        self.store.close()
        items = getattr(self.items, "conn", None)
        if isinstance(items, sqlite3.Connection):  # a SQLite file's own connection (not a shared pool)
            items.close()
        conn = getattr(self.checkpointer, "conn", None)
        if conn is not None and hasattr(conn, "close"):
            conn.close()

    def assistant(self, key: str) -> Assistant:
        """The assistant with this id or graph id, or a 404 listing the graphs."""
        found = self.assistants.get(key)
        if found is None:
            names = ", ".join(a.graph_id for a in self.assistants.all)
            raise ApiError(404, "assistant-not-found", f"no assistant {key!r}", hint=f"graphs served: {names}")
        return found

    def thread(self, thread_id: str, visible: Filter | None = None) -> ThreadRecord:
        """The thread record, or a 404 (also for a thread the user's filter `visible` hides: another user's)."""
        record = self.store.threads.get(thread_id, visible)
        if record is None:
            raise ApiError(404, "thread-not-found", f"no thread {thread_id!r}", hint="create one with threads.create()")
        return record

    def thread_assistant(self, record: ThreadRecord) -> Assistant | None:
        """The assistant whose graph a thread runs (None before its first run)."""
        graph_id = record.metadata.get("graph_id")
        return self.assistants.get(str(graph_id)) if graph_id is not None else None

    def thread_view(self, record: ThreadRecord, checkpoint_id: str | None = None) -> Assistant | None:
        """The assistant at the revision a thread runs (at `checkpoint_id`: that checkpoint's), whatever its file
        holds now (None before its first run)."""
        assistant = self.thread_assistant(record)
        return self.versions.of_thread(assistant, record.thread_id, checkpoint_id) if assistant is not None else None

    def snapshot(self, record: ThreadRecord, checkpoint_id: str | None = None) -> Any:
        """The graph state of a thread (None before its first run), read by the graph of its own revision."""
        return snapshot_of(self.thread_view(record, checkpoint_id), record.thread_id, checkpoint_id)


def create_app(config: ServeConfig) -> FastAPI:
    """The ASGI application serving `config.targets` (workflows are compiled now, so mistakes show at start).

    Raises:
        WorkflowFileError, WorkflowValidationError, ConfigError: A workflow or the checkpointer cannot be opened.
    """

    server = Server(config)
    from agentmap.protocols.mcp_http import McpEndpoint  # the same tools as `agentmap mcp`, at /mcp

    mcp = McpEndpoint(server)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        graphs = ", ".join(f"{a.graph_id} ({a.app.spec.file})" for a in server.assistants.all)
        asyncio.get_running_loop().set_default_executor(server.runs.executor)  # where sync nodes run
        _log.info("serving %s; the run viewer is at / and langgraph-sdk clients use the same address", graphs)
        if config.webhook_hosts and not config.webhook_secret:
            _log.warning("webhooks are sent unsigned: give --webhook-secret-env so receivers can check them")
        await server.runs.begin()  # claims queued runs, and those a stopped server left unfinished
        ticker = asyncio.get_running_loop().create_task(tick_crons(server))
        watcher = None
        if config.reload is not None:  # a changed file becomes a new version without a restart
            watching = server.versions.watch(server.assistants.all, config.reload)
            watcher = asyncio.get_running_loop().create_task(watching)
        async with mcp.run():
            yield
        ticker.cancel()
        if watcher is not None:
            watcher.cancel()
        await server.runs.shutdown(config.grace)  # finish, or hand over to another replica
        server.close()  # the files close

    app = FastAPI(
        lifespan=lifespan,
        title="AgentMap",
        version=__version__,
        description="CSV workflows served over the LangGraph server protocol (the subset langgraph-sdk uses).",
        docs_url=None,
        redoc_url=None,
    )
    app.state.server = server
    app.include_router(_assistant_routes(server))
    app.include_router(version_routes(server))
    app.include_router(thread_routes(server))
    app.include_router(cron_routes(server))
    app.include_router(run_routes(server))
    app.include_router(item_routes(server.items))
    app.router.routes.append(mcp.route())
    app.include_router(_a2a_routes(server))
    app.include_router(_agui_routes(server))
    _add_viewer(app, server)
    _add_errors(app)

    @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
    async def not_supported(request: Request, path: str) -> JSONResponse:
        raise ApiError(
            404,
            "not-supported",
            f"{request.method} /{path} is not supported by agentmap serve",
            hint="assistants, threads, runs, stateless runs and the store are; /openapi.json lists every endpoint",
        )

    # inside the Guard: the hosts, the key and the size limits come first; then who calls (--auth), the audit log
    app.add_middleware(
        Users, authorization=server.auth, audit=server.audit, public=server_public, routes=app.router.routes
    )
    reach = Reach(hosts=config.allowed_hosts, origins=config.cors_origins)
    # with --auth the Authorization header is the user's: the API key comes as X-Api-Key only
    app.add_middleware(
        Guard, api_key=config.api_key, max_body=config.max_body, reach=reach, bearer_key=server.auth is None
    )
    if config.cors_origins:  # outside the guard: a page of an allowed origin can read its refusals (a wrong key)
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["Content-Location", "X-Request-Id", "Mcp-Session-Id"],  # the last for /mcp in a browser
        )
    return app


def _a2a_routes(server: Server) -> APIRouter:
    from agentmap.protocols.a2a import a2a_routes  # the A2A agents (csv_specs/protocols.md); the SDK is optional

    return a2a_routes(server)


def _agui_routes(server: Server) -> APIRouter:
    from agentmap.protocols.agui import agui_routes  # each assistant an AG-UI agent (csv_specs/agui.md)

    return agui_routes(server)


def _assistant_routes(server: Server) -> APIRouter:
    router = api_router(tags=["assistants"])

    @router.get("/health")
    @router.get("/ok")
    def health() -> dict[str, Any]:
        """Liveness: `{"ok": true}` and the number of assistants."""
        return {"ok": True, "assistants": len(server.assistants.all)}

    @router.get("/info")
    def info() -> dict[str, Any]:
        """What LangGraph's `/info` tells: the server's version and what it offers (a client such as LangChain's
        Agent Chat UI asks it first, with the caller's key, to see that it reaches a LangGraph server)."""
        return {"version": __version__, "flags": {"assistants": True, "crons": True, "langsmith": False}}

    @router.post("/assistants/search")
    def search(body: AssistantSearch, caller: CallerOf) -> list[dict[str, Any]]:
        """The assistants (one per graph, at its latest version), by graph id or name."""
        refuse_unsupported(body, "assistants.search")
        value: dict[str, Any] = {
            "graph_id": body.graph_id,
            "metadata": dict(body.metadata or {}),
            "limit": body.limit,
            "offset": body.offset,
        }
        visible = caller.decide_now("assistants", "search", value)
        found = server.assistants.search(body.graph_id, body.name)
        wanted = value.get("metadata") or {}  # as the handler left it (LangGraph's server searches by it)
        documents = [server.versions.latest(a).to_json() for a in found]
        documents = [d for d in documents if all(d["metadata"].get(k) == v for k, v in wanted.items())]
        if visible is not None:
            documents = [d for d in documents if visible.matches(d["metadata"])]
        return documents[body.offset : body.offset + body.limit]

    def readable(assistant_id: str, caller: Caller) -> Assistant:
        """The assistant at its latest version, if the caller's `assistants.read` handler lets them see it (else the
        404 of none)."""
        found = server.versions.latest(server.assistant(assistant_id))
        visible = caller.decide_now("assistants", "read", {"assistant_id": found.assistant_id, "metadata": {}})
        if visible is not None and not visible.matches(found.to_json()["metadata"]):
            raise ApiError(404, "assistant-not-found", f"no assistant {assistant_id!r}")
        return found

    @router.get("/assistants/{assistant_id}")
    def get(assistant_id: str, caller: CallerOf) -> dict[str, Any]:
        """One assistant at its latest version, by assistant id or graph id."""
        return readable(assistant_id, caller).to_json()

    @router.get("/assistants/{assistant_id}/graph")
    def graph(assistant_id: str, caller: CallerOf, xray: int | bool = False) -> dict[str, Any]:
        """The graph's nodes and edges at its latest version, as LangGraph draws them."""
        drawn: dict[str, Any] = readable(assistant_id, caller).app.graph.get_graph(xray=xray).to_json()
        return drawn

    @router.get("/assistants/{assistant_id}/schemas")
    def schemas(assistant_id: str, caller: CallerOf) -> dict[str, Any]:
        """JSON schemas of the graph's input, output and state at its latest version."""
        return readable(assistant_id, caller).schemas()

    @router.get("/assistants/{assistant_id}/svg")
    def svg(assistant_id: str, caller: CallerOf) -> Response:
        """The graph at its latest version drawn offline as SVG (what `agentmap export --format svg` writes; the
        viewer shows it)."""
        return Response(readable(assistant_id, caller).svg(), media_type="image/svg+xml")

    @router.get("/assistants/{assistant_id}/mermaid", response_class=PlainTextResponse)
    def mermaid(assistant_id: str, caller: CallerOf) -> str:
        """The graph at its latest version as Mermaid text (what `agentmap export --format mermaid` writes)."""
        return readable(assistant_id, caller).mermaid()

    return router


def _add_viewer(app: FastAPI, server: Server) -> None:
    static = resources.files("agentmap.server") / "static"

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(graph: str | None = None) -> str:
        """The run viewer, its first view drawn here (see `_viewer`)."""
        return viewer_page(server, graph)

    app.mount("/viewer", StaticFiles(directory=str(static)), name="viewer")


def _status(err: AgentMapError) -> int:
    if isinstance(err, ApiError):
        return err.status
    if isinstance(err, WorkflowFileError | GraphNotFoundError):
        return 404
    if isinstance(err, NodeError):
        return 500
    return 422


_REFUSALS = {
    400: ("bad-request", "send one JSON document; /openapi.json describes every body"),
    404: ("not-supported", "/openapi.json lists every endpoint, the viewer's files are under /viewer/"),
    405: ("not-supported", "/openapi.json lists the methods of every endpoint"),
}
"""The code and hint of a refusal by FastAPI or Starlette themselves (a body not parsed, a path or method unknown)."""


def _add_errors(app: FastAPI) -> None:
    """Every error the app answers, in the one shape of `error_body` (csv_specs/serve.md, "Errors and logs")."""

    def answer(
        request: Request, status: int, code: str, message: str, hint: str, headers: dict[str, str] | None = None
    ) -> JSONResponse:
        found = request.scope.get("state", {}).get("request_id")
        body = error_body(code, _printable(message), hint=_printable(hint), request_id=str(found) if found else None)
        return JSONResponse(body, status_code=status, headers=headers)

    @app.exception_handler(AgentMapError)
    async def agentmap_error(request: Request, err: AgentMapError) -> JSONResponse:
        headers = err.headers if isinstance(err, ApiError) else None
        return answer(request, _status(err), err.code, err.message, err.hint or "", headers=headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, err: RequestValidationError) -> JSONResponse:
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()]
        message = "the request does not fit the API: " + "; ".join(problems)
        return answer(request, 422, "bad-request", message, "/openapi.json describes every body")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        code, hint = _REFUSALS.get(err.status_code, ("http-error", "/openapi.json describes the API"))
        message = f"{request.method} {request.url.path} was refused: {err.detail}"
        return answer(request, err.status_code, code, message, hint, headers=getattr(err, "headers", None))

    @app.exception_handler(Exception)
    async def internal(request: Request, err: Exception) -> JSONResponse:
        found = request.scope.get("state", {}).get("request_id")
        _log.exception("request_id=%s failed", found)
        message = f"the server failed: {type(err).__name__}: {err}"
        return answer(request, 500, "internal-error", message, "the server log has the traceback under this request id")


def _printable(text: str) -> str:
    """`text` with what UTF-8 cannot carry (a lone surrogate an exception quoted) escaped, so the answer is sent."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
