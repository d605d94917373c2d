"""Routes for runs: on a thread (create, wait, stream, list, get, cancel, join, join_stream) and stateless."""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from agentmap.agents.questions import check_answer
from agentmap.runtime.inputs import MissingState, missing_state
from agentmap.server._encode import dumps
from agentmap.server._models import ApiError, RunCreate, check_json, check_thread_id, refuse_unsupported
from agentmap.server._runs import STREAM_MODES, Run, RunRequest
from agentmap.server._store import public_run
from agentmap.server._threads import snapshot_of
from agentmap.server._webhooks import check_webhook

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._graphs import Assistant

__all__ = ["run_routes"]

_log = logging.getLogger("agentmap.server")

_QUEUED = ("runs.create", "runs.create_batch")
"""Runs no client waits on here: any replica may claim them."""


def _modes(value: str | list[str] | None, default: tuple[str, ...] = ("values",)) -> tuple[str, ...]:
    if value is None:
        return default
    modes = (value,) if isinstance(value, str) else tuple(value)
    for mode in modes:
        if mode not in STREAM_MODES:
            raise ApiError(
                422,
                "not-supported",
                f"stream mode {mode!r} is not supported by agentmap serve",
                hint=f"use one or more of: {', '.join(STREAM_MODES)}",
            )
    return modes or ("values",)


def _resume(snapshot: Any, command: dict[str, Any], thread_id: str, saver: Any, claimant: str | None) -> Any:
    """The `Command` that resumes a paused thread, its answer checked against the question asked and claimed
    (one answer per pause: a second one is `already-answered`, HTTP 409; `claimant` may claim it again)."""
    from agentmap.errors import ConfigError
    from agentmap.runtime.answers import claim_answers

    try:
        answers, resume = _answers(snapshot, command, thread_id, saver)
        claim_answers(saver, snapshot.config, answers, thread_id, claimant)
    except ConfigError as exc:
        if exc.code != "already-answered":
            raise
        raise ApiError(409, exc.code, exc.message, hint=exc.hint) from None
    return resume


def _answers(snapshot: Any, command: dict[str, Any], thread_id: str, saver: Any) -> tuple[dict[str, Any], Any]:
    """The answers by interrupt id, and the `Command` resuming with them."""
    from langgraph.types import Command

    from agentmap.runtime.answers import refuse_if_answered

    for key in command:
        if key != "resume":
            raise ApiError(
                422,
                "not-supported",
                f"command {key!r} is not supported by agentmap serve",
                hint='resume a paused run with command={"resume": answer}',
            )
    pending = list(snapshot.interrupts) if snapshot is not None else []
    if not pending:
        if snapshot is not None and snapshot.next and command.get("resume") is not None:  # moved on, unfinished
            refuse_if_answered(saver, command["resume"], thread_id)
        raise ApiError(
            409,
            "nothing-to-resume",
            f"thread {thread_id!r} has no paused run to resume",
            hint="threads.get_state(thread_id)['interrupts'] lists what a thread waits for",
        )
    answer = command.get("resume")
    ids = {i.id for i in pending}
    if isinstance(answer, dict) and answer and set(answer) <= ids:
        by_id = {i.id: i for i in pending}
        answers = {k: check_answer(by_id[k].value, v) for k, v in answer.items()}
        return answers, Command(resume=answers)
    if len(pending) > 1:
        raise ApiError(
            422,
            "ambiguous-resume",
            f"thread {thread_id!r} waits on {len(pending)} questions; answer each by its interrupt id",
            hint='command={"resume": {"<interrupt id>": answer, ...}}',
        )
    checked = check_answer(pending[0].value, answer)
    return {pending[0].id: checked}, Command(resume=checked)


def run_routes(server: Server) -> APIRouter:
    """The run routes."""
    router = APIRouter(tags=["runs"])
    _thread_run_routes(server, router)
    _run_lookup_routes(server, router)
    _stateless_routes(server, router)
    return router


def _bind_thread(
    server: Server, body: RunCreate, assistant: Assistant, thread_id: str | None
) -> tuple[str | None, bool, dict[str, Any] | None]:
    """The run's thread (a new one for `on_completion="keep"`), whether it is stateless, and the binding to save.

    The binding (the thread's metadata naming its graph) is saved only once the run is known to be good.
    """
    stateless = thread_id is None
    if stateless and body.on_completion == "keep":
        import uuid

        thread_id, stateless = str(uuid.uuid4()), False
        server.store.create_thread(thread_id, {})
    if thread_id is None:
        return None, stateless, None
    record = server.store.thread(thread_id)
    if record is None and body.if_not_exists == "create":
        record = server.store.create_thread(check_thread_id(thread_id), {})
    if record is None:
        record = server.thread(thread_id)  # raises the 404
    bound = record["metadata"].get("graph_id")
    if bound is not None and bound != assistant.graph_id:
        raise ApiError(
            409,
            "thread-graph-mismatch",
            f"thread {thread_id!r} runs graph {bound!r}, not {assistant.graph_id!r}",
            hint="create a new thread for this assistant",
        )
    if bound is not None:
        return thread_id, stateless, None
    return (
        thread_id,
        stateless,
        {**record["metadata"], "graph_id": assistant.graph_id, "assistant_id": assistant.assistant_id},
    )


def _run_config(body: RunCreate) -> dict[str, Any]:
    """The run's LangGraph config: the body's, with the checkpoint to start from."""
    config = dict(body.config or {})
    configurable = dict(config.get("configurable") or {})
    checkpoint_id = body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id")
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    config["configurable"] = configurable
    return config


def _run_input(body: RunCreate, assistant: Assistant, thread_id: str | None, what: str, claimant: str) -> Any:
    """The input checked against the graph, or the `Command` resuming the thread's paused run.

    No input on a thread stopped before a node (`interrupt_before`/`interrupt_after`) continues it, as
    LangGraph's server does; on any other thread it starts a run with an empty input.
    """
    if body.command is None:
        if body.input is None and thread_id is not None:
            snapshot = snapshot_of(assistant, thread_id)
            if snapshot is not None and snapshot.next and not snapshot.interrupts:
                return None
        return assistant.check_input(body.input)
    if body.input is not None:
        raise ApiError(422, "bad-request", f"{what}: give input or command, not both")
    if thread_id is None:
        raise ApiError(422, "nothing-to-resume", f"{what}: a stateless run has nothing to resume")
    saver = assistant.app.graph.checkpointer
    return _resume(snapshot_of(assistant, thread_id), body.command, thread_id, saver, claimant)


def _resolve(
    server: Server, body: RunCreate, thread_id: str | None, what: str, claimant: str | None = None
) -> RunRequest:
    """Check a run's body against its assistant and thread; bind an unbound thread to the graph.

    `claimant` names who claims a resume's answer: a new run's own, or the one recorded with a run taken over
    (whose webhook was checked when it was accepted, maybe by another replica: it is called as recorded).
    """
    import uuid

    if claimant is None and body.webhook is not None:
        check_webhook(body.webhook, server.config.webhook_hosts)
    claimant = claimant or uuid.uuid4().hex
    refuse_unsupported(body, what)
    for name in ("input", "command", "config", "metadata"):
        check_json(getattr(body, name), name)
    assistant = server.assistant(body.assistant_id)
    thread_id, stateless, binding = _bind_thread(server, body, assistant, thread_id)
    config = _run_config(body)
    run_input = _run_input(body, assistant, thread_id, what, claimant)
    metadata = dict(body.metadata or {})
    found = _missing(assistant, thread_id, run_input)
    if found is not None:
        keys = ", ".join(repr(k) for k in found.keys)
        if server.config.strict:
            raise ApiError(
                422,
                "missing-state",
                f"{what}: {found.message}",
                hint=f"pass {keys} in the run's input, e.g. {json.dumps(found.example, default=str)}",
            )
        _log.warning("%s of %s on %s: %s", what, assistant.graph_id, thread_id or "no thread", found.message)
        metadata["warnings"] = [*metadata.get("warnings", ()), found.message]
    if binding is not None and thread_id is not None:  # only once the run is known to be good
        server.store.set_metadata(thread_id, binding)
    kwargs: dict[str, Any] = {}
    durability = body.durability or server.config.durability
    if durability is not None and not stateless:  # a stateless run writes no checkpoint
        kwargs["durability"] = durability
    kwargs.update(_breakpoints(body, assistant, stateless, what))
    return RunRequest(
        assistant=assistant,
        thread_id=thread_id,
        input=run_input,
        stream_modes=_modes(body.stream_mode, () if what == "runs.wait" else ("values",)),
        config=config,
        metadata=metadata,
        kwargs=kwargs,
        multitask_strategy=body.multitask_strategy or "enqueue",
        stateless=stateless,
        payload={
            "body": body.model_dump(mode="json", exclude_none=True),
            "thread_id": thread_id,
            "what": what,
            "claimant": claimant,
        },
    )


def _missing(assistant: Assistant, thread_id: str | None, run_input: Any) -> MissingState | None:
    """What a run starting from `run_input` lacks of the inputs no node writes (`agentmap run`'s check).

    A run on a thread starts from the thread's values too: they are read only when the input lacks a key.
    """
    if not isinstance(run_input, Mapping):  # a resume, or a thread continued where it stopped
        return None
    found = missing_state(assistant.app.spec, run_input)
    if found is not None and thread_id is not None:
        snapshot = snapshot_of(assistant, thread_id)
        if snapshot is not None and snapshot.values:
            found = missing_state(assistant.app.spec, {**snapshot.values, **run_input})
    return found


def _breakpoints(body: RunCreate, assistant: Assistant, stateless: bool, what: str) -> dict[str, Any]:
    """`interrupt_before` / `interrupt_after` for LangGraph, once every node they name is known to pause there.

    Raises:
        ApiError: A stateless run (nothing would keep the paused run), a name that is no node of the graph,
            or a node run inside a fused chain (it is not a step of its own to stop at).
    """
    found: dict[str, Any] = {}
    nodes = [n.name for n in assistant.app.spec.nodes]
    fused = {name for chain in assistant.app.fused.values() for name in chain}
    for key in ("interrupt_before", "interrupt_after"):
        names = getattr(body, key)
        if not names:
            continue
        if stateless:
            raise ApiError(
                422,
                "not-supported",
                f"{what}: {key} needs a thread to keep the paused run",
                hint="create a thread (threads.create) and run on it",
            )
        for name in nodes if names == "*" else names:
            if name not in nodes:
                close = difflib.get_close_matches(name, nodes, n=1)
                raise ApiError(
                    422,
                    "bad-request",
                    f"{what}: {key} names {name!r}, which is no node of graph {assistant.graph_id!r}"
                    + (f"; did you mean {close[0]!r}?" if close else ""),
                    hint=f"nodes: {', '.join(nodes)}",
                )
            if name in fused and names != "*":
                raise ApiError(
                    422,
                    "not-supported",
                    f"{what}: node {name!r} runs inside a fused chain, so a run cannot stop {key[10:]} it",
                    hint="serve the workflow without chain fusion to stop at every node",
                )
        found[key] = names if names == "*" else list(names)
    return found


async def _start(server: Server, body: RunCreate, thread_id: str | None, what: str) -> Run:
    on_loop = body.command is None and body.input is not None  # reads only the small thread table: stay on the loop
    if on_loop and thread_id is not None and isinstance(body.input, Mapping):  # unless it reads the thread's values
        on_loop = missing_state(server.assistant(body.assistant_id).app.spec, body.input) is None
    if on_loop:
        request = _resolve(server, body, thread_id, what)
    else:  # a resume (or a continue) reads the checkpoint, which may wait on the checkpointer's lock
        request = await run_in_threadpool(_resolve, server, body, thread_id, what)
    reject = bool(request.thread_id) and request.multitask_strategy == "reject"
    run = await server.runs.submit(request, here=what not in _QUEUED, reject_if_busy=reject)
    if run is None:
        raise ApiError(
            409,
            "thread-busy",
            f"thread {request.thread_id!r} has a run in progress",
            hint="wait for it (runs.join), or send multitask_strategy='enqueue' to queue this run",
        )
    return run


def _where(run: Run) -> str:
    return f"/threads/{run.thread_id}/runs/{run.run_id}" if not run.request.stateless else f"/runs/{run.run_id}"


def _located(run: Run, content: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(content, status_code=status, headers={"Content-Location": _where(run)})


def _sse(server: Server, run: Run, modes: tuple[str, ...] | None, cancel_on_disconnect: bool) -> StreamingResponse:
    async def events() -> AsyncIterator[str]:
        try:
            async for event, data in run.follow(modes, server.config.heartbeat):
                # a comment line keeps proxies from closing a quiet stream; clients skip it
                yield f"event: {event}\ndata: {dumps(data)}\n\n" if event else ": heartbeat\n\n"
        finally:
            if cancel_on_disconnect and not run.done.is_set():
                server.runs.cancel(run, "the client disconnected")

    headers = {"Content-Location": _where(run), "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


def _sse_elsewhere(server: Server, thread_id: str, run_id: str, modes: tuple[str, ...] | None) -> StreamingResponse:
    async def events() -> AsyncIterator[str]:
        async for event, data in server.runs.follow_elsewhere(thread_id, run_id, modes, server.config.heartbeat):
            yield f"event: {event}\ndata: {dumps(data)}\n\n" if event else ": heartbeat\n\n"

    headers = {
        "Content-Location": f"/threads/{thread_id}/runs/{run_id}",
        "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",
    }
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


async def _wait(run: Run) -> JSONResponse:
    await run.done.wait()
    return _located(run, run.result())


def _thread_run_routes(server: Server, router: APIRouter) -> None:
    """Starting runs on a thread: create, wait, stream."""

    @router.post("/threads/{thread_id}/runs")
    async def create_run(thread_id: str, body: RunCreate) -> JSONResponse:
        """Start a run in the background; returns the run (follow it with join or join_stream)."""
        run = await _start(server, body, thread_id, "runs.create")
        return _located(run, run.record())

    @router.post("/threads/{thread_id}/runs/wait")
    async def wait_run(thread_id: str, body: RunCreate) -> JSONResponse:
        """Run and return the final values (with `__interrupt__` when it paused, `__error__` when it failed)."""
        return await _wait(await _start(server, body, thread_id, "runs.wait"))

    @router.post("/threads/{thread_id}/runs/stream")
    async def stream_run(thread_id: str, body: RunCreate) -> StreamingResponse:
        """Run and stream its events over SSE."""
        run = await _start(server, body, thread_id, "runs.stream")
        return _sse(server, run, None, body.on_disconnect == "cancel")


def _run_lookup_routes(server: Server, router: APIRouter) -> None:
    """A thread's runs once started: list, get, cancel, join, join_stream."""

    @router.get("/threads/{thread_id}/runs")
    def list_runs(thread_id: str, limit: int = 10, offset: int = 0, status: str | None = None) -> list[dict[str, Any]]:
        """The thread's runs, newest first."""
        server.thread(thread_id)
        found = [_live(server, r) for r in server.store.runs(thread_id)]
        found = [r for r in found if status is None or r["status"] == status]
        return found[offset : offset + limit]

    @router.get("/threads/{thread_id}/runs/{run_id}")
    def get_run(thread_id: str, run_id: str) -> dict[str, Any]:
        """One run."""
        return _record(server, thread_id, run_id)

    @router.post("/threads/{thread_id}/runs/{run_id}/cancel")
    async def cancel_run(thread_id: str, run_id: str, wait: int = 0, action: str = "interrupt") -> Response:
        """Stop a run after the step it is in, on whichever replica runs it (`action=rollback` is not supported).

        With `wait=1` the answer comes once the run has stopped, with an empty JSON body as LangGraph's server
        sends it.
        """
        if action != "interrupt":
            raise ApiError(422, "not-supported", f"cancel action {action!r} is not supported by agentmap serve")
        await run_in_threadpool(_record, server, thread_id, run_id)
        await server.runs.cancel_anywhere(run_id)
        if wait:
            await server.runs.wait_record(thread_id, run_id)
            return JSONResponse({}, status_code=200)
        return Response(status_code=202)

    @router.get("/threads/{thread_id}/runs/{run_id}/join")
    async def join_run(thread_id: str, run_id: str) -> JSONResponse:
        """Wait for a run to end (on any replica) and return its result."""
        await run_in_threadpool(_record, server, thread_id, run_id)
        run = server.runs.runs.get(run_id)
        if run is not None:
            return await _wait(run)
        record = await server.runs.wait_record(thread_id, run_id)
        if record is not None and record.get("result") is not None:
            return JSONResponse(record["result"], headers={"X-Run": run_id})
        snapshot = await run_in_threadpool(server.snapshot, server.thread(thread_id))
        return JSONResponse(dict(snapshot.values) if snapshot is not None else {}, headers={"X-Run": run_id})

    @router.get("/threads/{thread_id}/runs/{run_id}/stream")
    async def join_stream(
        thread_id: str,
        run_id: str,
        stream_mode: list[str] | None = None,
        cancel_on_disconnect: bool = False,
    ) -> StreamingResponse:
        """Stream a run's events (from its start) until it ends."""
        await run_in_threadpool(_record, server, thread_id, run_id)
        modes = _modes(stream_mode) if stream_mode else None
        run = server.runs.runs.get(run_id)
        if run is None:  # running on another replica (or ended): its events come from the run store
            return _sse_elsewhere(server, thread_id, run_id, modes)
        return _sse(server, run, modes, cancel_on_disconnect)


def _stateless_routes(server: Server, router: APIRouter) -> None:
    """Runs without a thread: create, wait, stream, batch."""

    @router.post("/runs")
    async def create_stateless(body: RunCreate) -> JSONResponse:
        """Start a run without a thread, in the background."""
        run = await _start(server, body, None, "runs.create")
        return _located(run, run.record())

    @router.post("/runs/wait")
    async def wait_stateless(body: RunCreate) -> JSONResponse:
        """Run without a thread and return the final values."""
        return await _wait(await _start(server, body, None, "runs.wait"))

    @router.post("/runs/stream")
    async def stream_stateless(body: RunCreate) -> StreamingResponse:
        """Run without a thread and stream its events over SSE."""
        run = await _start(server, body, None, "runs.stream")
        return _sse(server, run, None, body.on_disconnect == "cancel")

    @router.post("/runs/batch")
    async def batch(bodies: list[RunCreate]) -> list[dict[str, Any]]:
        """Start several runs without threads; returns the runs."""
        requests = [await run_in_threadpool(_resolve, server, b, b.thread_id, "runs.create_batch") for b in bodies]
        started = [await server.runs.submit(r, here=False) for r in requests]
        return [r.record() for r in started if r is not None]


def _record(server: Server, thread_id: str, run_id: str) -> dict[str, Any]:
    server.thread(thread_id)
    record = server.store.run(thread_id, run_id)
    if record is None:
        raise ApiError(404, "run-not-found", f"thread {thread_id!r} has no run {run_id!r}")
    return _live(server, record)


def _live(server: Server, record: dict[str, Any]) -> dict[str, Any]:
    """A stored run as LangGraph's server returns it (the live view of a run executing here)."""
    run = server.runs.runs.get(record["run_id"])
    if run is not None and run.status != "pending":
        return run.record()
    return public_run(record)
