"""Run hooks: the one way to hear a run: traces, batch spans, the server's event stream, the live table.

A run has a start, node starts, node ends and an end. A `RunHooks` object hears them all through one
protocol: `run_started(run)`, `node_started(run, node)`, `node_ended(run, node)` and
`run_ended(run, result, error)` (with the `RunResult`, or the exception that stopped the run), plus
`flush()` (send what it buffers) and `batch_started(attributes)` (a batch's own span). Subclass `RunHooks`
and override only what you need; the rest do nothing. Every way of running (`invoke`, `ainvoke`,
`stream`, `astream`, `batch`) goes through `observe_run`, the one dispatcher, so hooks hear each run once.
A hook's exception is not caught: it stops the run and leaves `invoke` (or the stream) as it is.

Hooks come from four places:

* the workflow's own (`CompiledWorkflow.observers`, e.g. `compile(..., tracing="console")`): every run;
* one run's own (`invoke(..., hooks=[...])`, also `ainvoke`, `stream`, `astream`, `resume`): that run only,
  not the runs nested in it. On a resumed thread they first hear the nodes of its earlier steps (as
  `node_ended`, `metadata["before_resume"]`), so they see the whole run; the server's `nodes` event stream
  and the command line's live table are hooks of this kind;
* the runs this run is nested in (a subgraph node's run, an agent calling a workflow): the workflow's hooks
  are inherited through a context variable, so one trace covers every level (`run.depth` tells them apart);
* a TracerProvider the user installed with `opentelemetry.trace.set_tracer_provider` (checked only when
  OpenTelemetry is already imported, so runs without it pay nothing).

A run with no hooks pays nothing: no `RunInfo`, no tracker listener. `RunObserver` is the older name of
`RunHooks`; an object with only `run_started` returning the end function (the older shape) still works.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.tracking import ExecutionTracker, NodeExecution

__all__ = ["RunEnd", "RunHooks", "RunInfo", "RunObserver", "flush_observers", "observe_run", "observers_for"]

RunEnd = Callable[["RunResult | None", "BaseException | None"], None]
"""Called once when a run ends: with its result, or with the exception that stopped it."""


@dataclass(eq=False)  # one per run, hashable by identity: hooks may key their per-run state by it
class RunInfo:
    """One run, as its observers see it when it starts.

    Attributes:
        workflow: The workflow being run.
        tracker: The run's tracker (its node executions so far).
        config: The LangGraph config of the run (`configurable.thread_id`, callbacks, ...).
        state: The initial state (or the `Command` resuming a paused run).
        depth: 0 for a top-level run, 1 for a run started inside a node of another run, ...
        extra: Free room for observers to share facts about the run.
    """

    workflow: CompiledWorkflow
    tracker: ExecutionTracker
    config: Any
    state: Any
    depth: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def thread_id(self) -> str | None:
        """The run's `thread_id`, when it has one."""
        value = ((self.config or {}).get("configurable") or {}).get("thread_id")
        return None if value is None else str(value)


class RunHooks:
    """Hears runs: a tracer, a batch's spans. Every method is optional.

    Node events may come from parallel branches at once (different threads): guard shared state.
    """

    def run_started(self, run: RunInfo) -> RunEnd | None:
        """A run starts (the returned function, if any, is called as it ends: the older shape)."""
        return None

    def node_started(self, run: RunInfo, node: NodeExecution) -> None:
        """A node of `run` starts (`node.inputs`, `node.start`)."""

    def node_ended(self, run: RunInfo, node: NodeExecution) -> None:
        """A node of `run` ends (`node.success`, `node.result`, `node.error`, `node.duration`)."""

    def run_ended(self, run: RunInfo, result: RunResult | None, error: BaseException | None) -> None:
        """`run` ends: with its result, with the exception that stopped it, or with neither (a stream the
        caller stopped reading)."""

    def flush(self) -> None:
        """Send what is buffered now (called where a process may end without its exit hooks)."""

    def batch_started(
        self, attributes: Mapping[str, Any]
    ) -> tuple[dict[str, Any], Callable[[Mapping[str, Any]], None]] | None:
        """A batch starts: return the run metadata for each row and the function that hears its counts at the
        end, or None (only a tracer's batch span uses it)."""
        return None


RunObserver = RunHooks
"""The older name of `RunHooks`."""


class _OlderShape(RunHooks):
    """An observer of the older shape: `run_started` returning the end function, and a `flush` if it buffers."""

    def __init__(self, observer: Any) -> None:
        self.observer = observer

    def run_started(self, run: RunInfo) -> RunEnd | None:
        end: RunEnd | None = self.observer.run_started(run)
        return end

    def flush(self) -> None:
        flush = getattr(self.observer, "flush", None)
        if flush is not None:
            flush()


_INHERITED: contextvars.ContextVar[tuple[tuple[RunHooks, ...], int]] = contextvars.ContextVar(
    "agentmap_run_observers", default=((), -1)
)


def _global_observers() -> tuple[RunHooks, ...]:
    """The observer for a TracerProvider the user installed, when OpenTelemetry is loaded at all."""
    otel_trace = sys.modules.get("opentelemetry.trace")
    if otel_trace is None:
        return ()
    provider = otel_trace.get_tracer_provider()
    if type(provider).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider"):  # none installed
        return ()
    from agentmap.runtime.views import views

    found = views().installed_provider()
    return (found,) if found is not None else ()


def observers_for(workflow: CompiledWorkflow) -> tuple[RunHooks, ...]:
    """Every hook a run of `workflow` started here would have (empty: nobody is listening)."""
    found = dict.fromkeys((*_INHERITED.get()[0], *workflow.observers, *_global_observers()))
    if not found:  # the common case: nobody listens, nothing more to do
        return ()
    return _as_hooks(found)


def _as_hooks(found: Iterable[Any]) -> tuple[RunHooks, ...]:
    return tuple(hooks if isinstance(hooks, RunHooks) else _OlderShape(hooks) for hooks in found)


def flush_observers(workflow: CompiledWorkflow) -> None:
    """Have every hook of `workflow`'s runs that buffers (a tracer's exporter) send what it holds now.

    Called where a process may end without its exit hooks: after a batch, after each chunk of rows in a worker
    process or Ray worker, after a command's run, and when a server stops.
    """
    for hooks in observers_for(workflow):
        hooks.flush()


@contextmanager
def observe_run(
    workflow: CompiledWorkflow, tracker: ExecutionTracker, config: Any, state: Any, own: Sequence[RunHooks] = ()
) -> Iterator[Callable[[RunResult], RunResult]]:
    """Tell the hooks a run starts (and each node start and end); yield a function that hands them the result
    as the run ends.

    `own`: the hooks given to this run alone (`invoke(..., hooks=[...])`). They hear first the nodes `tracker`
    holds already (a resumed thread's earlier steps, as `node_ended`), and are not inherited by nested runs.

    Use as `with observe_run(app, tracker, config, state, own) as done: result = done(app._result(...))`.
    An exception leaving the block is reported to the hooks, then re-raised.
    """
    depth = _INHERITED.get()[1]
    inherited = observers_for(workflow)
    mine = tuple(h for h in _as_hooks(own) if h not in inherited)
    hooks = (*inherited, *mine)
    if not hooks:
        yield _same
        return
    run = RunInfo(workflow, tracker, config, state, depth + 1)
    ends = [end for end in (h.run_started(run) for h in hooks) if end is not None]
    for earlier in tracker.summary if mine else ():
        for h in mine:
            (h.node_started if earlier.end is None else h.node_ended)(run, earlier)

    def on_node(node: NodeExecution) -> None:
        if node.end is None:
            for h in hooks:
                h.node_started(run, node)
        else:
            for h in hooks:
                h.node_ended(run, node)

    tracker._listen(on_node)
    token = _INHERITED.set((tuple(h.observer if isinstance(h, _OlderShape) else h for h in inherited), depth + 1))
    reported = False

    def finish(result: RunResult | None, error: BaseException | None) -> None:
        nonlocal reported
        reported = True
        for h in hooks:
            h.run_ended(run, result, error)
        for end in ends:
            end(result, error)

    def done(result: RunResult) -> RunResult:
        finish(result, None)
        return result

    try:
        yield done
    except BaseException as exc:
        if not reported:
            finish(None, exc)
        raise
    finally:
        with contextlib.suppress(ValueError):  # a generator finished in another context than it started in
            _INHERITED.reset(token)
        if not reported:  # a stream the caller stopped reading
            finish(None, None)


def _same(result: RunResult) -> RunResult:
    return result
