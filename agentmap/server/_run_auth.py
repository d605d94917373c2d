"""A run and the caller's users (`--auth`): the run request asked of the caller's `threads.create_run` handler
(`admit_run`, what it left: `Admitted`), and the user the run goes with, in its config as LangGraph's server puts it
(`with_user`; the keys are the server's alone, `AUTH_KEYS`).

Every run path asks here first: the run routes, `/mcp`, `/a2a` and `/agui` through `_run_start.start_run`, and a
batch of runs (`runs.create_batch`) each of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from agentmap.server._models import RunCreate
from agentmap.server._users import Caller

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._filters import Filter
    from agentmap.server._graphs import Assistant

__all__ = ["AUTH_KEYS", "Admitted", "admit_run", "with_user"]

AUTH_KEYS = ("langgraph_auth_user", "langgraph_auth_user_id", "langgraph_auth_permissions")
"""The `configurable` keys a run's user travels under, as LangGraph's server sets them: the server's alone (a
client's are dropped, so no request can claim to be another user)."""


@dataclass(frozen=True, slots=True)
class Admitted:
    """A run request the caller's auth handlers let through: the body as they left it (its metadata edited), the
    filter of the threads the caller sees, and the run's id (the one the handler was shown)."""

    body: RunCreate
    visible: Filter | None
    run_id: str


async def admit_run(server: Server, body: RunCreate, thread_id: str | None, caller: Caller) -> Admitted:
    """Ask the caller's `threads.create_run` handler about a run (the value LangGraph gives it: the thread, the
    assistant, the run's id, status, metadata, multitask strategy, `if_not_exists`, and its `kwargs`); what it left.

    Raises:
        ApiError: The handler refused (403, its status) or failed (500); for a run that makes way for itself
            (`interrupt`, `rollback`), 404 when the thread is another user's.
    """
    run_id = str(uuid.uuid4())
    value: dict[str, Any] = {
        "thread_id": thread_id,
        "assistant_id": body.assistant_id,
        "run_id": run_id,
        "status": "pending",
        "metadata": dict(body.metadata or {}),
        "prevent_insert_if_inflight": body.multitask_strategy == "reject",
        "multitask_strategy": body.multitask_strategy or "enqueue",
        "if_not_exists": body.if_not_exists or "reject",
        "after_seconds": 0,
        "kwargs": body.model_dump(include={"input", "command", "config", "stream_mode", "webhook"}, exclude_none=True),
    }
    visible = await caller.decide("threads", "create_run", value)
    metadata = value.get("metadata")
    if isinstance(metadata, Mapping) and metadata != (body.metadata or {}):
        body = body.model_copy(update={"metadata": dict(metadata)})  # what the handler stamped is the run's
    if thread_id is not None and visible is not None and body.multitask_strategy in ("interrupt", "rollback"):
        await run_in_threadpool(server.thread, thread_id, visible)  # no other user's runs are stopped: a 404
    return Admitted(body, visible, run_id)


def with_user(configurable: dict[str, Any], caller: Caller, assistant: Assistant) -> dict[str, Any]:
    """`configurable` (a client's, without `AUTH_KEYS`) with the run's user as LangGraph's server gives it to a graph
    (`langgraph_auth_user`, its id and permissions; with the assistant and graph ids, which LangGraph's
    `get_runtime().server_info` reads, unless the run names its own); as it is on a server without users."""
    user = caller.user
    if user is not None:
        configurable.update(zip(AUTH_KEYS, (user, user.identity, user.permissions), strict=True))
        configurable.setdefault("assistant_id", assistant.assistant_id)
        configurable.setdefault("graph_id", assistant.graph_id)
    return configurable
