"""`CompiledWorkflow` runs a compiled graph and returns `RunResult`s.

Every call gets its own `ExecutionTracker` (passed to the nodes through the LangGraph config), so one
compiled workflow can serve concurrent runs, `batch`, and every LangGraph option: checkpointers,
`thread_id`, `recursion_limit`, callbacks, stream modes, `interrupt()` and `Command(resume=...)`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from contextlib import aclosing
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from agentmap.agents.builtins import InputAgent
from agentmap.runtime._run_config import aopen_run, on_thread, open_run, prepare_run
from agentmap.runtime._streams import clear_errors, node_updates, run_until
from agentmap.runtime.events import RunHooks, flush_observers, observers_for
from agentmap.runtime.options import CompileOptions
from agentmap.runtime.results import RunResult
from agentmap.runtime.tracking import ExecutionTracker, SuccessPolicy, resolve_policy

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from agentmap._sources import Reading
    from agentmap.agents.base import BaseAgent
    from agentmap.runtime.durable import Thread
    from agentmap.runtime.inputs import MissingState
    from agentmap.runtime.options import MissingInputs
    from agentmap.runtime.revisions import CodeChange, Revision
    from agentmap.spec.models import GraphSpec

__all__ = ["CompiledWorkflow"]


class CompiledWorkflow:
    """A compiled graph, ready to run.

    Attributes:
        spec: The graph's specification.
        graph: LangGraph's `CompiledStateGraph`: stream it, checkpoint it, embed it in another graph.
        agents: The node agents by name.
    """

    def __init__(
        self,
        spec: GraphSpec,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        agents: Mapping[str, BaseAgent],
        *,
        success_policy: SuccessPolicy | None = None,
        critical_nodes: Sequence[str] = (),
        missing_inputs: MissingInputs = "error",
    ) -> None:
        self.spec = spec
        self.graph = graph
        self.agents = dict(agents)
        self.observers: list[RunHooks] = []
        """Run hooks (`RunHooks`: tracing, progress): each hears every run of this workflow (see `runtime.events`)."""
        self.fused: dict[str, list[str]] = {
            name: list(node.metadata["nodes"])
            for name, node in graph.builder.nodes.items()
            if node.metadata and node.metadata.get("agent_type") == "fused"
        }
        """Fused chains (`compile(fuse=True)`): the LangGraph node's name -> the CSV nodes it runs, in order."""
        self.computes_only = all(getattr(node.runnable, "inline", False) for node in graph.builder.nodes.values())
        """Every node is a built-in agent that only computes (no I/O, no waiting, no retry, no `func:` router)."""
        self._verdict = resolve_policy(success_policy, critical_nodes)  # a bad policy fails now, not at a run
        self.options = CompileOptions()
        """The options it was compiled with (`compile` sets them): a thread's revision is compiled with them too."""
        self.at_revisions: dict[tuple[str, tuple[str, ...]], CompiledWorkflow] = {}
        """This graph compiled at the revisions its threads run (`Thread.app`), by revision and saved keys."""
        self._sources: tuple[Reading, str | Path | None] | None = None  # what `compile` read, and the config file
        self._pinned: Revision | None = None
        self.held: Mapping[Path, bytes] | None = None
        """The stored files a workflow compiled at a revision reads instead of the disk's (its runs too)."""
        self.code_changes: tuple[CodeChange, ...] = ()
        """Compiled at a stored revision: its Python files that changed since (or are gone)."""
        self.missing_inputs: MissingInputs = missing_inputs
        """What a run with a new state lacking an input no node writes does: `error` (`missing-state`), `warn`
        or `ignore` (see `agentmap.compile`)."""

    @property
    def name(self) -> str:
        """The graph name."""
        return self.spec.name

    def __repr__(self) -> str:
        return f"<CompiledWorkflow {self.name!r}: {len(self.spec.nodes)} nodes from {self.spec.file}>"

    def flush(self) -> None:
        """Have this workflow's run hooks that buffer (a tracer's exporter) send what they hold now.

        For a program that ran the workflow and may end without its exit hooks (a server stopping, a worker
        process): the spans of its runs are not lost.
        """
        flush_observers(self)

    def pausing_nodes(self) -> list[str]:
        """Nodes that pause the run for an answer (`input` with `interrupt: true`, `human`, `suspend`).

        A run holding one needs a checkpointer to be resumed.
        """
        from agentmap.agents.pausing import pauses_run

        return [name for name, agent in self.agents.items() if pauses_run(type(agent), agent.context)]

    def prompting_nodes(self) -> list[str]:
        """`input` nodes that ask on the terminal (or read piped stdin) rather than pausing the run."""

        pausing = set(self.pausing_nodes())
        return [name for name, agent in self.agents.items() if isinstance(agent, InputAgent) and name not in pausing]

    def new_tracker(self) -> ExecutionTracker:
        """A tracker with this workflow's success policy (pass it to `invoke`/`stream` to read its summary as the
        run goes; to hear each node start and end, give the run `hooks`)."""
        # the policy, resolved once per workflow
        return ExecutionTracker(self._verdict, handled=self.spec.handled_failures)

    @property
    def file_digest(self) -> str | None:
        """The SHA-256 of the workflow file as it was compiled (threads record it): the bytes `compile` read, or
        those of the stored revision it was compiled at."""
        revision = self.revision
        if revision is not None:
            return revision.files.get(revision.workflow)
        return self._disk_digest

    @cached_property
    def _disk_digest(self) -> str | None:
        from agentmap.runtime.threads import file_digest

        return file_digest(self.spec.file) if self.spec.file else None

    @cached_property
    def _revision_parts(self) -> tuple[Revision, dict[str, bytes]] | None:
        from agentmap.runtime.revisions import revision_of

        if self._sources is None or not self.spec.file:
            return None
        reading, config_file = self._sources
        return revision_of(self.spec.file, reading, config_file)

    @property
    def revision(self) -> Revision | None:
        """The revision this workflow was compiled from (`runtime.revisions`): its files as `compile` read them, or
        the stored revision it was compiled at; None for a workflow not compiled from a file."""
        if self._pinned is not None:
            return self._pinned
        parts = self._revision_parts
        return parts[0] if parts is not None else None

    def _pin(self, revision: Revision, held: Mapping[Path, bytes], changes: tuple[CodeChange, ...]) -> None:
        """Mark this workflow as compiled at the stored `revision` (`revisions.compile_at`)."""
        self._pinned = revision
        self.held = dict(held)
        self.code_changes = changes

    def keep_revision(self) -> str | None:
        """Store this workflow's revision in its checkpointer's database (once per database); its id, or None when
        there is none to keep (no file, or a saver that keeps no revisions)."""
        from agentmap.runtime.revisions import can_store, keep

        revision, saver = self.revision, self.graph.checkpointer
        if revision is None or not can_store(saver):
            return None
        if self._pinned is None and self._revision_parts is not None:
            keep(saver, revision, self._revision_parts[1])
        return revision.id

    def _result(self, state: Any, final: Any, tracker: ExecutionTracker, stopped: bool = False) -> RunResult:
        values: dict[str, Any] = dict(final) if isinstance(final, Mapping) else {}
        interrupts = tuple(values.pop("__interrupt__", ()))
        if isinstance(state, Mapping):
            values = {**{k: v for k, v in state.items() if k not in values}, **values}
        success, summary = tracker.conclude()
        values["graph_success"] = success
        if interrupts:  # a node still open when the run paused is the one waiting for input
            for execution in summary:
                if execution.success is None:
                    execution.metadata["paused"] = True
        return RunResult(values, success, summary, interrupts, stopped, self)

    def invoke(
        self,
        state: Mapping[str, Any] | Command[Any] | None = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        hooks: Sequence[RunHooks] = (),
        stop: threading.Event | None = None,
        **kwargs: Any,
    ) -> RunResult:
        """Run the graph to the end (or to an interrupt).

        Args:
            state: The initial state, or a `Command(resume=...)` to resume a paused thread.
            config: LangGraph config (`thread_id`, `recursion_limit`, `callbacks`, ...), passed through; without a
                `recursion_limit`, the graph's own: `spec.step_limit` (ten steps per node, at least 50).
            tracker: A tracker to record into (default: a new one with the workflow's policy).
            hooks: `RunHooks` for this run alone (a live view, an event stream): they hear its start, each node's
                start and end, and its end, like the workflow's `observers` (see `runtime.events`); on a resumed
                thread, first the nodes of its earlier steps.
            stop: When this event is set (from another thread, a signal handler), the run ends after the step
                that is running, once that step is saved; the result has `stopped=True` and the thread
                continues with `resume`. A graceful shutdown for a command or a server.
            **kwargs: Passed to `CompiledStateGraph.invoke` (`context`, `durability`, ...).
        """
        with open_run(self, state, config, tracker, hooks) as run:
            if stop is None:
                return run.end(self.graph.invoke(run.state, run.config, **kwargs))
            chunks = self.graph.stream(run.state, run.config, stream_mode=["values", "updates"], **kwargs)
            final, stopped = run_until(chunks, stop)
            if stopped and on_thread(self, run.config):  # the event may have come during the last step
                from agentmap.runtime.threads import unfinished

                stopped = unfinished(self.graph.get_state(run.config))
            return run.end(final, stopped)

    async def ainvoke(
        self,
        state: Mapping[str, Any] | Command[Any] | None = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        hooks: Sequence[RunHooks] = (),
        **kwargs: Any,
    ) -> RunResult:
        """The async twin of `invoke`."""
        async with aopen_run(self, state, config, tracker, hooks) as run:
            return run.end(await self.graph.ainvoke(run.state, run.config, **kwargs))

    def stream(
        self,
        state: Mapping[str, Any] | Command[Any] | None = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        hooks: Sequence[RunHooks] = (),
        stream_mode: Any = "updates",
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Yield LangGraph's stream chunks (per node updates by default; any `stream_mode` passes through).

        With fused chains and `stream_mode="updates"`, each CSV node of a chain still yields its own update.
        """
        per_node = bool(self.fused) and stream_mode == "updates"
        with open_run(self, state, config, tracker, hooks) as run:
            mode: Any = ["updates", "custom"] if per_node else stream_mode
            chunks = self.graph.stream(run.state, run.config, stream_mode=mode, **kwargs)
            yield from (node_updates(chunks, self.fused) if per_node else chunks)
            run.end(None)

    async def astream(
        self,
        state: Mapping[str, Any] | Command[Any] | None = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        hooks: Sequence[RunHooks] = (),
        stream_mode: Any = "updates",
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        """The async twin of `stream`."""
        per_node = bool(self.fused) and stream_mode == "updates"
        mode: Any = ["updates", "custom"] if per_node else stream_mode
        async with aopen_run(self, state, config, tracker, hooks) as run:
            # closed with this generator, so a caller that stops reading stops the graph at once
            stream: Any = self.graph.astream(run.state, run.config, stream_mode=mode, **kwargs)  # an async generator
            async with aclosing(stream) as chunks:
                async for chunk in chunks:
                    for item in node_updates([chunk], self.fused) if per_node else (chunk,):
                        yield item
            run.end(None)

    def batch(
        self, states: Sequence[Mapping[str, Any]], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[RunResult]:
        """Run several initial states (concurrently, through LangGraph's batch), one result each.

        A workflow whose nodes only compute (`computes_only`) runs its states one after another in the calling
        thread: threads would only take turns on the interpreter lock, each turn costing a hand-over.
        """
        if observers_for(self) or self.graph.cache is not None:  # traced or node-cached: one run per state
            from langchain_core.runnables.config import get_executor_for_config

            with get_executor_for_config(config) as executor:
                return list(executor.map(lambda s: self.invoke(s, config, **kwargs), states))
        prepared = [prepare_run(self, s, config, self.new_tracker()) for s in states]
        with clear_errors(prepared[0][1] if prepared else config):
            if self.computes_only and not kwargs:
                finals = [self.graph.invoke(state, run_config) for state, run_config, _ in prepared]
            else:
                finals = self.graph.batch([p[0] for p in prepared], [p[1] for p in prepared], **kwargs)
        return [self._result(s, f, t) for (s, _, t), f in zip(prepared, finals, strict=True)]

    async def abatch(
        self, states: Sequence[Mapping[str, Any]], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[RunResult]:
        """The async twin of `batch`."""
        return list(await asyncio.gather(*(self.ainvoke(s, config, **kwargs) for s in states)))

    def resume(
        self,
        thread_id: str,
        answer: Any = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        checkpoint_id: str | None = None,
        **kwargs: Any,
    ) -> RunResult:
        """Continue thread `thread_id`: from its last saved step, or with `answer` for the node that paused it.

        Nothing that completed runs again (a node that was running when the process died runs once more).
        The result's summary is the whole run: the nodes of the steps saved before come first, with
        `metadata["before_resume"] = True`.

        Args:
            thread_id: The thread to continue.
            answer: The answer to a paused node's question, checked against it first (`check_answer`); with
                several questions waiting, `{interrupt id: answer}` for each (`runtime.durable.answers_for`).
            config: More LangGraph config (`recursion_limit`, callbacks, ...).
            tracker: A tracker to record into.
            checkpoint_id: Continue from this saved checkpoint of the thread instead of its latest (the one a
                `corrupt-checkpoint` error names as the last good one); the thread goes on from there.
            **kwargs: Passed to `invoke` (`hooks` for this run alone, `durability`, ...).

        Raises:
            ConfigError: No checkpointer, no such thread, a finished thread, an answer nobody asked for, several
                questions without an answer for each (`ambiguous-resume`), a question another resume answered first
                (`already-answered`), or a damaged checkpoint (`corrupt-checkpoint`).
            AnswerError: The answer does not fit the question; the thread stays paused.
        """
        thread = self.thread(thread_id)
        if checkpoint_id:
            thread = thread.fork(checkpoint_id)
        return thread.resume(answer, config, tracker=tracker, **kwargs)

    async def aresume(
        self,
        thread_id: str,
        answer: Any = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        checkpoint_id: str | None = None,
        **kwargs: Any,
    ) -> RunResult:
        """The async twin of `resume`."""
        thread = self.thread(thread_id)
        if checkpoint_id:
            thread = await asyncio.to_thread(thread.fork, checkpoint_id)
        return await thread.aresume(answer, config, tracker=tracker, **kwargs)

    def check_state(
        self, state: Mapping[str, Any], *, thread_id: str | None = None, strict: bool = False
    ) -> MissingState | None:
        """What `state` lacks of the inputs no node writes (`runtime.inputs.missing_state`), or None.

        On thread `thread_id` the values it saved count as given (read only when `state` lacks a key). Every run
        with a new state asks this (as `missing_inputs` says); `agentmap run`, `serve` and `batch` ask it before
        they start, to say what it found in their own words: an error, or a warning.

        Raises:
            ConfigError: `strict` and a key is missing (`missing-state`).
        """
        if all(key in state for key in self._asked):  # the common case, without building a message
            return None
        from agentmap.runtime.inputs import missing_state

        found = missing_state(self.spec, state, self._called)
        if found is not None and thread_id is not None and self.graph.checkpointer not in (None, False, True):
            from agentmap.runtime.threads import thread_config

            saved = self.graph.get_state(thread_config(thread_id)).values  # its values, as this workflow reads them
            if saved:
                found = missing_state(self.spec, {**saved, **state}, self._called)
        if found is not None and strict:
            raise found.error()
        return found

    @cached_property
    def _asked(self) -> tuple[str, ...]:
        """The inputs a new state must hold: those no node writes (see `runtime.inputs.missing_inputs`)."""
        from agentmap.runtime.inputs import missing_inputs

        return tuple(missing_inputs(self.spec, {}, self._called))

    @cached_property
    def _called(self) -> frozenset[str]:
        """The nodes another node calls by name (an orchestrator's planner and workers): their caller gives their
        inputs."""
        return frozenset(n for agent in self.agents.values() for n in type(agent).referenced_nodes(agent.context))

    def thread(self, thread_id: str) -> Thread:
        """Thread `thread_id` of this workflow's checkpointer: its status, the questions it waits on, answering
        and continuing it, its history, a fork from an earlier checkpoint (see `runtime.durable`).

        Raises:
            ConfigError: The workflow was compiled without a checkpointer (`usage`).
        """
        from agentmap.runtime.durable import Thread

        return Thread(self, thread_id)

    def draw_mermaid(self) -> str:
        """The graph as Mermaid text (drawn offline by LangGraph)."""
        return self.graph.get_graph().draw_mermaid()

    def draw(self, path: str | Path | None = None) -> str:
        """The graph as SVG, drawn offline; also written to `path` (`.svg`, or `.png` with the `draw` extra)."""
        from agentmap.runtime.views import views

        return views().draw_graph(self, path)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Jupyter's view: SVG (offline) plus `text/vnd.mermaid` for JupyterLab's Mermaid renderer."""
        from agentmap.runtime.views import views

        return views().graph_bundle(self)
