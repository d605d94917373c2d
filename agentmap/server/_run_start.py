"""A run started: asked of the caller's auth handlers (`_run_auth.admit_run`), its thread made way for
(`multitask_strategy` `interrupt` or `rollback`, on any replica), its request checked (`_run_request.resolve_request`)
and submitted to the queue.

`start_run` is the one way in for the run routes, `/mcp`, `/a2a` and the AG-UI endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool

from agentmap.errors import ErrorCode
from agentmap.server._models import ApiError, RunCreate
from agentmap.server._run_auth import admit_run
from agentmap.server._run_request import resolve_request
from agentmap.server._runs import Run
from agentmap.server._users import Caller
from agentmap.server._versions import asked_version

if TYPE_CHECKING:
    from agentmap.server._app import Server

__all__ = ["QUEUED", "start_run"]

QUEUED = ("runs.create", "runs.create_batch")
"""Runs no client waits on here: any replica may claim them."""


async def start_run(server: Server, body: RunCreate, thread_id: str | None, what: str, caller: Caller) -> Run:
    """Start a run for `caller` (`_users.Caller`: its auth handlers asked, its user in the run): what the run routes,
    `/mcp`, `/a2a` and the AG-UI endpoint call.

    Raises:
        ApiError: The request does not fit (422), the thread is not found or another user's (404), busy for
            `reject` (409), refused by the auth handlers (403, their status, 500), or over the caller's quota (429).
    """
    admitted = await admit_run(server, body, thread_id, caller)
    body = admitted.body
    if thread_id is not None and body.multitask_strategy in ("interrupt", "rollback"):
        body = await _take_over(server, body, thread_id)
    on_loop = body.command is None and body.input is not None  # reads only the small thread table: stay on the loop
    assistant = server.assistant(body.assistant_id)
    if on_loop and thread_id is not None:  # unless it reads the thread's checkpoint (its revision, its values)
        record = server.store.threads.get(thread_id)
        on_loop = record is None or record.metadata.get("graph_id") is None  # a thread that never ran
    if on_loop and thread_id is not None and isinstance(body.input, Mapping):
        on_loop = assistant.app.check_state(body.input) is None
    if on_loop:  # nor compiles a version this replica has not compiled yet
        on_loop = asked_version(body.config) is None and server.versions.latest_compiled(assistant)
    if on_loop:
        request = resolve_request(server, body, thread_id, what, caller=caller, visible=admitted.visible)
    else:  # a resume (or a continue) reads the checkpoint, which may wait on the checkpointer's lock
        request = await run_in_threadpool(
            lambda: resolve_request(server, body, thread_id, what, caller=caller, visible=admitted.visible)
        )
    reject = bool(request.thread_id) and request.multitask_strategy == "reject"
    run = await server.runs.acceptor.submit(
        request, here=what not in QUEUED, reject_if_busy=reject, run_id=admitted.run_id
    )
    if run is None:
        raise ApiError(
            409,
            ErrorCode.THREAD_BUSY,
            f"thread {request.thread_id!r} has a run in progress",
            hint="wait for it (runs.join), or send multitask_strategy='enqueue' to queue this run",
        )
    return run


async def _take_over(server: Server, body: RunCreate, thread_id: str) -> RunCreate:
    """Make way for a run sent with `interrupt` or `rollback` on a thread that has runs (on any replica).

    `interrupt`: they stop after the step they are in (ending `interrupted`, their steps kept) and this run
    comes next. `rollback`: they stop, their records are deleted, and this run starts from the checkpoint the
    first of them started from (their steps are left off the thread's state; a thread they began is emptied).
    """
    strategy = body.multitask_strategy
    stopped = await server.runs.acceptor.stop_thread(
        thread_id, f"replaced by a newer run (multitask_strategy={strategy!r})"
    )
    if strategy == "interrupt" or not stopped:
        return body
    for run_id in stopped:
        await server.runs.acceptor.wait_record(thread_id, run_id)
    before = await run_in_threadpool(_checkpoint_before, server, thread_id, set(stopped))
    await server.runs.acceptor.delete_runs(stopped)
    if before is None or body.checkpoint_id or body.checkpoint:
        return body
    return body.model_copy(update={"checkpoint_id": before})


def _checkpoint_before(server: Server, thread_id: str, runs: set[str]) -> str | None:
    """The checkpoint the first of `runs` started from; None (the checkpoints deleted) when they began the thread."""
    record = server.thread(thread_id)
    assistant = server.thread_view(record)
    if assistant is None:
        return None
    graph = assistant.app.graph
    first = None
    for snapshot in graph.get_state_history({"configurable": {"thread_id": thread_id}}):  # newest first
        if snapshot.metadata and snapshot.metadata.get("run_id") in runs:
            first = snapshot
    if first is None:
        return None
    parent = (first.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    if parent is None:
        server.checkpointer.delete_thread(thread_id)
    return parent
