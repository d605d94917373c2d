"""The version a run takes (`choose_version`): its thread's, the one it names (`config.configurable.
assistant_version`), or for a new thread (or none) the assistant's latest; a thread moved to the version its run
names only when that is safe (`runtime.changes`); and the thread's metadata naming the graph and version it runs
(`thread_binding`). The versions themselves (numbered, compiled, reloaded) are `_versions.Versions`'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentmap.errors import ErrorCode
from agentmap.runtime.durable import Thread
from agentmap.server._models import ApiError, RunCreate
from agentmap.server._records import ThreadRecord
from agentmap.server._versions import VERSION_FIELD, asked_version

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._graphs import Assistant

__all__ = ["RunVersion", "choose_version", "thread_binding"]


@dataclass(frozen=True, slots=True)
class RunVersion:
    """The version a run takes: the assistant at that revision, and whether the run named it (`pinned`: the run
    runs `assistant`, not the revision its thread's checkpoint names; `RunRequest.pinned`)."""

    assistant: Assistant
    pinned: bool


def choose_version(
    server: Server, body: RunCreate, assistant: Assistant, thread_id: str | None, *, ran: bool, revision: str | None
) -> RunVersion:
    """The version a run of `body` takes: the one it names; else its thread's (`ran`: a run of ours saved a step on
    it), the one it was accepted with (`revision`, a run taken over), or the latest.

    Raises:
        ApiError: The version named is unknown (404) or not a version (422); the thread cannot go on at it (409
            `unsafe-move`, `needs-migration`).
    """
    view = server.versions.for_run(assistant, thread_id if ran else None, revision)
    asked = asked_version(body.config)
    if asked is None:
        return RunVersion(view, pinned=False)
    chosen = server.versions.named(assistant, asked)
    if ran and thread_id is not None and chosen.revision != view.revision:
        _may_move(body, chosen, thread_id)
    return RunVersion(chosen, pinned=True)


def thread_binding(record: ThreadRecord, view: Assistant) -> dict[str, Any] | None:
    """The thread's metadata naming its graph and the version it runs, when that is news (None: nothing to save)."""
    wanted = {"graph_id": view.graph_id, "assistant_id": view.assistant_id, "assistant_version": view.version}
    if all(record.metadata.get(k) == v for k, v in wanted.items()):
        return None
    return {**record.metadata, **wanted}


def _may_move(body: RunCreate, chosen: Assistant, thread_id: str) -> None:
    """Let a run naming another version than its thread's go on from the thread's checkpoint (its latest, or the
    one it forks from) on that version, when moving the thread there is safe (`runtime.changes`): a thread that
    finished starts its next run on it; one that waits goes on there only when nothing it holds or waits at is
    gone or renamed. A pause is answered on the version that asked.

    Raises:
        ApiError: 409 `unsafe-move` or `needs-migration` (with the reasons and the lines of the map that would move
            it: `agentmap resume ID --migrate MAP`).
    """
    version = f"version {chosen.version}"
    if body.command is not None:
        raise ApiError(
            409,
            ErrorCode.UNSAFE_MOVE,
            f"{VERSION_FIELD}: thread {thread_id!r} waits on a question of another version than {version}; its answer "
            "goes to the version that asked",
            hint="answer without assistant_version (the thread finishes on its version), or move the thread first "
            f"(agentmap resume {thread_id} --latest)",
        )
    checkpoint_id = body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id")
    thread = Thread(chosen.app, thread_id, checkpoint_id)
    if not thread.snapshot().next:
        return  # it finished: its next run starts over on the version named, with the state it holds
    verdict = thread.plan_move()
    if verdict.verdict == "safe":
        return
    code = ErrorCode.UNSAFE_MOVE if verdict.verdict == "unsafe" else ErrorCode.NEEDS_MIGRATION
    lines = "; ".join(verdict.lines)
    raise ApiError(
        409,
        code,
        f"{VERSION_FIELD}: thread {thread_id!r} cannot go on at {version} ({verdict.verdict}): "
        + "; ".join(verdict.reasons),
        hint=f"let it finish on its own version (no assistant_version), or move it with agentmap resume {thread_id} "
        + (f"--migrate MAP, MAP holding: kind,old,new; {lines}" if lines else "--restart"),
    )
