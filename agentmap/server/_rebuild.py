"""Rebuilding a run taken from the queue: from its recorded request and its thread's last checkpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentmap.errors import ErrorCode
from agentmap.runtime.revisions import REVISION_KEY
from agentmap.server._auth import AuthUser
from agentmap.server._models import ApiError, RunCreate
from agentmap.server._records import RunRecord
from agentmap.server._run_request import resolve_request  # the one check of a run's request, as the routes do it
from agentmap.server._runs import RunRequest
from agentmap.server._threads import snapshot_of
from agentmap.server._users import Caller

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._graphs import Assistant

__all__ = ["rebuilder"]


def rebuilder(server: Server) -> Callable[[RunRecord], RunRequest]:
    """`rebuild(record)`: the request of a run taken from the queue by a replica that did not accept it (or
    took it again after a restart), from its recorded body and its thread's checkpoint.

    A run whose thread's last checkpoint it wrote itself continues from there (no input: the finished nodes
    do not run again); one that never checkpointed starts again from its input (or its answer). It runs as the
    user who started it (recorded with it), whose auth handlers are not asked again, and the revision its thread
    runs, or the one it was accepted with, read from the checkpointer's database when this replica serves another
    version of the file.

    Raises:
        ApiError: `graph-changed` when the checkpoint, saved before revisions were recorded, was written by
            another version of the workflow file than this replica's.
    """

    def rebuild(record: RunRecord) -> RunRequest:
        payload = record.request
        body = RunCreate.model_validate(payload.get("body") or {})
        thread_id = payload.get("thread_id")
        recorded = payload.get("revision")
        assistant = server.assistant(str(record.graph_id))
        view = None
        if thread_id and not record.stateless:
            view = server.versions.for_run(assistant, thread_id, str(recorded) if recorded else None)
        snapshot = snapshot_of(view, thread_id) if view is not None and thread_id else None
        progressed = snapshot is not None and snapshot.metadata.get("run_id") == record.run_id
        if progressed and snapshot is not None and thread_id:
            if view is not None and not snapshot.metadata.get(REVISION_KEY):
                _same_graph(view, snapshot.metadata, thread_id)
            body = body.model_copy(update={"input": None, "command": None})
        what = str(payload.get("what") or "runs.create")
        user = payload.get("user")
        caller = Caller(AuthUser(user)) if isinstance(user, dict) else Caller()  # its handlers said yes already
        # its answer is claimed already
        request = resolve_request(
            server,
            body,
            thread_id,
            what,
            caller=caller,
            claimant=payload.get("claimant"),
            revision=str(recorded) if recorded else None,
        )
        if progressed:
            request.input = None
        request.payload = payload
        return request

    return rebuild


def _same_graph(assistant: Assistant, metadata: Any, thread_id: str) -> None:
    """A thread saved before revisions were recorded goes on only with the file it was run with."""
    written = metadata.get("agentmap_digest")
    digest = assistant.app.file_digest
    if written and digest and written != digest:
        raise ApiError(
            409,
            ErrorCode.GRAPH_CHANGED,
            f"thread {thread_id!r} was run with another version of {assistant.app.spec.file}, before revisions were "
            "recorded; this replica serves a different file, so it cannot continue the run",
            hint="serve that version of the file on this replica, or start a new thread",
        )
