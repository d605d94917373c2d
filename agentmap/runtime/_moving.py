"""Moving a thread to another revision: where it waits (`position`), and the checkpoint that moves it (`write_move`).

The move is one new checkpoint on top of the thread's latest (so its history stays): the same state, with the
channels of renamed nodes and keys under their new names and the defaults a migration map gives, saved through the
thread's own saver (sealed and counted like any other), its metadata naming the revision it runs now and the one it
moved from. The question a paused node waited on is not carried: the node runs again at the new revision and asks
it there (`Thread.move`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError, ErrorCode
from agentmap.runtime.answers import claim_answers, claimants
from agentmap.runtime.changes import Position, Verdict, compare
from agentmap.runtime.durable import Thread
from agentmap.runtime.revisions import MIGRATION_KEY, MOVED_FROM_KEY
from agentmap.runtime.threads import REVISION_KEY, run_metadata, snapshot_status, thread_config, unfinished
from agentmap.spec.validation import SYSTEM_KEYS

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import CheckpointTuple
    from langgraph.types import StateSnapshot

    from agentmap.runtime.durable import Thread
    from agentmap.runtime.migration import Migration
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["move", "plan", "position", "write_move"]

_log = logging.getLogger("agentmap.runtime")

_BRANCH = "branch:to:"
_JOIN = "join:"


def position(snapshot: StateSnapshot, saved: CheckpointTuple) -> Position:
    """Where the thread whose latest state is `snapshot` (and checkpoint `saved`) waits."""
    tasks = [t for t in snapshot.tasks if not t.name.startswith("__")]
    finished = tuple(t.name for t in tasks if t.result is not None and t.error is None and not t.interrupts)
    values = snapshot.values if isinstance(snapshot.values, Mapping) else {}
    joins: list[str] = []
    for channel, value in saved.checkpoint.get("channel_values", {}).items():
        if channel.startswith(_JOIN) and value:
            sources, _, target = channel.removeprefix(_JOIN).rpartition(":")
            joins += [*sources.split("+"), target]
    return Position(
        tuple(snapshot.next),
        bool(snapshot.interrupts),
        frozenset(k for k in values if k not in SYSTEM_KEYS),
        finished,
        tuple(dict.fromkeys(joins)),
    )


def _renamed(channel: str, nodes: Mapping[str, str], keys: Mapping[str, str]) -> str:
    if channel.startswith(_BRANCH):
        node = channel.removeprefix(_BRANCH)
        return _BRANCH + nodes.get(node, node)
    return keys.get(channel, channel)


def write_move(
    saver: Any,
    saved: CheckpointTuple,
    nodes: Mapping[str, str],
    keys: Mapping[str, str],
    defaults: Mapping[str, Any],
    metadata: Mapping[str, Any],
) -> RunnableConfig:
    """Save the checkpoint moving the thread of `saved` (its latest): channels of `nodes` and `keys` renamed, the
    `defaults` a key lacks set, `metadata` recorded; its config."""
    from langgraph.checkpoint.base import copy_checkpoint, create_checkpoint

    step = int((saved.metadata or {}).get("step", -1)) + 1
    checkpoint = create_checkpoint(copy_checkpoint(saved.checkpoint), None, step)
    values: dict[str, Any] = {}
    versions: dict[str, Any] = {}
    changed: list[str] = []
    for channel, value in checkpoint["channel_values"].items():
        name = _renamed(channel, nodes, keys)
        values[name] = value
        changed += [name] if name != channel else []
    for channel, version in checkpoint["channel_versions"].items():
        versions[_renamed(channel, nodes, keys)] = version
    for key, value in defaults.items():
        if values.get(key) is None:
            values[key] = value
            changed.append(key)
    newest = max(versions.values(), default=None)
    bumped = saver.get_next_version(newest, None)
    new_versions = {name: bumped for name in changed}
    versions.update(new_versions)
    seen = {
        nodes.get(node, node): {_renamed(c, nodes, keys): v for c, v in channels.items()}
        for node, channels in checkpoint["versions_seen"].items()
    }
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = versions
    checkpoint["versions_seen"] = seen
    checkpoint["updated_channels"] = None  # every node's triggers are looked at, not only the channels written
    record = {"source": "update", "step": step, "parents": {}, **metadata, "agentmap_moved_at": time.time()}
    result: RunnableConfig = saver.put(saved.config, checkpoint, record, new_versions)
    return result


def _waiting(thread: Thread) -> tuple[Any, Any]:
    """The thread's latest checkpoint and state, refused when it has finished or runs elsewhere."""
    snapshot = thread.snapshot()
    saved = thread.saver.get_tuple(thread.config())
    if snapshot.metadata is None or saved is None:
        raise ConfigError(
            f"the checkpoint has no thread {thread.thread_id!r}",
            code=ErrorCode.UNKNOWN_THREAD,
            hint="`agentmap threads` lists the threads it holds (pass the --checkpoint the run used)",
        )
    if not unfinished(snapshot):
        raise ConfigError(
            f"thread {thread.thread_id!r} has finished; there is nothing to move",
            code=ErrorCode.NOTHING_TO_RESUME,
            hint="new runs use the workflow file as it is: start one with another --thread id",
        )
    if snapshot_status(snapshot) == "running":
        raise ConfigError(
            f"thread {thread.thread_id!r} is running in another process (pid {snapshot.metadata.get('agentmap_pid')})",
            code=ErrorCode.THREAD_BUSY,
            hint="wait for it to stop or pause, then move it",
        )
    return saved, snapshot


def plan(thread: Thread, to: CompiledWorkflow, migration: Migration | None) -> Verdict:
    """`Thread.plan_move`."""
    saved, snapshot = _waiting(thread)
    where = position(snapshot, saved)
    if thread.checkpoint_id is not None and _forked(thread):  # a fork from a past step runs its nodes again
        where = dataclasses.replace(where, finished=())
    if migration is not None:
        migration.check(thread.app, to, where.keys or frozenset())
    return compare(thread.app, to).verdict(where, migration)


def _forked(thread: Thread) -> bool:
    """Whether the thread's checkpoint is a past one (not its latest): going on from it forks the thread, and the
    nodes that ran after it run again, whatever they finished then."""

    latest = thread.saver.get_tuple(thread_config(thread.thread_id))
    return latest is not None and latest.config["configurable"].get("checkpoint_id") != thread.checkpoint_id


def move(thread: Thread, to: CompiledWorkflow, migration: Migration | None) -> Thread:
    """`Thread.move`."""

    if to.revision is None:
        raise ConfigError(
            f"graph {to.name!r} was not compiled from a workflow file, so it has no revision to move a thread to",
            code=ErrorCode.USAGE,
            hint="compile the workflow from its file: agentmap.compile(path, checkpointer=...)",
        )
    on_it = Thread(to, thread.thread_id, thread.checkpoint_id)
    on_it._app = to
    if _on(thread, to.revision.id):
        # on it already (another resume may have just moved it, and `thread` read the old revision): read it
        # through the revision it is on, refused the same way when it has finished or runs elsewhere
        _waiting(on_it)
        return on_it
    try:
        saved, snapshot = _waiting(thread)
    except ConfigError:
        if not _on(thread, to.revision.id):
            raise
        # moved by another resume since the line above: read with the old revision's graph, its new checkpoint
        # seemed to have no node left to run
        _waiting(on_it)
        return on_it
    was = (saved.metadata or {}).get(REVISION_KEY)
    if was == to.revision.id:  # moved by another resume since the line above
        return on_it
    where = position(snapshot, saved)
    if migration is not None:
        migration.check(thread.app, to, where.keys or frozenset())
    verdict = compare(thread.app, to).verdict(where, migration)
    _refuse(thread.thread_id, verdict, to)
    _claim(thread, saved, to.revision.id)
    metadata = {**run_metadata(to), MOVED_FROM_KEY: was, MIGRATION_KEY: migration.lines() if migration else []}
    nodes = dict(migration.nodes) if migration else {}
    keys = dict(migration.keys) if migration else {}
    defaults = dict(migration.defaults) if migration else {}
    write_move(thread.saver, saved, nodes, keys, defaults, metadata)
    moved = Thread(to, thread.thread_id)
    moved._app = to
    _log.info("thread %r moved from revision %s to %s", thread.thread_id, str(was or "-")[:12], to.revision.short)
    if where.paused:  # the node that waited asks again, as the new revision words its question
        to.invoke(None, moved.config())
    return moved


def _on(thread: Thread, revision: str) -> bool:
    """Whether the thread's latest checkpoint is on `revision`."""
    latest = thread.saver.get_tuple(thread.config())
    return latest is not None and (latest.metadata or {}).get(REVISION_KEY) == revision


_MOVES = "agentmap:move"  # the claims of moves, beside the answers' (another namespace: never read as an answer)


def _claim(thread: Thread, saved: CheckpointTuple, revision: str) -> None:
    """Claim the move of the thread from its checkpoint `saved`: of two resumes moving it at once, one moves it
    and the other is refused (`thread-busy`). A claim whose resume died before it wrote the move (a process of this
    machine that is gone) lets a later move go on.

    Raises:
        ConfigError: Another resume claimed the move first (`thread-busy`).
    """

    config: Any = {"configurable": {**saved.config.get("configurable", {}), "checkpoint_ns": _MOVES}}
    me = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
    try:
        claim_answers(thread.saver, config, {"move": revision}, thread.thread_id, me)
    except ConfigError as err:
        if err.code != ErrorCode.ALREADY_ANSWERED:
            raise
        holder = claimants(thread.saver, config, thread.thread_id).get("move", "")
        latest = thread.saver.get_tuple(thread.config())
        unwritten = latest is not None and latest.checkpoint["id"] == saved.checkpoint["id"]
        if unwritten and _gone(holder):
            return
        raise ConfigError(
            f"thread {thread.thread_id!r} is being moved by another resume; this one did not move it",
            code=ErrorCode.THREAD_BUSY,
            hint=f"`agentmap threads show {thread.thread_id}` shows where it stands; then continue it with "
            f"agentmap resume {thread.thread_id}",
        ) from None


def _gone(claimant: str) -> bool:
    """Whether the process that made a claim (`host:pid:...`) is known to have ended (on this machine)."""
    host, _, rest = claimant.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _refuse(thread_id: str, verdict: Verdict, to: CompiledWorkflow) -> None:
    diff = f"agentmap diff --thread {thread_id}"
    if verdict.verdict == "unsafe":
        raise ConfigError(
            f"moving thread {thread_id!r} to the workflow as it is now is unsafe: {'; '.join(verdict.reasons)}",
            code=ErrorCode.UNSAFE_MOVE,
            hint=f"let it finish on its own revision (agentmap resume {thread_id}), or start it over with --restart; "
            f"`{diff}` lists the changes",
        )
    if verdict.verdict == "needs-migration":
        lines = "\n".join(["kind,old,new", *verdict.lines])
        raise ConfigError(
            f"moving thread {thread_id!r} needs a migration map: {'; '.join(verdict.reasons)}",
            code=ErrorCode.NEEDS_MIGRATION,
            hint=f"write these lines to a file (replace VALUE with the value to give) and pass it with --migrate "
            f"FILE:\n{lines}",
        )
