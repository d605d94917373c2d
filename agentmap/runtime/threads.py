"""Threads: the saved runs of a checkpoint, where each stands, and how to continue one.

Every run on a thread records, in its checkpoints' metadata, the workflow file and graph it runs, a
digest of the file, and the process that wrote it. So a thread can be listed and resumed without
naming its file again, a changed file is noticed, and a thread whose process died shows as
`interrupted` rather than `running`.

Statuses: `running` (its process is alive), `paused` (a node waits for an answer), `interrupted`
(stopped mid-run: a crash, SIGTERM, Ctrl-C), `failed` (a node raised, or the success policy failed),
`done`.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from agentmap.errors import AgentMapError, ConfigError, ErrorCode
from agentmap.runtime.options import CompileOptions

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.types import StateSnapshot

    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.tracking import NodeExecution

__all__ = [
    "STATUSES",
    "ThreadInfo",
    "ThreadStatus",
    "earlier_executions",
    "file_digest",
    "run_metadata",
    "running_here",
    "snapshot_status",
    "thread_config",
    "thread_history",
    "threads",
    "unfinished",
]

ThreadStatus = Literal["running", "paused", "interrupted", "failed", "done"]
"""Where a durable thread stands (`agentmap threads`)."""

STATUSES: tuple[ThreadStatus, ...] = get_args(ThreadStatus)

FILE_KEY = "agentmap_file"
GRAPH_KEY = "agentmap_graph"
DIGEST_KEY = "agentmap_digest"
PID_KEY = "agentmap_pid"
HOST_KEY = "agentmap_host"
REVISION_KEY = "agentmap_revision"  # `runtime.revisions.REVISION_KEY`


@dataclass(frozen=True)
class ThreadInfo:
    """One thread of a checkpoint.

    Attributes:
        thread_id: The thread's id.
        workflow: The workflow file its runs came from (None when not run by AgentMap).
        graph: The graph's name.
        status: One of `STATUSES`, or `unknown` when the workflow file cannot be compiled any more.
        step: LangGraph's step counter of the latest checkpoint.
        updated: When the latest checkpoint was written (ISO 8601).
        digest: The SHA-256 of the workflow file when the run started.
        next: The nodes that run next.
        questions: What the paused nodes ask (the values they passed to `interrupt()`).
        error: The error of a node that raised, if any.
        revision: The id of the revision the thread runs (`runtime.revisions`; None when it records none).
        behind: Whether that is not the revision of the workflow file as it is now (None: unknown).
    """

    thread_id: str
    workflow: str | None
    graph: str | None
    status: ThreadStatus | Literal["unknown"]
    step: int
    updated: str
    digest: str | None = None
    next: tuple[str, ...] = ()
    questions: tuple[Any, ...] = field(default_factory=tuple)
    error: str | None = None
    revision: str | None = None
    behind: bool | None = None

    @property
    def target(self) -> str:
        """`file::graph`, as `agentmap run` takes it."""
        return f"{self.workflow}::{self.graph}" if self.workflow and self.graph else str(self.workflow or "?")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return {
            "thread": self.thread_id,
            "workflow": self.workflow,
            "graph": self.graph,
            "status": self.status,
            "step": self.step,
            "updated": self.updated,
            "next": list(self.next),
            "questions": list(self.questions),
            "revision": self.revision,
            "behind": self.behind,
            **({"error": self.error} if self.error else {}),
        }


def file_digest(path: str | Path) -> str | None:
    """The SHA-256 of a file's bytes, or None when it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def run_metadata(app: CompiledWorkflow) -> dict[str, Any]:
    """The metadata a run of `app` writes into every checkpoint (file, graph, digest, revision, process); its
    revision is stored in the checkpoint's database first (`CompiledWorkflow.keep_revision`)."""
    meta: dict[str, Any] = {GRAPH_KEY: app.name, PID_KEY: os.getpid(), HOST_KEY: socket.gethostname()}
    if app.spec.file:
        meta[FILE_KEY] = str(Path(app.spec.file).resolve())
        digest = app.file_digest
        if digest:
            meta[DIGEST_KEY] = digest
        revision = app.keep_revision()
        if revision is not None:
            meta[REVISION_KEY] = revision
    return meta


def thread_config(
    thread_id: str, config: RunnableConfig | None = None, *, checkpoint_id: str | None = None
) -> RunnableConfig:
    """`config` with `thread_id` set (other keys kept), and `checkpoint_id` when one is given."""
    merged: dict[str, Any] = {**(config or {})}
    merged["configurable"] = {**merged.get("configurable", {}), "thread_id": thread_id}
    if checkpoint_id:
        merged["configurable"]["checkpoint_id"] = checkpoint_id
    return merged  # type: ignore[return-value]


_RUNNING: Counter[str] = Counter()
_RUNNING_LOCK = threading.Lock()


@contextmanager
def running_here(thread_id: str) -> Iterator[None]:
    """Mark thread `thread_id` as running in this process while the block runs."""
    with _RUNNING_LOCK:
        _RUNNING[thread_id] += 1
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            _RUNNING[thread_id] -= 1
            if _RUNNING[thread_id] <= 0:
                del _RUNNING[thread_id]


def _alive(meta: Mapping[str, Any], thread_id: str) -> bool:
    pid = meta.get(PID_KEY)
    if not isinstance(pid, int) or meta.get(HOST_KEY) != socket.gethostname():
        return False
    if pid == os.getpid():
        return thread_id in _RUNNING
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped by its parent) is not running
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def unfinished(snapshot: StateSnapshot) -> bool:
    """Whether the thread has work left: nodes to run, or a step whose nodes all finished but whose
    checkpoint was not written yet (the process died between the two; resuming applies their writes)."""
    return bool(snapshot.next or snapshot.tasks)


def snapshot_status(snapshot: StateSnapshot) -> ThreadStatus:
    """The status of a thread whose latest state is `snapshot` (see the module docstring)."""
    if snapshot.interrupts:
        return "paused"
    if any(t.error is not None for t in snapshot.tasks):
        return "failed"
    if unfinished(snapshot):
        thread_id = str(snapshot.config.get("configurable", {}).get("thread_id"))
        return "running" if _alive(snapshot.metadata or {}, thread_id) else "interrupted"
    values = snapshot.values if isinstance(snapshot.values, Mapping) else {}
    return "failed" if values.get("graph_success") is False else "done"


def _info(thread_id: str, snapshot: StateSnapshot, now: str | None = None) -> ThreadInfo:
    meta: dict[str, Any] = dict(snapshot.metadata or {})
    error = next((repr(t.error) for t in snapshot.tasks if t.error is not None), None)
    revision = meta.get(REVISION_KEY)
    return ThreadInfo(
        thread_id=thread_id,
        workflow=meta.get(FILE_KEY),
        graph=meta.get(GRAPH_KEY),
        status=snapshot_status(snapshot),
        step=int(meta.get("step", -1)),
        updated=snapshot.created_at or "",
        digest=meta.get(DIGEST_KEY),
        next=tuple(snapshot.next),
        questions=tuple(i.value for i in snapshot.interrupts),
        error=error,
        revision=revision,
        behind=None if revision is None or now is None else revision != now,
    )


def _unknown(thread_id: str) -> ConfigError:
    return ConfigError(
        f"the checkpoint has no thread {thread_id!r}",
        code=ErrorCode.UNKNOWN_THREAD,
        hint="`agentmap threads` lists the threads it holds (check --checkpoint too)",
    )


def latest_checkpoints(saver: Any) -> dict[str, Any]:
    """The latest checkpoint tuple of every thread of `saver` (top-level graph only), newest first."""
    latest: dict[str, Any] = {}
    for item in saver.list(None):
        configurable = item.config.get("configurable", {})
        thread = str(configurable.get("thread_id"))
        if configurable.get("checkpoint_ns", "") == "" and thread not in latest:
            latest[thread] = item
    return dict(sorted(latest.items(), key=lambda kv: kv[1].checkpoint.get("ts", ""), reverse=True))


def threads(
    checkpoint: Any = None, *, options: CompileOptions | None = None, **compile_options: Any
) -> list[ThreadInfo]:
    """Every thread of a checkpoint, newest first, with its status.

    Args:
        checkpoint: A checkpoint string (`runs.db`, `postgresql://...`; default `AGENTMAP_CHECKPOINT` or
            `.agentmap/runs.db`) or a LangGraph saver.

        options: `compile`'s options as one `CompileOptions`, instead of the keywords.
        **compile_options: `compile`'s keywords (`agents_dir`, `functions_dir`, ...).

    Each thread's workflow is compiled (once per file and graph, with those options) to tell what runs next; a
    thread whose file is gone shows status `unknown`.
    """
    from agentmap.runtime.checkpoint import checkpointer

    given = CompileOptions.given("threads", options, compile_options)
    saver = checkpoint if checkpoint is not None and not isinstance(checkpoint, str) else checkpointer(checkpoint)
    apps: dict[tuple[str, str], CompiledWorkflow | None] = {}
    found: list[ThreadInfo] = []
    for thread_id, item in latest_checkpoints(saver).items():
        meta: dict[str, Any] = dict(item.metadata or {})
        key = (str(meta.get(FILE_KEY)), str(meta.get(GRAPH_KEY)))
        if key not in apps:
            apps[key] = _compile_for(saver, key, item.checkpoint.get("channel_values", {}), given)
        found.append(_listed(saver, thread_id, item, apps[key], given))
    return found


def _at_own_revision(
    saver: Any, thread_id: str, item: Any, now: CompiledWorkflow | None, options: CompileOptions
) -> CompiledWorkflow | None:
    """The workflow thread `thread_id` (latest checkpoint `item`) runs: at its own revision (also when its file is
    gone or no longer compiles), else the file as it is now (`now`); None when neither compiles.

    Raises:
        AgentMapError: Its revision cannot be compiled (`unknown-revision`, `revision-unloadable`, ...).
    """
    if now is not None:
        return now.thread(thread_id).app
    meta: dict[str, Any] = dict(item.metadata or {})
    revision, file = meta.get(REVISION_KEY), meta.get(FILE_KEY)
    if not revision or not file:
        return None
    from agentmap.runtime.revisions import compile_at

    keys = saved_keys(item.checkpoint.get("channel_values", {}))
    graph = meta.get(GRAPH_KEY)
    return compile_at(saver, str(revision), file, graph, options.but(checkpointer=saver, state_keys=keys))


def _listed(saver: Any, thread_id: str, item: Any, now: CompiledWorkflow | None, options: CompileOptions) -> ThreadInfo:
    """Where thread `thread_id` (latest checkpoint `item`) stands, told by the workflow at its own revision."""

    meta: dict[str, Any] = dict(item.metadata or {})
    current = now.revision.id if now is not None and now.revision is not None else None
    problem = None
    try:
        at = _at_own_revision(saver, thread_id, item, now, options)
        if at is not None:
            return _info(thread_id, at.graph.get_state(thread_config(thread_id)), current)
    except AgentMapError as err:  # its revision no longer compiles: say so, and list the others
        if err.code == ErrorCode.CORRUPT_CHECKPOINT:
            raise
        problem = err.message
    revision = meta.get(REVISION_KEY)
    return ThreadInfo(
        thread_id=thread_id,
        workflow=meta.get(FILE_KEY),
        graph=meta.get(GRAPH_KEY),
        status="unknown",
        step=int(meta.get("step", -1)),
        updated=str(item.checkpoint.get("ts", "")),
        digest=meta.get(DIGEST_KEY),
        error=problem,
        revision=revision,
        behind=None if revision is None or current is None else revision != current,
    )


def thread_history(
    saver: Any, thread_id: str, *, options: CompileOptions | None = None, **compile_options: Any
) -> tuple[ThreadInfo, list[StateSnapshot]]:
    """Where thread `thread_id` stands, and its saved states, newest first (empty when its workflow compiles
    neither at its revision nor from its file).

    `options` or `compile_options` compile its workflow, as in `threads`.

    Raises:
        ConfigError: The checkpoint has no such thread (`unknown-thread`), or had one whose checkpoints are gone
            (`corrupt-checkpoint`).
    """

    given = CompileOptions.given("thread_history", options, compile_options)
    info = next((t for t in threads(saver, options=given) if t.thread_id == thread_id), None)
    if info is None:
        saver.get_tuple(thread_config(thread_id))  # a thread whose every checkpoint is gone: corrupt-checkpoint
        raise _unknown(thread_id)
    saved = saver.get_tuple(thread_config(thread_id))
    values = saved.checkpoint.get("channel_values", {})
    now = _compile_for(saver, (str(info.workflow), str(info.graph)), values, given)
    try:
        app = _at_own_revision(saver, thread_id, saved, now, given)
    except AgentMapError:
        app = None
    return info, list(app.graph.get_state_history(thread_config(thread_id))) if app is not None else []


def saved_keys(values: Mapping[str, Any]) -> tuple[str, ...]:
    """The state keys among a checkpoint's channel values (so the first run's extra keys stay in the schema)."""
    return tuple(k for k in values if not k.startswith(("__", "branch:", "join:")))


def _compile_for(
    saver: Any, key: tuple[str, str], values: Mapping[str, Any], options: CompileOptions
) -> CompiledWorkflow | None:
    from agentmap.runtime.api import compile

    file, graph = key
    if file == "None" or not Path(file).is_file():
        return None
    try:
        name = None if graph == "None" else graph
        return compile(file, name, options=options.but(checkpointer=saver, state_keys=saved_keys(values)))
    except AgentMapError:
        return None


def earlier_executions(history: Iterable[StateSnapshot]) -> list[NodeExecution]:
    """The node runs a thread's saved steps record, oldest first, each marked `before_resume`.

    `history` is the thread's checkpoints, newest first (`get_state_history`). The nodes a checkpoint lists
    as its next tasks ran between it and the following checkpoint; the last checkpoint's tasks have not run
    yet (the run continues with them). Times are those of the checkpoints, so a duration covers the step.
    """
    from agentmap.runtime.tracking import NodeExecution

    chronological = list(history)[::-1]
    found: list[NodeExecution] = []
    for before, after in pairwise(chronological):
        tasks = [task for task in before.tasks if not task.name.startswith("__")]
        if not before.created_at or not after.created_at:
            continue
        start = datetime.fromisoformat(before.created_at).timestamp()
        end = datetime.fromisoformat(after.created_at).timestamp()
        alone = len(tasks) == 1  # the state's last_action_success is this node's own
        for task in tasks:
            failed = task.error is not None or (alone and after.values.get("last_action_success") is False)
            execution = NodeExecution(
                task.name, start, end, end - start, not failed, str(task.error) if task.error else None
            )
            execution.metadata["before_resume"] = True
            found.append(execution)
    return found
