"""Run events: the one stream traces, progress bars and viewers listen to.

A run has a start, node starts and node ends (the `ExecutionTracker`'s listeners, see
`ExecutionTracker.add_listener`) and an end. A `RunObserver` hears the start (`run_started`, which can
add listeners to the run's tracker) and returns the function to call at the end, with the `RunResult` or
the exception that stopped the run. Every way of running (`invoke`, `ainvoke`, `stream`, `astream`,
`batch`) goes through `observe_run`, so an observer sees each run once.

Observers come from three places:

* the workflow's own (`CompiledWorkflow.observers`, e.g. `compile(..., tracing="console")`);
* the runs this run is nested in (a subgraph node's run, an agent calling a workflow): observers are
  inherited through a context variable, so one trace covers every level;
* a TracerProvider the user installed with `opentelemetry.trace.set_tracer_provider` (checked only when
  OpenTelemetry is already imported, so runs without it pay nothing).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.tracking import ExecutionTracker

__all__ = ["RunEnd", "RunInfo", "RunObserver", "flush_observers", "observe_run", "observers_for"]

RunEnd = Callable[["RunResult | None", "BaseException | None"], None]
"""Called once when a run ends: with its result, or with the exception that stopped it."""


@dataclass
class RunInfo:
    """One run, as its observers see it when it starts.

    Attributes:
        workflow: The workflow being run.
        tracker: The run's tracker: `tracker.add_listener(fn)` hears every node start and end.
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


class RunObserver(Protocol):
    """Something that watches runs: a tracer, a progress bar, a viewer."""

    def run_started(self, run: RunInfo) -> RunEnd | None:
        """Called as a run starts; returns what to call when it ends (or None)."""


_INHERITED: contextvars.ContextVar[tuple[tuple[RunObserver, ...], int]] = contextvars.ContextVar(
    "agentmap_run_observers", default=((), -1)
)


def _global_observers() -> tuple[RunObserver, ...]:
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


def observers_for(workflow: CompiledWorkflow) -> tuple[RunObserver, ...]:
    """Every observer a run of `workflow` started here would have (empty: nobody is listening)."""
    return tuple(dict.fromkeys((*_INHERITED.get()[0], *workflow.observers, *_global_observers())))


def flush_observers(workflow: CompiledWorkflow) -> None:
    """Have every observer of `workflow`'s runs that buffers (a tracer's exporter) send what it holds now.

    Called where a process may end without its exit hooks: after a batch, after each chunk of rows in a worker
    process or Ray worker, and when a server stops.
    """
    for observer in observers_for(workflow):
        flush = getattr(observer, "flush", None)
        if flush is not None:
            flush()


@contextmanager
def observe_run(
    workflow: CompiledWorkflow, tracker: ExecutionTracker, config: Any, state: Any
) -> Iterator[Callable[[RunResult], RunResult]]:
    """Tell the observers a run starts; yield a function that hands them the result as the run ends.

    Use as `with observe_run(app, tracker, config, state) as done: result = done(app._result(...))`.
    An exception leaving the block is reported to the observers, then re-raised.
    """
    depth = _INHERITED.get()[1]
    observers = observers_for(workflow)
    if not observers:
        yield _same
        return
    info = RunInfo(workflow, tracker, config, state, depth + 1)
    ends = [end for end in (o.run_started(info) for o in observers) if end is not None]
    token = _INHERITED.set((observers, depth + 1))
    reported = False

    def done(result: RunResult) -> RunResult:
        nonlocal reported
        reported = True
        for end in ends:
            end(result, None)
        return result

    try:
        yield done
    except BaseException as exc:
        if not reported:
            reported = True
            for end in ends:
                end(None, exc)
        raise
    finally:
        with contextlib.suppress(ValueError):  # a generator finished in another context than it started in
            _INHERITED.reset(token)
        if not reported:  # a stream the caller stopped reading
            for end in ends:
                end(None, None)


def _same(result: RunResult) -> RunResult:
    return result
