"""Each assistant of `agentmap serve` as an AG-UI agent: `POST /agui/{assistant}` runs it and streams AG-UI events.

AG-UI (the Agent-User Interaction protocol) is what CopilotKit and other front ends speak: the client posts a
`RunAgentInput` (thread, messages, state, answers to a pause) and reads the run as server-sent events. Here a
request is a run of the server's queue (`_run_start.start_run`, as `runs.stream`, MCP and A2A start theirs), on the
thread the request names, under the server's rules (its guard and API key, its users' auth handlers and quotas, its
workers, the thread's order, the one answer rule), executed on whichever replica claims it; its events, shared
between replicas (`_run_events.py`), become AG-UI's (`agui_events.py`). The request is read in `agui_input.py`.

Why not the official `ag-ui-langgraph` translation: it runs the compiled graph itself, in the request's task
(`graph.astream_events`), so a run would bypass the queue, leases, replicas and the checks of `start_run`; the events
are written here from the run's own events instead, with the protocol's models (`ag-ui-protocol`, the `agui` extra).
Full story: csv_specs/agui.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from agentmap.errors import ErrorCode
from agentmap.server._bodies import api_router
from agentmap.server._encode import jsonable
from agentmap.server._models import ApiError
from agentmap.server._run_start import start_run
from agentmap.server._users import Caller, caller_in

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent, RunAgentInput

    from agentmap.protocols.agui_events import Translation
    from agentmap.server._app import Server
    from agentmap.server._runs import Run

__all__ = ["agui_routes"]

_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def agui_routes(server: Server) -> APIRouter:
    """The AG-UI route of every assistant (a 501 naming the extra when `ag-ui-protocol` is not installed)."""
    router = api_router(tags=["agui"])
    try:
        from ag_ui.core import RunAgentInput
    except ImportError:

        @router.post("/agui/{key}", include_in_schema=False)
        def missing(key: str) -> None:
            raise ApiError(
                501,
                ErrorCode.MISSING_EXTRA,
                "AG-UI needs the ag-ui-protocol package, which is not installed on this server",
                hint='pip install "agentmap[agui]" and restart agentmap serve',
            )

        return router

    async def run_agent(key: str, body: RunAgentInput, request: Request) -> StreamingResponse:
        """Run the assistant (its id or graph id) as AG-UI asks: a new turn on the thread `threadId`, or the answer to
        its pause (`resume`, or `forwardedProps.command.resume`); the run's events as AG-UI server-sent events."""
        return await _run(server, key, body, caller_in(request.scope))

    run_agent.__annotations__["body"] = RunAgentInput  # the model itself: FastAPI cannot resolve a local's name
    router.post("/agui/{key}")(run_agent)
    return router


async def _run(server: Server, key: str, body: RunAgentInput, caller: Caller) -> StreamingResponse:
    """The request as a run of `caller` (with `--auth`: its `threads.read` handler's filter hides the threads of
    others, which are then not found; its `threads.create_run` handler is asked by `start_run`; its quota counts)."""
    from agentmap.protocols.agui_events import Translation
    from agentmap.protocols.agui_input import plan_run

    assistant = server.assistant(key)  # a 404 listing the graphs when unknown
    visible = await caller.decide("threads", "read", {"thread_id": body.thread_id})
    plan = await run_in_threadpool(plan_run, server, assistant, body, visible)
    versioned = body.protocol_version is not None
    translation = Translation(assistant, body.thread_id, body.run_id, versioned=versioned)
    if plan.body is None:  # the thread waits on a question the request does not answer: it is told again
        told = translation.paused(jsonable(plan.waiting), jsonable(plan.values))
        return StreamingResponse(_encoded(told), media_type="text/event-stream", headers=_HEADERS)
    run = await start_run(server, plan.body, body.thread_id, "AG-UI run", caller)
    headers = {**_HEADERS, "Content-Location": f"/threads/{run.thread_id}/runs/{run.run_id}"}
    return StreamingResponse(_events(server, run, translation), media_type="text/event-stream", headers=headers)


async def _encoded(events: list[BaseEvent]) -> AsyncIterator[str]:
    from ag_ui.encoder import EventEncoder

    encoder = EventEncoder()
    for event in events:
        yield encoder.encode(event)


async def _events(server: Server, run: Run, translation: Translation) -> AsyncIterator[str]:
    """The run's AG-UI events until it ends (wherever it ends); a client that goes away stops the run after its
    step, as the official translation stops its graph."""
    from ag_ui.encoder import EventEncoder

    from agentmap.protocols.agui_input import MODES

    encoder = EventEncoder()
    try:
        for event in translation.started(run.run_id):
            yield encoder.encode(event)
        async for _, name, data in server.runs.sharing.follow_here(run, MODES, server.config.heartbeat):
            if not name:
                yield ": heartbeat\n\n"
            for event in translation.event(name, data):
                yield encoder.encode(event)
        result: dict[str, Any] = await server.runs.acceptor.outcome(run)
        cancelled = run.cancelled.is_set() and not run.moved  # a run handed to another replica was not cancelled
        for event in translation.finished(result, cancelled=cancelled):
            yield encoder.encode(event)
    finally:
        if not run.done.is_set():
            run.cancel("the AG-UI client disconnected")
