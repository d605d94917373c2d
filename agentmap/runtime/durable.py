"""Durable runs: one saved thread of a compiled workflow, where it stands, and how to answer and continue it.

`CompiledWorkflow.thread(thread_id)` gives a `Thread`; `agentmap run --thread`, `agentmap resume`, `agentmap
serve` (`command={"resume": ...}`), the MCP and A2A endpoints and `CompiledWorkflow.resume` all go through it,
so a paused run is answered by one rule everywhere (csv_specs/cli.md "agentmap resume", csv_specs/serve.md
"Pausing and resuming"):

- one question waiting: the answer is its answer (or `{interrupt id: answer}`);
- several: a mapping with an answer for each interrupt id, no fewer and no more (`ambiguous-resume`);
- each answer is checked against its question (`bad-answer`) and claimed, one answer per pause
  (`already-answered`);
- no answer continues an interrupted or failed thread from its last saved step; an answer to a thread that asks
  nothing is `not-paused`, a finished thread `nothing-to-resume`.

A thread runs the revision it started on (`runtime.revisions`): `Thread.app` is the workflow compiled from the
files the thread's first run read, whatever the workflow file holds now, and `Thread.move` moves it to another
revision on purpose (the file as it is now, with a migration map when the edit renamed what it needs).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentmap.errors import ConfigError, ErrorCode, WorkflowFileError
from agentmap.runtime.options import CompileOptions
from agentmap.runtime.threads import (
    DIGEST_KEY,
    FILE_KEY,
    GRAPH_KEY,
    REVISION_KEY,
    file_digest,
    saved_keys,
    snapshot_status,
    thread_config,
    unfinished,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.types import Interrupt, StateSnapshot

    from agentmap.runtime.changes import Verdict
    from agentmap.runtime.migration import Migration
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["Durability", "Thread", "answers_for", "open_thread", "saved_state_keys"]

Durability = Literal["sync", "async", "exit"]
"""When a durable run writes its checkpoints: before each step goes on, while the next step runs, or at the end."""


def answers_for(pending: tuple[Interrupt, ...] | list[Interrupt], answer: Any, thread_id: str) -> dict[str, Any]:
    """The checked answer for each waiting question, by interrupt id (the one answer rule, see the docstring).

    Raises:
        ConfigError: Several questions and not one answer for each by interrupt id (`ambiguous-resume`).
        AnswerError: An answer does not fit its question (`bad-answer`).
    """
    from agentmap.agents.questions import check_answer

    ids = {i.id: i for i in pending}
    if isinstance(answer, Mapping) and answer and set(answer) == set(ids):  # by interrupt id
        return {k: check_answer(ids[k].value, v) for k, v in answer.items()}
    if len(pending) == 1:
        return {pending[0].id: check_answer(pending[0].value, answer)}
    given = set(answer) if isinstance(answer, Mapping) else set()
    missing = [k for k in ids if k not in given]
    extra = [str(k) for k in given if k not in ids]
    problems = [f"no answer for {', '.join(missing)}"] if missing and given else []
    problems += [f"{', '.join(extra)} {'is' if len(extra) == 1 else 'are'} not waiting"] if extra else []
    raise ConfigError(
        f"thread {thread_id!r} has {len(pending)} questions waiting; answer each by its interrupt id"
        + (f" ({'; '.join(problems)})" if problems else ""),
        code=ErrorCode.AMBIGUOUS_RESUME,
        hint=f"pass a JSON object {{interrupt id: answer}} with an answer for each of: {', '.join(ids)}",
    )


def _unknown(thread_id: str) -> ConfigError:
    return ConfigError(
        f"the checkpoint has no thread {thread_id!r}",
        code=ErrorCode.UNKNOWN_THREAD,
        hint="`agentmap threads` lists the threads it holds (check --checkpoint too)",
    )


class Thread:
    """One saved thread of a compiled workflow (which must have a checkpointer).

    Attributes:
        asked: The workflow the thread was asked of (`CompiledWorkflow.thread`): new runs on it use this.
        thread_id: The thread's id.
        checkpoint_id: The saved checkpoint it continues from (None: its latest).
    """

    def __init__(self, app: CompiledWorkflow, thread_id: str, checkpoint_id: str | None = None) -> None:
        if app.graph.checkpointer in (None, False, True):
            raise ConfigError(
                f"graph {app.name!r} was compiled without a checkpointer, so it has no threads to resume",
                code=ErrorCode.USAGE,
                hint='compile it with a checkpointer: agentmap.compile(path, checkpointer="runs.db")',
            )
        self.asked = app
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id
        self._app: CompiledWorkflow | None = None

    def __repr__(self) -> str:
        return f"<Thread {self.thread_id!r} of {self.asked.name!r}>"

    @property
    def app(self) -> CompiledWorkflow:
        """The workflow the thread runs: compiled at the revision it started on (or was moved to), whatever the
        file holds now; `asked` itself when that is its revision, or the thread records none (nothing saved yet, a
        thread saved before revisions were recorded, a saver that keeps none).

        Raises:
            ConfigError: The revision is not in the database (`unknown-revision`) or no longer compiles
                (`revision-unloadable`).
            CorruptCheckpointError: A stored file of the revision does not match its digest.
        """
        if self._app is None:
            from agentmap.runtime.revisions import thread_app

            self._app = thread_app(self.asked, self.thread_id, self.checkpoint_id)
        return self._app

    @property
    def saver(self) -> Any:
        """The checkpointer holding the thread."""
        return self.asked.graph.checkpointer

    def revision(self) -> str | None:
        """The id of the revision the thread runs (its latest checkpoint's), or None when it records none."""
        saved = self.saver.get_tuple(self.config())
        value = (saved.metadata or {}).get(REVISION_KEY) if saved is not None else None
        return str(value) if value else None

    def behind(self) -> bool:
        """Whether the thread runs another revision than `asked` (the workflow file as compiled now)."""
        mine, now = self.revision(), self.asked.revision
        return mine is not None and now is not None and mine != now.id

    def config(self, config: RunnableConfig | None = None) -> RunnableConfig:
        """`config` (LangGraph's) pointed at this thread and its checkpoint."""
        return thread_config(self.thread_id, config, checkpoint_id=self.checkpoint_id)

    def snapshot(self) -> StateSnapshot:
        """The thread's saved state (LangGraph's `StateSnapshot`; `metadata` is None when nothing is saved)."""
        return self.app.graph.get_state(self.config())

    async def asnapshot(self) -> StateSnapshot:
        """The async twin of `snapshot` (the thread's revision compiled in a worker thread, the first time)."""
        app = self._app if self._app is not None else await asyncio.to_thread(lambda: self.app)
        return await app.graph.aget_state(self.config())

    def exists(self) -> bool:
        """Whether the checkpoint holds anything of this thread."""
        return self.snapshot().metadata is not None

    def status(self) -> str:
        """`running`, `paused`, `interrupted`, `failed` or `done` (see `runtime.threads`)."""
        snapshot = self.snapshot()
        if snapshot.metadata is None:
            raise _unknown(self.thread_id)
        return snapshot_status(snapshot)

    def questions(self) -> tuple[Interrupt, ...]:
        """The questions the paused nodes wait on (LangGraph's `Interrupt`s: `.id`, `.value`)."""
        return tuple(self.snapshot().interrupts)

    def history(self) -> list[StateSnapshot]:
        """The thread's saved states, newest first."""
        return list(self.app.graph.get_state_history(thread_config(self.thread_id)))

    def fork(self, checkpoint_id: str) -> Thread:
        """This thread continued from its saved checkpoint `checkpoint_id` instead of its latest.

        Damaged checkpoints newer than it (those a `corrupt-checkpoint` error named) are set aside first, kept in
        the database's `agentmap_damaged_checkpoints` table, so that the thread can go on past them.

        Raises:
            ConfigError: The thread has no such checkpoint (`unknown-thread`).
        """
        forked = Thread(self.asked, self.thread_id, checkpoint_id)
        if self.saver.get_tuple(forked.config()) is None:
            raise ConfigError(
                f"thread {self.thread_id!r} has no checkpoint {checkpoint_id!r}",
                code=ErrorCode.UNKNOWN_THREAD,
                hint=f"`agentmap threads show {self.thread_id}` lists its checkpoints "
                "(pass the --checkpoint the run used)",
            )
        set_aside = getattr(self.saver, "set_aside_damaged", None)
        moved = set_aside(self.thread_id, checkpoint_id) if set_aside is not None else None
        if moved:
            logging.getLogger("agentmap.runtime").warning(
                "thread %r: %d damaged checkpoint(s) set aside in agentmap_damaged_checkpoints: %s",
                self.thread_id,
                len(moved),
                ", ".join(moved),
            )
        return forked

    def run_input(self, answer: Any = None, *, claimant: str | None = None, snapshot: Any = None) -> Any:
        """What to run the graph with to continue the thread: `Command(resume=...)` for a paused one, its
        answers checked (`answers_for`) and claimed (`claim_answers`: one answer per pause; no answer continues
        with the one taken when a resume that took it stopped before the run went on); None for an interrupted
        or failed one (LangGraph runs what had not completed).

        Raises:
            ConfigError: No such thread (`unknown-thread`), a finished thread (`nothing-to-resume`), an answer
                for a thread that asks nothing (`not-paused`), several questions without an answer for each
                (`ambiguous-resume`), or a question another resume answered first (`already-answered`).
            AnswerError: The answer does not fit the question; the thread stays paused.
        """
        from langgraph.types import Command

        from agentmap.runtime.answers import claim_answers, refuse_if_answered, taken_answers

        snapshot = snapshot if snapshot is not None else self.snapshot()
        if snapshot.metadata is None:
            raise _unknown(self.thread_id)
        pending = snapshot.interrupts
        if pending:
            if answer is None:  # taken by a resume that stopped before the run went on
                taken = taken_answers(self.saver, snapshot.config, self.thread_id)
                if taken and all(i.id in taken for i in pending):
                    return Command(resume={i.id: taken[i.id] for i in pending})
            answers = answers_for(pending, answer, self.thread_id)
            claim_answers(self.saver, snapshot.config, answers, self.thread_id, claimant)
            return Command(resume=answers)
        if not unfinished(snapshot):
            raise ConfigError(
                f"thread {self.thread_id!r} has finished; there is nothing to resume",
                code=ErrorCode.NOTHING_TO_RESUME,
                hint="start a new run with another --thread id, or run it again with --restart",
            )
        if answer is not None:
            refuse_if_answered(self.saver, answer, self.thread_id)  # moved on: was its question answered just now?
            raise ConfigError(
                f"thread {self.thread_id!r} is not waiting for an answer",
                code=ErrorCode.NOT_PAUSED,
                hint=f"continue it without one: agentmap resume {self.thread_id}",
            )
        return None

    async def arun_input(self, answer: Any = None, *, claimant: str | None = None) -> Any:
        """The async twin of `run_input` (the claim, SQL on the checkpoint's database, runs in a worker thread)."""
        snapshot = await self.asnapshot()
        return await asyncio.to_thread(self.run_input, answer, claimant=claimant, snapshot=snapshot)

    def resume(self, answer: Any = None, config: RunnableConfig | None = None, **kwargs: Any) -> RunResult:
        """Continue the thread (with `answer` for a paused one): `CompiledWorkflow.invoke` on its input.

        `kwargs` (`tracker`, `hooks`, `stop`, `durability`, ...) go to `invoke`.
        """
        return self.app.invoke(self.run_input(answer), self.config(config), **kwargs)

    async def aresume(self, answer: Any = None, config: RunnableConfig | None = None, **kwargs: Any) -> RunResult:
        """The async twin of `resume`."""
        return await self.app.ainvoke(await self.arun_input(answer), self.config(config), **kwargs)

    def plan_move(self, to: CompiledWorkflow | None = None, migration: Migration | None = None) -> Verdict:
        """What moving the thread to `to` (default `asked`) would do: `safe`, `needs-migration` (with the lines of a
        migration map that would do it) or `unsafe` (why), given `migration` (see `runtime.changes`). From a past
        checkpoint (`checkpoint_id`, a fork), the nodes that ran after it are not in the way: the fork runs them again.

        Raises:
            ConfigError: The thread has finished, or `migration` names a node or key that does not exist
                (`bad-migration`).
        """
        from agentmap.runtime._moving import plan

        return plan(self, to if to is not None else self.asked, migration)

    def move(self, to: CompiledWorkflow | None = None, migration: Migration | None = None) -> Thread:
        """Move the thread to the revision of `to` (default `asked`: the workflow file as compiled now), keeping
        its history: one checkpoint records the move (the revision it moved from, the map's lines), renaming what
        `migration` renames and giving its defaults; a node that was waiting for an answer asks again at the new
        revision. Returns the thread at its new revision (also when it runs that revision already: moved by another
        resume meanwhile, it is not moved again).

        Raises:
            ConfigError: Moving is not safe (`unsafe-move`, naming why) or needs a migration map it was not given
                (`needs-migration`, naming the lines that would do it); the map names a node or key that does not
                exist (`bad-migration`); the thread is running elsewhere (`thread-busy`) or has finished
                (`nothing-to-resume`); `to` was not compiled from a file (`usage`).
        """
        from agentmap.runtime._moving import move

        return move(self, to if to is not None else self.asked, migration)

    def make_way(self, *, restart: bool, resume_hint: str) -> None:
        """Make way for a new run on this thread: nothing saved, or finished, is fine; an unfinished thread is
        refused, or with `restart` dropped.

        Raises:
            ConfigError: The thread is running in another process (`thread-busy`), has not finished
                (`thread-unfinished`, naming `resume_hint`), or is damaged and not `restart`ed
                (`corrupt-checkpoint`).
        """
        try:
            snapshot = self.snapshot()
        except ConfigError as err:  # damaged, or its revision is gone or no longer compiles
            lost = (ErrorCode.CORRUPT_CHECKPOINT, ErrorCode.UNKNOWN_REVISION, ErrorCode.REVISION_UNLOADABLE)
            if not restart or err.code not in lost:
                raise
            self.saver.delete_thread(self.thread_id)  # started over: what is damaged or missing goes with it
            return
        if snapshot.metadata is None:
            return
        status = snapshot_status(snapshot)
        if status == "running":
            pid = snapshot.metadata.get("agentmap_pid")
            raise ConfigError(
                f"thread {self.thread_id!r} is running in another process (pid {pid})",
                code=ErrorCode.THREAD_BUSY,
                hint="wait for it to end, or pick another --thread id",
            )
        if not unfinished(snapshot):
            return
        if restart:
            self.saver.delete_thread(self.thread_id)
            return
        raise ConfigError(
            f"thread {self.thread_id!r} has not finished (it is {status} at step {snapshot.metadata.get('step')})",
            code=ErrorCode.THREAD_UNFINISHED,
            hint=f"resume it with `{resume_hint}`, or pass --restart to start it over",
        )


def saved_state_keys(saver: Any, thread_id: str, checkpoint_id: str | None = None) -> tuple[str, ...]:
    """The state keys saved on a thread (so the keys of its first run's initial state stay in the schema)."""
    saved = saver.get_tuple(thread_config(thread_id, checkpoint_id=checkpoint_id))
    return saved_keys(saved.checkpoint.get("channel_values", {}) if saved is not None else {})


def open_thread(
    saver: Any,
    thread_id: str,
    *,
    checkpoint_id: str | None = None,
    force: bool = False,
    latest: bool = False,
    migration: Migration | None = None,
    options: CompileOptions | None = None,
    **compile_options: Any,
) -> Thread:
    """Thread `thread_id` of `saver`, its workflow compiled from the file and graph its checkpoints name: at the
    revision the thread runs (whatever the file holds now), or moved to the file as it is now (`latest`, or with
    `migration`).

    Args:
        saver: The checkpointer holding the thread.
        thread_id: The thread.
        checkpoint_id: Continue from this saved checkpoint instead of the latest (`Thread.fork`).
        force: A thread saved before revisions were recorded: open it on the file as it is now even though the
            file changed since it started (prefer `latest`, which records the move).
        latest: Move the thread to the workflow file as it is now (`Thread.move`), when that is safe.
        migration: Move it with this migration map (`runtime.migration`).
        options: `compile`'s options as one `CompileOptions`, instead of the keywords.
        **compile_options: For `compile` (`agents_dir`, success policy, ...).

    Raises:
        ConfigError: No such thread or checkpoint, or one not started by AgentMap (`unknown-thread`); a thread
            saved before revisions whose file changed (`workflow-changed`); its revision unknown or unloadable; a
            move refused (see `Thread.move`).
        CorruptCheckpointError: The thread's checkpoints or its stored revision are damaged.
        WorkflowFileError: The workflow file is gone and the thread records no revision, or is to be moved to it
            (`file-not-found`).
    """
    from agentmap.runtime.api import compile
    from agentmap.runtime.revisions import compile_at

    given = CompileOptions.given("open_thread", options, compile_options)
    saved = _saved(saver, thread_id, checkpoint_id)
    meta = saved.metadata or {}
    file, graph, revision = str(meta[FILE_KEY]), meta.get(GRAPH_KEY), meta.get(REVISION_KEY)
    keys = saved_keys(saved.checkpoint.get("channel_values", {}))
    moving = latest or migration is not None
    if revision and not moving:  # its own revision, from the stored files
        options = given.but(state_keys=keys, checkpointer=saver)
        app = compile_at(saver, str(revision), file, graph, options, thread_id=thread_id)
        return _opened(Thread(app, thread_id), app, checkpoint_id)
    if not Path(file).is_file():
        raise WorkflowFileError(
            f"thread {thread_id!r} runs {file}, which no longer exists",
            code=ErrorCode.FILE_NOT_FOUND,
            hint="put the workflow file back where it was, or start a new run",
        )
    if not revision and not moving and meta.get(DIGEST_KEY) and file_digest(file) != meta[DIGEST_KEY] and not force:
        raise ConfigError(
            f"{file} has changed since thread {thread_id!r} started, and the thread was saved before revisions were "
            "recorded, so its own version is not kept; its saved steps may not fit the new graph",
            code=ErrorCode.WORKFLOW_CHANGED,
            hint=f"`agentmap diff --thread {thread_id}` says what the edit does to it; move it to the file as it is "
            f"now with `agentmap resume {thread_id} --latest` (or --migrate MAP), or start a new run with --restart",
        )
    now = compile(file, graph, options=given.but(state_keys=keys, checkpointer=saver))
    thread = Thread(now, thread_id)
    if not moving:
        return _opened(thread, now, checkpoint_id)
    return (thread.fork(checkpoint_id) if checkpoint_id else thread).move(now, migration)


def _saved(saver: Any, thread_id: str, checkpoint_id: str | None) -> Any:
    """The thread's checkpoint (its latest, or `checkpoint_id`), which must name its workflow file."""
    saved = saver.get_tuple(thread_config(thread_id, checkpoint_id=checkpoint_id))
    if saved is None and checkpoint_id:
        raise ConfigError(
            f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}",
            code=ErrorCode.UNKNOWN_THREAD,
            hint=f"`agentmap threads show {thread_id}` lists its checkpoints (pass the --checkpoint the run used)",
        )
    if saved is None:
        raise ConfigError(
            f"the checkpoint has no thread {thread_id!r}",
            code=ErrorCode.UNKNOWN_THREAD,
            hint="`agentmap threads` lists the threads it holds (pass the --checkpoint the run used)",
        )
    if not (saved.metadata or {}).get(FILE_KEY):
        raise ConfigError(
            f"thread {thread_id!r} was not started by `agentmap run`, so it does not name its workflow file",
            code=ErrorCode.UNKNOWN_THREAD,
            hint="resume it from Python: agentmap.compile(FILE, checkpointer=...).resume(thread_id)",
        )
    return saved


def _opened(thread: Thread, app: CompiledWorkflow, checkpoint_id: str | None) -> Thread:
    thread._app = app
    if not checkpoint_id:
        return thread
    forked = thread.fork(checkpoint_id)
    forked._app = app
    return forked
