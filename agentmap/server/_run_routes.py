"""Routes for runs: on a thread (create, wait, stream, list, get, cancel, join, join_stream) and stateless."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Header, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from agentmap.server._bodies import api_router
from agentmap.server._encode import dumps
from agentmap.server._models import ApiError, RunCreate
from agentmap.server._records import RunRecord
from agentmap.server._run_auth import Admitted, admit_run
from agentmap.server._run_request import resolve_request, stream_modes
from agentmap.server._run_start import start_run
from agentmap.server._run_states import RunStatus
from agentmap.server._runs import Run, RunRequest
from agentmap.server._users import CallerOf

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._filters import Filter

__all__ = ["run_routes"]


def run_routes(server: Server) -> APIRouter:
    """The run routes."""
    router = api_router(tags=["runs"])
    _thread_run_routes(server, router)
    _run_lookup_routes(server, router)
    _stateless_routes(server, router)
    return router


def _where(run: Run) -> str:
    return f"/threads/{run.thread_id}/runs/{run.run_id}" if not run.request.stateless else f"/runs/{run.run_id}"


def _located(run: Run, content: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(content, status_code=status, headers={"Content-Location": _where(run)})


def _sse_line(event_id: str | None, event: str, data: Any) -> str:
    """One event for the SSE stream, with its id (what a client reconnecting sends back as `Last-Event-ID`); a
    comment line for an empty one (keeps proxies from closing a quiet stream; clients skip it)."""
    if not event:
        return ": heartbeat\n\n"
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\ndata: {dumps(data)}\n\n"


def _stream_headers(thread_id: str | None, run_id: str, where: str) -> dict[str, str]:
    """A stream's headers; on a thread, `Location` names its `join_stream`, where a client that lost the stream
    reconnects (with `Last-Event-ID`), as langgraph-sdk does on its own."""
    headers = {"Content-Location": where, "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    if thread_id is not None:
        headers["Location"] = f"/threads/{thread_id}/runs/{run_id}/stream"
    return headers


def _sse(
    server: Server, run: Run, modes: tuple[str, ...] | None, cancel_on_disconnect: bool, start: int = 0
) -> StreamingResponse:
    async def events() -> AsyncIterator[str]:
        try:
            async for event_id, event, data in server.runs.sharing.follow_here(
                run, modes, server.config.heartbeat, start
            ):
                yield _sse_line(event_id, event, data)
        finally:
            if cancel_on_disconnect and not run.done.is_set():
                run.cancel("the client disconnected")

    headers = _stream_headers(None if run.request.stateless else run.thread_id, run.run_id, _where(run))
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


def _sse_elsewhere(
    server: Server, thread_id: str, run_id: str, modes: tuple[str, ...] | None, after: int = 0
) -> StreamingResponse:
    async def events() -> AsyncIterator[str]:
        async for event_id, event, data in server.runs.sharing.follow_elsewhere(
            thread_id, run_id, modes, server.config.heartbeat, after
        ):
            yield _sse_line(event_id, event, data)

    headers = _stream_headers(thread_id, run_id, f"/threads/{thread_id}/runs/{run_id}")
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


async def _wait(server: Server, run: Run) -> JSONResponse:
    """The run's result once it ended, wherever it ended (`RunAcceptance.outcome`)."""
    return _located(run, await server.runs.acceptor.outcome(run))


def _thread_run_routes(server: Server, router: APIRouter) -> None:
    """Starting runs on a thread: create, wait, stream."""

    @router.post("/threads/{thread_id}/runs")
    async def create_run(thread_id: str, body: RunCreate, caller: CallerOf) -> JSONResponse:
        """Start a run in the background; returns the run (follow it with join or join_stream)."""
        run = await start_run(server, body, thread_id, "runs.create", caller)
        return _located(run, run.record())

    @router.post("/threads/{thread_id}/runs/wait")
    async def wait_run(thread_id: str, body: RunCreate, caller: CallerOf) -> JSONResponse:
        """Run and return the final values (with `__interrupt__` when it paused, `__error__` when it failed)."""
        return await _wait(server, await start_run(server, body, thread_id, "runs.wait", caller))

    @router.post("/threads/{thread_id}/runs/stream")
    async def stream_run(thread_id: str, body: RunCreate, caller: CallerOf) -> StreamingResponse:
        """Run and stream its events over SSE."""
        run = await start_run(server, body, thread_id, "runs.stream", caller)
        return _sse(server, run, None, body.on_disconnect == "cancel")


def _run_lookup_routes(server: Server, router: APIRouter) -> None:
    """A thread's runs once started: list, get, cancel, join, join_stream."""

    @router.get("/threads/{thread_id}/runs")
    def list_runs(
        thread_id: str,
        caller: CallerOf,
        limit: int = 10,
        offset: int = 0,
        status: str | None = None,
    ) -> list[dict[str, Any]]:
        """The thread's runs, newest first."""
        value: dict[str, Any] = {"thread_id": thread_id, "metadata": {}, "status": status}
        visible = caller.decide_now("threads", "search", value)  # LangGraph scopes runs to their thread
        server.thread(thread_id, visible)
        found = [_live(server, r) for r in server.store.runs.of_thread(thread_id, visible)]
        found = [r for r in found if status is None or r["status"] == status]
        return found[offset : offset + limit]

    @router.get("/threads/{thread_id}/runs/{run_id}")
    def get_run(thread_id: str, run_id: str, caller: CallerOf) -> dict[str, Any]:
        """One run."""
        visible = caller.decide_now("threads", "read", {"thread_id": thread_id, "run_id": run_id})
        return _record(server, thread_id, run_id, visible)

    @router.post("/threads/{thread_id}/runs/{run_id}/cancel")
    async def cancel_run(
        thread_id: str, run_id: str, caller: CallerOf, wait: int = 0, action: str = "interrupt"
    ) -> Response:
        """Stop a run after the step it is in, on whichever replica runs it (`action=rollback` is not supported).

        With `wait=1` the answer comes once the run has stopped, with an empty JSON body as LangGraph's server
        sends it.
        """
        if action != "interrupt":
            raise ApiError(422, "not-supported", f"cancel action {action!r} is not supported by agentmap serve")
        value = {"thread_id": thread_id, "run_id": run_id, "action": action}
        visible = await caller.decide("threads", "update", value)
        await run_in_threadpool(_record, server, thread_id, run_id, visible)
        await server.runs.acceptor.cancel_anywhere(run_id)
        if wait:
            await server.runs.acceptor.wait_record(thread_id, run_id)
            return JSONResponse({}, status_code=200)
        return Response(status_code=202)

    @router.get("/threads/{thread_id}/runs/{run_id}/join")
    async def join_run(thread_id: str, run_id: str, caller: CallerOf) -> JSONResponse:
        """Wait for a run to end (on any replica) and return its result."""
        visible = await caller.decide("threads", "read", {"thread_id": thread_id, "run_id": run_id})
        await run_in_threadpool(_record, server, thread_id, run_id, visible)
        run = server.runs.queue.runs.get(run_id)
        if run is not None:
            return await _wait(server, run)
        record = await server.runs.acceptor.wait_record(thread_id, run_id)
        if record is not None and record.result is not None:
            return JSONResponse(record.result, headers={"X-Run": run_id})
        snapshot = await run_in_threadpool(server.snapshot, server.thread(thread_id))
        return JSONResponse(dict(snapshot.values) if snapshot is not None else {}, headers={"X-Run": run_id})

    @router.get("/threads/{thread_id}/runs/{run_id}/stream")
    async def join_stream(
        thread_id: str,
        run_id: str,
        caller: CallerOf,
        stream_mode: list[str] | None = None,
        cancel_on_disconnect: bool = False,
        last_event_id: Annotated[str | None, Header()] = None,
    ) -> StreamingResponse:
        """Stream a run's events until it ends: from its start, or after the event whose id a reconnecting client
        sends as `Last-Event-ID`."""
        visible = await caller.decide("threads", "read", {"thread_id": thread_id, "run_id": run_id})
        await run_in_threadpool(_record, server, thread_id, run_id, visible)
        modes = stream_modes(stream_mode) if stream_mode else None
        start = await server.runs.sharing.resume_point(run_id, last_event_id) if last_event_id else 0
        run = server.runs.sharing.streamed(run_id)
        if server.store.shared and last_event_id:  # resumed in the store's order, on any replica
            return _sse_elsewhere(server, thread_id, run_id, modes, start)
        if run is None:  # running on another replica (or ended): its events come from the run store, if shared
            return _sse_elsewhere(server, thread_id, run_id, modes)
        return _sse(server, run, modes, cancel_on_disconnect, start)


def _stateless_routes(server: Server, router: APIRouter) -> None:
    """Runs without a thread: create, wait, stream, batch."""

    @router.post("/runs")
    async def create_stateless(body: RunCreate, caller: CallerOf) -> JSONResponse:
        """Start a run without a thread, in the background."""
        run = await start_run(server, body, None, "runs.create", caller)
        return _located(run, run.record())

    @router.post("/runs/wait")
    async def wait_stateless(body: RunCreate, caller: CallerOf) -> JSONResponse:
        """Run without a thread and return the final values."""
        return await _wait(server, await start_run(server, body, None, "runs.wait", caller))

    @router.post("/runs/stream")
    async def stream_stateless(body: RunCreate, caller: CallerOf) -> StreamingResponse:
        """Run without a thread and stream its events over SSE."""
        run = await start_run(server, body, None, "runs.stream", caller)
        return _sse(server, run, None, body.on_disconnect == "cancel")

    @router.post("/runs/batch")
    async def batch(bodies: list[RunCreate], caller: CallerOf) -> list[dict[str, Any]]:
        """Start several runs without threads; returns the runs."""
        admitted = [await admit_run(server, b, b.thread_id, caller) for b in bodies]

        def resolved(run: Admitted) -> RunRequest:
            return resolve_request(
                server, run.body, run.body.thread_id, "runs.create_batch", caller=caller, visible=run.visible
            )

        requests = [await run_in_threadpool(resolved, a) for a in admitted]
        started = [
            await server.runs.acceptor.submit(r, here=False, run_id=a.run_id)
            for r, a in zip(requests, admitted, strict=True)
        ]
        return [r.record() for r in started if r is not None]


def _record(server: Server, thread_id: str, run_id: str, visible: Filter | None) -> dict[str, Any]:
    server.thread(thread_id, visible)
    record = server.store.runs.get(thread_id, run_id, visible)
    if record is None:
        raise ApiError(404, "run-not-found", f"thread {thread_id!r} has no run {run_id!r}")
    return _live(server, record)


def _live(server: Server, record: RunRecord) -> dict[str, Any]:
    """A stored run as LangGraph's server returns it (the live view of a run executing here)."""
    run = server.runs.queue.runs.get(record.run_id)
    if run is not None and run.status != RunStatus.PENDING:
        return run.record()
    return record.public()
