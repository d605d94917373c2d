"""`CompiledWorkflow` runs a compiled graph and returns `RunResult`s.

Every call gets its own `ExecutionTracker` (passed to the nodes through the LangGraph config), so one
compiled workflow can serve concurrent runs, `batch`, and every LangGraph option: checkpointers,
`thread_id`, `recursion_limit`, callbacks, stream modes, `interrupt()` and `Command(resume=...)`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError, InvalidUpdateError
from langgraph.types import Command

from agentmap.errors import ConfigError, NodeError
from agentmap.runtime.compiler import TRACKER_KEY
from agentmap.runtime.events import RunObserver, observe_run, observers_for
from agentmap.runtime.tracking import ExecutionTracker, NodeExecution, SuccessPolicy

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from agentmap.agents.base import BaseAgent
    from agentmap.spec.models import GraphSpec

__all__ = ["CompiledWorkflow", "RunResult"]


@dataclass(frozen=True)
class RunResult:
    """The outcome of one run.

    Attributes:
        state: The final state (keys of the initial state the graph does not use are kept).
        success: The success policy's verdict.
        summary: One record per node execution, in execution order.
        interrupts: Values of pending `interrupt()` calls, when the run paused for input.
    """

    state: dict[str, Any]
    success: bool
    summary: list[NodeExecution] = field(default_factory=list)
    interrupts: tuple[Any, ...] = ()
    workflow: CompiledWorkflow | None = field(default=None, repr=False, compare=False)
    """The workflow that ran (what `draw()` draws the path on)."""

    @property
    def errors(self) -> list[str]:
        """The error messages of every failed node, in order."""
        return list(self.state.get("errors") or [])

    @property
    def failed_nodes(self) -> list[str]:
        """The names of the nodes that failed, in order."""
        return [e.name for e in self.summary if e.success is False]

    def to_dict(self) -> dict[str, Any]:
        """`{"success", "state", "summary", "errors"}` (values that JSON cannot hold are left for the encoder)."""
        return {
            "success": self.success,
            "state": self.state,
            "summary": [e.to_dict() for e in self.summary],
            "errors": self.errors,
            **({"interrupts": [repr(i) for i in self.interrupts]} if self.interrupts else {}),
        }

    def summary_frame(self) -> Any:
        """The summary as a pandas DataFrame (needs the `notebook` extra)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError('summary_frame() needs pandas: pip install "agentmap[notebook]"') from None
        return pd.DataFrame([e.to_dict() for e in self.summary])

    def draw(self, path: str | Path | None = None) -> str:
        """The graph as SVG with the path this run took: nodes taken, failed, paused; durations; steps.

        Args:
            path: Also write the picture here (`.svg`, or `.png` with the `draw` extra).
        """
        from agentmap.observe.draw import draw_run
        from agentmap.observe.outputs import save

        if self.workflow is None:
            raise ValueError("this RunResult does not know its workflow; draw it with agentmap.observe.draw_run")
        return save(draw_run(self.workflow, self), path)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Jupyter's view: the run's path as SVG (drawn offline), the summary table as HTML, and text."""
        from agentmap.observe.outputs import run_bundle

        return run_bundle(self)


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
    ) -> None:
        self.spec = spec
        self.graph = graph
        self.agents = dict(agents)
        self._policy = success_policy
        self._critical = tuple(critical_nodes)
        self.observers: list[RunObserver] = []
        """Run observers (tracing, progress): each hears every run of this workflow (see `runtime.events`)."""
        ExecutionTracker(success_policy, critical_nodes)  # reject a bad policy now, not at the first run

    @property
    def name(self) -> str:
        """The graph name."""
        return self.spec.name

    def __repr__(self) -> str:
        return f"<CompiledWorkflow {self.name!r}: {len(self.spec.nodes)} nodes from {self.spec.file}>"

    def new_tracker(self, listener: Callable[[NodeExecution], None] | None = None) -> ExecutionTracker:
        """A tracker with this workflow's success policy (pass it to `invoke`/`stream` to watch a run)."""
        return ExecutionTracker(self._policy, self._critical, listener=listener)

    def _prepare(
        self, state: Any, config: RunnableConfig | None, tracker: ExecutionTracker | None
    ) -> tuple[Any, RunnableConfig, ExecutionTracker]:
        if state is None:
            state = {}
        elif not isinstance(state, (Mapping, Command)):
            raise ConfigError(
                f"the initial state must be a dict of state keys, not {type(state).__name__}",
                code="bad-state",
                hint='e.g. {"name": "Ada"}',
            )
        tracker = tracker or self.new_tracker()
        prepared: RunnableConfig = {**(config or {})}
        prepared["configurable"] = {**prepared.get("configurable", {}), TRACKER_KEY: tracker}
        return state, prepared, tracker

    def _result(self, state: Any, final: Any, tracker: ExecutionTracker) -> RunResult:
        values: dict[str, Any] = dict(final) if isinstance(final, Mapping) else {}
        interrupts = tuple(values.pop("__interrupt__", ()))
        if isinstance(state, Mapping):
            values = {**{k: v for k, v in state.items() if k not in values}, **values}
        success = tracker.update_graph_success()
        values["graph_success"] = success
        summary = tracker.summary
        if interrupts:  # a node still open when the run paused is the one waiting for input
            for execution in summary:
                if execution.success is None:
                    execution.metadata["paused"] = True
        return RunResult(values, success, summary, interrupts, self)

    def invoke(
        self,
        state: Mapping[str, Any] | Command[Any] | None = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        **kwargs: Any,
    ) -> RunResult:
        """Run the graph to the end (or to an interrupt).

        Args:
            state: The initial state, or a `Command(resume=...)` to resume a paused thread.
            config: LangGraph config (`thread_id`, `recursion_limit`, `callbacks`, ...), passed through.
            tracker: A tracker to record into (default: a new one with the workflow's policy).
            **kwargs: Passed to `CompiledStateGraph.invoke` (`context`, `durability`, ...).
        """
        state, config, tracker = self._prepare(state, config, tracker)
        with _clear_errors(config), observe_run(self, tracker, config, state) as done:
            final = self.graph.invoke(state, config, **kwargs)
            return done(self._result(state, final, tracker))

    async def ainvoke(
        self,
        state: Mapping[str, Any] | Command[Any] | None = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        **kwargs: Any,
    ) -> RunResult:
        """The async twin of `invoke`."""
        state, config, tracker = self._prepare(state, config, tracker)
        with _clear_errors(config), observe_run(self, tracker, config, state) as done:
            final = await self.graph.ainvoke(state, config, **kwargs)
            return done(self._result(state, final, tracker))

    def stream(
        self,
        state: Mapping[str, Any] | Command[Any] | None = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        stream_mode: Any = "updates",
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Yield LangGraph's stream chunks (per node updates by default; any `stream_mode` passes through)."""
        state, config, tracker = self._prepare(state, config, tracker)
        with _clear_errors(config), observe_run(self, tracker, config, state) as done:
            yield from self.graph.stream(state, config, stream_mode=stream_mode, **kwargs)
            done(self._result(state, None, tracker))

    async def astream(
        self,
        state: Mapping[str, Any] | Command[Any] | None = None,
        config: RunnableConfig | None = None,
        *,
        tracker: ExecutionTracker | None = None,
        stream_mode: Any = "updates",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """The async twin of `stream`."""
        state, config, tracker = self._prepare(state, config, tracker)
        with _clear_errors(config), observe_run(self, tracker, config, state) as done:
            async for chunk in self.graph.astream(state, config, stream_mode=stream_mode, **kwargs):
                yield chunk
            done(self._result(state, None, tracker))

    def batch(
        self, states: Sequence[Mapping[str, Any]], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[RunResult]:
        """Run several initial states (concurrently, through LangGraph's batch), one result each."""
        if observers_for(self):  # traced: one observed run per state, concurrently as LangGraph would
            from langchain_core.runnables.config import get_executor_for_config

            with get_executor_for_config(config) as executor:
                return list(executor.map(lambda s: self.invoke(s, config, **kwargs), states))
        prepared = [self._prepare(s, config, None) for s in states]
        with _clear_errors(config):
            finals = self.graph.batch([p[0] for p in prepared], [p[1] for p in prepared], **kwargs)
        return [self._result(s, f, t) for (s, _, t), f in zip(prepared, finals, strict=True)]

    async def abatch(
        self, states: Sequence[Mapping[str, Any]], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[RunResult]:
        """The async twin of `batch`."""
        return list(await asyncio.gather(*(self.ainvoke(s, config, **kwargs) for s in states)))

    def draw_mermaid(self) -> str:
        """The graph as Mermaid text (drawn offline by LangGraph)."""
        return self.graph.get_graph().draw_mermaid()

    def draw(self, path: str | Path | None = None) -> str:
        """The graph as SVG, drawn offline; also written to `path` (`.svg`, or `.png` with the `draw` extra)."""
        from agentmap.observe.draw import draw_graph
        from agentmap.observe.outputs import save

        return save(draw_graph(self), path)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Jupyter's view: SVG (offline) plus `text/vnd.mermaid` for JupyterLab's Mermaid renderer."""
        from agentmap.observe.draw import draw_graph

        return {"image/svg+xml": draw_graph(self), "text/vnd.mermaid": self.draw_mermaid(), "text/plain": repr(self)}


@contextmanager
def _clear_errors(config: RunnableConfig | None) -> Iterator[None]:
    """Turn LangGraph's recursion and concurrent-update errors into actionable AgentMap errors."""
    try:
        yield
    except GraphRecursionError as exc:
        limit = (config or {}).get("recursion_limit")
        raise NodeError(
            f"the run stopped after reaching the recursion limit{f' ({limit})' if limit else ''}: a loop in the "
            "graph never reaches a node without a next node",
            code="recursion-limit",
            hint='check the loop\'s exit condition, or raise the limit: config={"recursion_limit": 500}',
        ) from exc
    except InvalidUpdateError as exc:
        raise NodeError(
            f"two nodes running at the same time wrote the same state key: {exc}".split("\nFor trouble")[0],
            code="parallel-write",
            hint="give each parallel branch its own Output_Field and combine them after the branches join",
        ) from exc
