"""Routes for threads (create, get, search, state, history, delete), and the thread/state JSON shapes."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Response

from agentmap.errors import ConfigError, ErrorCode
from agentmap.server._bodies import api_router
from agentmap.server._encode import jsonable
from agentmap.server._models import (
    ApiError,
    HistoryRequest,
    StateUpdate,
    ThreadCreate,
    ThreadSearch,
    check_json,
    refuse_unsupported,
)
from agentmap.server._records import ServerThreadStatus, ThreadRecord
from agentmap.server._users import Caller, CallerOf

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._auth import Action
    from agentmap.server._graphs import Assistant

__all__ = ["readable", "thread_json", "thread_routes"]

_log = logging.getLogger("agentmap.server")


def _checkpoint(config: Any) -> dict[str, Any] | None:
    if not config:
        return None
    conf = config.get("configurable", {})
    return {
        "thread_id": conf.get("thread_id"),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf.get("checkpoint_id"),
        "checkpoint_map": conf.get("checkpoint_map"),
    }


def state_json(snapshot: Any, thread_id: str) -> dict[str, Any]:
    """A LangGraph `StateSnapshot` (or None for a thread that never ran) as the server's `ThreadState`."""
    if snapshot is None:
        empty = {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": None, "checkpoint_map": None}
        return {
            "values": {},
            "next": [],
            "checkpoint": empty,
            "metadata": {},
            "created_at": None,
            "parent_checkpoint": None,
            "tasks": [],
            "interrupts": [],
        }
    return {
        "values": jsonable(snapshot.values),
        "next": list(snapshot.next),
        "checkpoint": _checkpoint(snapshot.config),
        "metadata": jsonable(snapshot.metadata or {}),
        "created_at": snapshot.created_at,
        "parent_checkpoint": _checkpoint(snapshot.parent_config),
        "tasks": [
            {
                "id": t.id,
                "name": t.name,
                "error": None if t.error is None else repr(t.error),
                "interrupts": jsonable(t.interrupts),
                "checkpoint": None,
                "state": None,
                "result": jsonable(t.result),
            }
            for t in snapshot.tasks
        ],
        "interrupts": jsonable(snapshot.interrupts),
    }


def thread_json(server: Server, record: ThreadRecord) -> dict[str, Any]:
    """A thread record with its current values and pending interrupts (none shown when the revision it runs cannot
    be read: the thread is still listed, and `threads.get_state` or a run on it says why)."""
    try:
        snapshot = server.snapshot(record)
    except ConfigError as err:  # its revision unknown to the database, damaged, or no longer compiling
        _log.warning("%s", err.message)
        snapshot = None
    interrupts: dict[str, list[Any]] = {}
    if snapshot is not None:
        for task in snapshot.tasks:
            if task.interrupts:
                interrupts[task.id] = jsonable(task.interrupts)
    return {
        "thread_id": record.thread_id,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "metadata": record.metadata,
        "status": _status(server, record),
        "values": jsonable(snapshot.values) if snapshot is not None else None,
        "interrupts": interrupts,
        "config": {},
    }


def _status(server: Server, record: ThreadRecord) -> ServerThreadStatus:
    """A thread's status: `busy` while a run of it is pending or running on any replica, else as the store has it."""
    return ServerThreadStatus.BUSY if server.store.threads.busy(record.thread_id) else record.status


def thread_routes(server: Server) -> APIRouter:
    """The `/threads` routes (runs on a thread are in `_run_routes`)."""
    router = api_router(tags=["threads"])
    _thread_record_routes(server, router)
    _thread_state_routes(server, router)
    return router


def readable(server: Server, caller: Caller, thread_id: str, action: Action = "read") -> ThreadRecord:
    """The thread, if the caller's `threads` handler of `action` lets them see it (else the 404 of none), from a
    route's worker thread."""
    return server.thread(thread_id, caller.decide_now("threads", action, {"thread_id": thread_id}))


def _thread_record_routes(server: Server, router: APIRouter) -> None:
    """Threads themselves: create, search, get, delete."""
    threads = server.store.threads

    @router.post("/threads")
    def create_thread(body: ThreadCreate, caller: CallerOf) -> dict[str, Any]:
        """Create a thread (`if_exists: do_nothing` returns the existing one, if the caller may read it)."""
        refuse_unsupported(body, "threads.create")
        thread_id = body.thread_id or str(uuid.uuid4())
        value: dict[str, Any] = {
            "thread_id": thread_id,
            "metadata": dict(body.metadata or {}),
            "if_exists": body.if_exists or "raise",
        }
        visible = caller.decide_now("threads", "create", value)
        metadata = dict(value.get("metadata") or {})  # as the handler left it: an owner it stamped is kept
        check_json(metadata, "metadata")
        graph_id = metadata.get("graph_id")
        if graph_id is not None:
            metadata["graph_id"] = server.assistant(str(graph_id)).graph_id
        record = threads.create(thread_id, metadata)
        if record is None:
            existing = threads.get(thread_id, visible) if body.if_exists == "do_nothing" else None
            if existing is not None:
                return thread_json(server, existing)
            raise ApiError(409, "thread-exists", f"thread {thread_id!r} already exists", hint='if_exists="do_nothing"')
        return thread_json(server, record)

    @router.post("/threads/search")
    def search_threads(body: ThreadSearch, caller: CallerOf) -> list[dict[str, Any]]:
        """Threads by metadata, ids and status, newest first (those the caller's filter lets them see)."""
        refuse_unsupported(body, "threads.search")
        value: dict[str, Any] = {
            "metadata": dict(body.metadata or {}),
            "values": None,
            "status": body.status,
            "limit": body.limit,
            "offset": body.offset,
            "ids": body.ids,
        }
        visible = caller.decide_now("threads", "search", value)
        wanted = value.get("metadata") or {}  # as the handler left it (LangGraph's server searches by it)
        found = [r for r in threads.all(body.ids, visible) if all(r.metadata.get(k) == v for k, v in wanted.items())]
        if body.status is not None:  # "busy" is read from the runs, the rest from the thread's record
            found = [r for r in found if _status(server, r) == body.status]
        return [thread_json(server, r) for r in found[body.offset : body.offset + body.limit]]

    @router.get("/threads/{thread_id}")
    def get_thread(thread_id: str, caller: CallerOf) -> dict[str, Any]:
        """One thread, with its values and pending interrupts."""
        return thread_json(server, readable(server, caller, thread_id))

    @router.delete("/threads/{thread_id}", status_code=204)
    def delete_thread(thread_id: str, caller: CallerOf) -> Response:
        """Forget a thread: its record, its runs and its checkpoints."""
        readable(server, caller, thread_id, "delete")
        if threads.busy(thread_id):
            raise ApiError(
                409, ErrorCode.THREAD_BUSY, f"thread {thread_id!r} has a run in progress", hint="cancel it first"
            )
        threads.delete(thread_id)
        delete = getattr(server.checkpointer, "delete_thread", None)
        if callable(delete):
            delete(thread_id)
        return Response(status_code=204)


def _thread_state_routes(server: Server, router: APIRouter) -> None:
    """A thread's state: latest, at a checkpoint, and its history."""

    def _state(thread_id: str, caller: Caller, checkpoint_id: str | None = None) -> dict[str, Any]:
        record = readable(server, caller, thread_id)
        return state_json(server.snapshot(record, checkpoint_id), thread_id)

    @router.get("/threads/{thread_id}/state")
    def get_state(thread_id: str, caller: CallerOf, subgraphs: bool = False) -> dict[str, Any]:
        """The thread's latest state: values, next nodes, pending interrupts, checkpoint."""
        return _state(thread_id, caller)

    @router.get("/threads/{thread_id}/state/{checkpoint_id}")
    def get_state_at(thread_id: str, checkpoint_id: str, caller: CallerOf, subgraphs: bool = False) -> dict[str, Any]:
        """The thread's state at one checkpoint."""
        return _state(thread_id, caller, checkpoint_id)

    @router.post("/threads/{thread_id}/state/checkpoint")
    def get_state_at_checkpoint(thread_id: str, body: dict[str, Any], caller: CallerOf) -> dict[str, Any]:
        """The thread's state at the checkpoint named in the body."""
        checkpoint = body.get("checkpoint") or {}
        return _state(thread_id, caller, checkpoint.get("checkpoint_id") if isinstance(checkpoint, dict) else None)

    @router.post("/threads/{thread_id}/state")
    def update_state(thread_id: str, body: StateUpdate, caller: CallerOf) -> dict[str, Any]:
        """Write `values` into the thread's state at its latest checkpoint (or the one named): a new checkpoint.

        A run from it (its `checkpoint_id`, no input) goes on with the changed state: LangGraph's fork. An AgentMap
        node picks its next node itself, so without `as_node` the new checkpoint keeps the next nodes of the one
        it was made from: the fork runs what would have run there.
        """
        refuse_unsupported(body, "threads.update_state")
        record = readable(server, caller, thread_id, "update")
        if server.store.threads.busy(thread_id):
            raise ApiError(
                409, ErrorCode.THREAD_BUSY, f"thread {thread_id!r} has a run in progress", hint="wait for it"
            )
        checkpoint_id = body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id")
        assistant = server.thread_view(record, checkpoint_id)  # the graph of the revision that checkpoint ran
        snapshot = snapshot_of(assistant, thread_id, checkpoint_id)
        if assistant is None or snapshot is None:
            raise ApiError(404, "checkpoint-not-found", f"thread {thread_id!r} has no state yet", hint="run it first")
        check_json(body.values, "values")
        values = assistant.check_input(body.values, "values")
        graph = assistant.app.graph
        update: Any = values
        if body.as_node is None and snapshot.next:
            from langgraph.types import Command

            update = Command(update=values, goto=list(snapshot.next))
        from langgraph.errors import InvalidUpdateError

        at = _config(thread_id, snapshot.config["configurable"]["checkpoint_id"])
        at["configurable"]["checkpoint_ns"] = ""  # the saver writes the new checkpoint under the root namespace
        try:
            made = graph.update_state(at, update, as_node=body.as_node)  # type: ignore[arg-type]
        except (InvalidUpdateError, ValueError, KeyError) as exc:  # an unknown as_node, an update the state refuses
            why = f"the state of thread {thread_id!r} cannot take this update: {exc}"
            raise ApiError(
                422, ErrorCode.BAD_INPUT, why, hint="name a node of the graph as as_node, or leave it out"
            ) from None
        return {"checkpoint": _checkpoint(made)}

    @router.post("/threads/{thread_id}/history")
    def get_history(thread_id: str, body: HistoryRequest, caller: CallerOf) -> list[dict[str, Any]]:
        """The thread's states, newest first."""
        refuse_unsupported(body, "threads.get_history")
        record = readable(server, caller, thread_id)
        assistant = server.thread_view(record)
        if assistant is None:
            return []
        before = body.before.get("checkpoint_id") if isinstance(body.before, dict) else body.before
        config = _config(thread_id, (body.checkpoint or {}).get("checkpoint_id"))
        history = assistant.app.graph.get_state_history(
            config,  # type: ignore[arg-type]
            filter=body.metadata,
            before=_config(thread_id, before) if before else None,  # type: ignore[arg-type]
            limit=body.limit,
        )
        return [state_json(s, thread_id) for s in history]


def _config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def snapshot_of(assistant: Assistant | None, thread_id: str, checkpoint_id: str | None = None) -> Any:
    """The graph's state snapshot for a thread (None when the thread has no graph or no checkpoint); `assistant`
    is the graph at the revision the thread runs (`Server.thread_view`)."""
    if assistant is None:
        return None
    snapshot = assistant.app.graph.get_state(_config(thread_id, checkpoint_id))  # type: ignore[arg-type]
    if snapshot.config is None or not snapshot.config.get("configurable", {}).get("checkpoint_id"):
        return None if checkpoint_id is None else _missing_checkpoint(thread_id, checkpoint_id)
    return snapshot


def _missing_checkpoint(thread_id: str, checkpoint_id: str) -> Any:
    raise ApiError(404, "checkpoint-not-found", f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}")
