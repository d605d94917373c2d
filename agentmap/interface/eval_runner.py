"""`agentmap eval run`: run scenarios against an agent and write one csv_specs/evaluation.md log per run.

Each scenario is run single-turn (one row) or multi-turn (several rows, the history passed back to the
agent each turn). Every run ends in a valid log, even when the agent raises, times out, or there is no
user message: the last assistant turn then holds a short error and `stop_reason` says which. Runs go
concurrently under a semaphore (scripted runs of a workflow agent with no timeout: on worker threads that
each take the next run, as `agentmap batch` runs rows); a run whose log is whole and marked done in the folder's
`runs.jsonl` (`run_record.py`) is resumed, not redone, unless it failed (`agent_error`, `timeout`).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import os
import sys
import threading
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmap.contracts.conversation import StopReason
from agentmap.errors import ConfigError
from agentmap.interface._conversation_run import RunFolder, RunOutcome, RunSettings, run_one, run_scripted
from agentmap.interface.agent_calls import SYNC_TWIN, as_async_agent
from agentmap.interface.logs import LogFormatError, read_log
from agentmap.interface.manifest import Manifest, ManifestEntry, read_manifest, write_manifest
from agentmap.interface.run_record import RunRecords, RunRecordWriter
from agentmap.interface.scenarios import Scenario, load_scenarios
from agentmap.interface.simulated_user import make_player

__all__ = [
    "RETRIED_STOP_REASONS",
    "EvalRunSummary",
    "RunOutcome",
    "run_eval",
]

RETRIED_STOP_REASONS = frozenset({StopReason.AGENT_ERROR, StopReason.TIMEOUT})
"""Stop reasons a resumed run does again: the failure may be transient (a provider down, a slow reply).
`missing_input` is kept: the scenario has no message to send, so running it again cannot help."""


@dataclass
class EvalRunSummary:
    """What `run_eval` did.

    Attributes:
        out_dir: The logs folder.
        manifest: The manifest file written beside the logs.
        outcomes: One entry per run, in scenario order.
    """

    out_dir: Path
    manifest: Path
    outcomes: list[RunOutcome] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Return how many runs ended with each stop reason, plus `skipped`."""
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            key = "skipped" if outcome.skipped else outcome.stop_reason
            counts[key] = counts.get(key, 0) + 1
        return counts


async def run_eval(
    scenarios: Sequence[Scenario] | str | os.PathLike[str],
    agent: Callable[..., Any],
    out_dir: str | os.PathLike[str],
    *,
    concurrency: int = 4,
    max_turns: int | None = None,
    timeout: float | None = None,
    runs: int = 1,
    mode: str = "synthetic",
    memory: str | None = None,
    config: Mapping[str, Any] | None = None,
    resume: bool = True,
    progress: bool | None = None,
    user_model: str | None = None,
    model_settings: Mapping[str, Any] | None = None,
) -> EvalRunSummary:
    """Run every scenario `runs` times against `agent`, writing one log per run and a manifest.

    Args:
        scenarios: The scenarios, or the path of a scenarios CSV.
        agent: `run_agent(prompt, chat_history=None, memory=None, config=None)`, async or not.
        out_dir: The folder for the logs and `manifest.json` (created if needed).
        concurrency: How many runs go at once.
        max_turns: The most user turns per run; a longer scenario stops with `max_turns`.
        timeout: Seconds the agent has for each reply; None waits forever.
        runs: Runs per scenario (for pass^k).
        mode: The `mode` written in each log's metadata.
        memory: Passed to the agent as `memory` on every call.
        config: Passed to the agent as `config` on every call.
        resume: Skip runs whose log is already complete in `out_dir` (and whose messages are unchanged),
            except those that stopped with `agent_error` or `timeout`, which run again.
        progress: Show a progress bar; None shows one when stderr is a terminal.
        user_model: The model playing simulated users whose scenario names none (`provider:model`; default
            `offline`, the scripted policy of `agentmap.interface.simulated_user`).
        model_settings: Settings for resolving the user model (`llm.base_url`, `llm.api_key_env`, ...).

    Returns:
        The outcome of every run.

    Raises:
        ConfigError: When `concurrency`, `max_turns`, `timeout` or `runs` is out of range, or a simulated user's
            model cannot be built.
        ScenarioError: When the scenarios file has a mistake.
    """
    _check_limits(concurrency=concurrency, max_turns=max_turns, timeout=timeout, runs=runs)
    source = None
    if isinstance(scenarios, str | os.PathLike):
        source = str(scenarios)
        scenarios = load_scenarios(scenarios)
    scenarios = list(scenarios)
    for scenario in scenarios:  # an unusable user model stops before any run
        if scenario.user is not None:
            make_player(scenario.user, user_model, model_settings)
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    records = RunRecords(path)
    manifest, todo, done = _plan(path, list(scenarios), runs, resume, source, records)
    manifest_path = write_manifest(path, manifest)
    writer = RunRecordWriter(records, [e.log for e in manifest.runs], {entry.log for _, entry in todo})
    folder = RunFolder(path, writer)
    # as many threads as runs at once, like `agentmap batch` (the loop's default pool may have fewer)
    threads = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="eval-run")
    call = as_async_agent(agent, threads)
    gate = asyncio.Semaphore(concurrency)
    settings = RunSettings(
        max_turns, timeout, mode, memory, dict(config) if config is not None else None, user_model, model_settings
    )
    outcomes: dict[tuple[str, int], RunOutcome] = {(o.scenario, o.run): o for o in done}

    with _ProgressBar(progress, total=len(todo) + len(done), completed=len(done)) as advance:

        async def _one(scenario: Scenario, entry: ManifestEntry) -> None:
            async with gate:
                if folder.failure is not None:  # a log could not be written: no run starts after it
                    raise folder.failure
                outcome = await run_one(call, scenario, entry, folder, settings)
            outcomes[(entry.scenario, entry.run)] = outcome
            advance()

        twin = getattr(agent, SYNC_TWIN, None)
        try:
            if callable(twin) and timeout is None and all(scenario.user is None for scenario, _ in todo):
                await _in_threads(twin, todo, folder, settings, threads, concurrency, outcomes, advance)
            else:
                await asyncio.gather(*(_one(scenario, entry) for scenario, entry in todo))
        finally:  # a timed-out run still in its thread ends after its step; nothing waits for it
            threads.shutdown(wait=False, cancel_futures=True)
            folder.close()  # every finished run written (a late one of a timed-out thread stays to be redone)
    if folder.failure is not None:  # a log that could not be written: the runs after it were not written
        raise folder.failure
    order = [(e.scenario, e.run) for e in manifest.runs if (e.scenario, e.run) in outcomes]
    return EvalRunSummary(out_dir=path, manifest=manifest_path, outcomes=[outcomes[k] for k in order])


def _check_limits(*, concurrency: int, max_turns: int | None, timeout: float | None, runs: int) -> None:
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
    if max_turns is not None and max_turns < 1:
        raise ConfigError(f"--max-turns must be at least 1, got {max_turns}")
    if timeout is not None and not 0 < timeout < math.inf:  # NaN too: no number of seconds
        raise ConfigError(f"--timeout must be a positive number of seconds, got {timeout}")
    if runs < 1:
        raise ConfigError(f"--runs must be at least 1, got {runs}")


def _plan(
    folder: Path, scenarios: list[Scenario], runs: int, resume: bool, source: str | None, records: RunRecords
) -> tuple[Manifest, list[tuple[Scenario, ManifestEntry]], list[RunOutcome]]:
    """Decide which runs to do, reusing the manifest (and the runs marked done in `records`) already in `folder`."""
    old = read_manifest(folder) or Manifest()
    known = {(e.scenario, e.run): e for e in old.runs}
    entries = dict(known)
    todo: list[tuple[Scenario, ManifestEntry]] = []
    done: list[RunOutcome] = []
    for scenario in scenarios:
        for run in range(1, runs + 1):
            previous = known.get((scenario.name, run))
            if resume and previous is not None and previous.fingerprint == scenario.fingerprint:
                reason = _complete(folder / previous.log, records.done(previous.log))
                if reason is not None and reason not in RETRIED_STOP_REASONS:
                    done.append(RunOutcome(scenario.name, run, folder / previous.log, reason, skipped=True))
                    continue
            name = previous.log if previous is not None else f"{uuid.uuid4().hex[:12]}.log"
            entry = ManifestEntry(log=name, scenario=scenario.name, run=run, fingerprint=scenario.fingerprint)
            entries[(scenario.name, run)] = entry
            todo.append((scenario, entry))
    merged = dict(old.scenarios) | {s.name: s for s in scenarios}
    manifest = Manifest(scenarios_file=source or old.scenarios_file, runs=list(entries.values()), scenarios=merged)
    return manifest, todo, done


def _complete(path: Path, done: bool | None) -> str | None:
    """Return the stop reason of a run marked done (`done` None: a folder from before run records, whose logs
    were written whole or not at all) with a valid log at `path`, or None."""
    if done is False:
        return None
    try:
        return read_log(path).metadata.stop_reason
    except (OSError, LogFormatError):
        return None


async def _in_threads(
    twin: Callable[..., Any],
    todo: list[tuple[Scenario, ManifestEntry]],
    folder: RunFolder,
    settings: RunSettings,
    threads: ThreadPoolExecutor,
    concurrency: int,
    outcomes: dict[tuple[str, int], RunOutcome],
    advance: Callable[[], None],
) -> None:
    """Scripted runs of a workflow agent's synchronous twin (`SYNC_TWIN`), with no timeout: `concurrency` worker
    threads each take the next run, run it and write its log, as `agentmap batch` runs rows, with no hand-over
    to the event loop for every run. Cancelled (Ctrl-C), the runs in flight end after their step."""
    queue, stop = deque(todo), threading.Event()

    def work() -> None:
        while not stop.is_set() and folder.failure is None:  # a log that could not be written stops every thread
            try:
                scenario, entry = queue.popleft()
            except IndexError:
                return
            outcomes[(entry.scenario, entry.run)] = run_scripted(twin, scenario, entry, folder, settings, stop)
            advance()

    loop = asyncio.get_running_loop()
    workers: list[Awaitable[None]] = [
        loop.run_in_executor(threads, contextvars.copy_context().run, work) for _ in range(min(concurrency, len(todo)))
    ]
    try:
        await asyncio.gather(*workers)
    except BaseException:  # cancelled (Ctrl-C), or a log could not be written: the other threads stop too
        stop.set()
        raise


class _ProgressBar:
    """A rich progress bar on a terminal, or nothing; `__enter__` returns the advance callback."""

    def __init__(self, enabled: bool | None, *, total: int, completed: int) -> None:
        self._enabled = sys.stderr.isatty() if enabled is None else enabled
        self._total, self._completed = total, completed
        self._bar: Any = None

    def __enter__(self) -> Callable[[], None]:
        if not self._enabled:
            return lambda: None
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(console=Console(stderr=True), transient=False)
        self._bar.start()
        task = self._bar.add_task("eval run", total=self._total, completed=self._completed)
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
