"""What a run of a `CompiledWorkflow` is: `open_run` (`aopen_run` in async code), the one scope that `invoke`,
`ainvoke`, `stream` and `astream` run in, and the config a run goes with (`prepare_run`: its tracker and meter (the
budget, and what a continued thread's journaled model calls cost already), the node cache left out for
`no_cache`, and on a thread the metadata naming its file, graph and process (runtime/threads.py))."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from agentmap._sources import stored
from agentmap.agents.costs import METER_KEY, Meter, is_budget
from agentmap.agents.runner import with_tracker
from agentmap.errors import ConfigError, ErrorCode
from agentmap.runtime._streams import clear_errors
from agentmap.runtime.events import RunHooks, observe_run
from agentmap.runtime.node_cache import cache_hits, without_cache
from agentmap.runtime.values import state_problem

if TYPE_CHECKING:
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.tracking import ExecutionTracker

__all__ = ["Run", "aopen_run", "on_thread", "open_run", "prepare_run"]

_log = logging.getLogger("agentmap.runtime")


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a workflow, as `open_run` opens it: the input and config it goes with, the tracker recording it,
    and `end`, which makes its `RunResult` and hands it to the run's hooks."""

    app: CompiledWorkflow
    state: Any
    config: RunnableConfig
    tracker: ExecutionTracker
    done: Callable[[RunResult], RunResult]

    def end(self, final: Any, stopped: bool = False) -> RunResult:
        """The run's result from LangGraph's final state (None for a stream: the tracker has it all)."""
        return self.done(self.app._result(self.state, final, self.tracker, stopped))


@contextmanager
def open_run(
    app: CompiledWorkflow,
    state: Any,
    config: RunnableConfig | None,
    tracker: ExecutionTracker | None,
    hooks: Sequence[RunHooks],
) -> Iterator[Run]:
    """A run of `app`: its input and config prepared (`prepare_run`), a continued thread's earlier steps on its
    tracker, its errors key cleared, node cache hits recorded, and its hooks told of its start and its end."""
    state, config, tracker = prepare_run(app, state, config, tracker or app.new_tracker())
    earlier = list(app.graph.get_state_history(config)) if _continues(app, state, config) else None
    with _scope(app, state, config, tracker, hooks, earlier) as run:
        yield run


@asynccontextmanager
async def aopen_run(
    app: CompiledWorkflow,
    state: Any,
    config: RunnableConfig | None,
    tracker: ExecutionTracker | None,
    hooks: Sequence[RunHooks],
) -> AsyncIterator[Run]:
    """`open_run` in async code (a continued thread's history read without blocking the loop)."""
    state, config, tracker = prepare_run(app, state, config, tracker or app.new_tracker())
    continues = _continues(app, state, config)
    earlier = [s async for s in app.graph.aget_state_history(config)] if continues else None
    with _scope(app, state, config, tracker, hooks, earlier) as run:
        yield run


def _continues(app: CompiledWorkflow, state: Any, config: RunnableConfig) -> bool:
    """Whether a run continues a saved thread (resumed or answered): its summary starts with the earlier steps."""
    return on_thread(app, config) and (state is None or isinstance(state, Command))


@contextmanager
def _scope(
    app: CompiledWorkflow,
    state: Any,
    config: RunnableConfig,
    tracker: ExecutionTracker,
    hooks: Sequence[RunHooks],
    earlier: list[Any] | None,
) -> Iterator[Run]:
    if earlier is not None:
        from agentmap.runtime.threads import earlier_executions

        tracker.record_earlier(earlier_executions(earlier))
    with (
        stored(app.held) if app.held else nullcontext(),  # at a stored revision: a subgraph file read runs is its copy
        clear_errors(config),
        cache_hits(app.graph, tracker),
        observe_run(app, tracker, config, state, hooks) as done,
    ):
        yield Run(app, state, config, tracker, done)


def on_thread(app: CompiledWorkflow, config: RunnableConfig | None) -> bool:
    """Whether a run with `config` is saved on a thread (a checkpointer and a `thread_id`)."""
    return app.graph.checkpointer not in (None, False) and "thread_id" in (config or {}).get("configurable", {})


def prepare_run(
    app: CompiledWorkflow, state: Any, config: RunnableConfig | None, tracker: ExecutionTracker
) -> tuple[Any, RunnableConfig, ExecutionTracker]:
    """The input and config of a run of `app` watched by `tracker`.

    A config without `recursion_limit` gets the graph's own (`GraphSpec.step_limit`).

    Raises:
        ConfigError: The state is not a mapping, or has a key a run cannot start with (`bad-state`), lacks an
            input no node writes (`missing-state`, as `app.missing_inputs` says), or a budget is not a positive
            number.
    """
    if state is None:
        state = None if on_thread(app, config) else {}  # None on a saved thread: LangGraph continues it
    elif not isinstance(state, (Mapping, Command)):
        raise ConfigError(
            f"the initial state must be a dict of state keys, not {type(state).__name__}",
            code=ErrorCode.BAD_STATE,
            hint='e.g. {"name": "Ada"}',
        )
    elif isinstance(state, Mapping) and (problem := state_problem(state)) is not None:
        raise ConfigError(f"the initial state's {problem.message()}", code=ErrorCode.BAD_STATE, hint=problem.hint)
    if isinstance(state, Mapping) and app.missing_inputs != "ignore":
        _check_inputs(app, state, config)
    prepared: RunnableConfig = {**(config or {})}
    if prepared.get("recursion_limit") is None:  # the graph's own default, not LangGraph's 10,007 steps
        prepared["recursion_limit"] = app.spec.step_limit
    configurable = prepared.get("configurable", {})
    meter = configurable.get(METER_KEY)  # a batch's rows in one process share theirs
    if not isinstance(meter, Meter):
        continued = config if state is None or isinstance(state, Command) else None
        meter = _meter(app, configurable.get("budget"), continued)
    prepared = with_tracker(prepared, tracker, **{METER_KEY: meter})
    if configurable.get("no_cache") and app.graph.cache is not None:  # `--no-cache`: the node cache too
        prepared["configurable"] = without_cache(prepared["configurable"])
    if on_thread(app, config):  # the thread remembers its file, graph and process (see runtime/threads.py)
        from agentmap.runtime.threads import run_metadata

        prepared["metadata"] = {**run_metadata(app), **prepared.get("metadata", {})}
    return state, prepared, tracker


def _check_inputs(app: CompiledWorkflow, state: Mapping[str, Any], config: RunnableConfig | None) -> None:
    """Refuse (or warn of) a new state without an input no node writes, as `app.missing_inputs` says."""
    thread = config["configurable"]["thread_id"] if on_thread(app, config) and config else None
    found = app.check_state(state, thread_id=None if thread is None else str(thread))
    if found is None:
        return
    if app.missing_inputs == "error":
        raise found.error(otherwise='compile(..., missing_inputs="warn") runs anyway, the node reading None')
    _log.warning("%s: %s", app.name, found.message)


def _meter(app: CompiledWorkflow, budget: Any, continued: RunnableConfig | None) -> Meter:
    """The run's meter: its budget (`configurable["budget"]`, USD) and, for a run that continues a thread,
    what the thread's journaled model calls cost already (so a raised budget counts the whole thread)."""
    if budget is not None and not is_budget(budget):
        raise ConfigError(f"the budget must be a positive number of US dollars, got {budget!r}")
    spent = 0.0
    if continued is not None and on_thread(app, continued):
        from agentmap.agents.journal_entries import journal_entries

        thread = str(continued["configurable"]["thread_id"])
        spent = sum(e.cost or 0.0 for e in journal_entries(app.graph.checkpointer, thread))
    return Meter(None if budget is None else float(budget), spent)
