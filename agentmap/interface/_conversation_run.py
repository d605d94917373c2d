"""One run of `agentmap eval run`: a conversation with the agent, scripted or with a simulated user, and its
csv_specs/evaluation.md log and run record written once it ends (`eval_runner.py` decides which runs to do and
runs them concurrently)."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agentmap.contracts.conversation import ConversationLog, RunMetadata, StopReason, Turn
from agentmap.errors import ConfigError, ErrorCode
from agentmap.interface.agent_calls import RunAgent, agent_error_text, describe_error, reply_text
from agentmap.interface.history import format_chat_history
from agentmap.interface.logs import write_log
from agentmap.interface.manifest import ManifestEntry
from agentmap.interface.run_record import RunRecord, RunRecordWriter
from agentmap.interface.scenarios import Scenario
from agentmap.interface.simulated_user import make_player, stop_reached

__all__ = ["RunFolder", "RunOutcome", "RunSettings", "run_one", "run_scripted"]


@dataclass(frozen=True)
class RunOutcome:
    """How one run went.

    Attributes:
        scenario: The scenario's name.
        run: The 1-based run number.
        log: The log file.
        stop_reason: The run's stop reason.
        skipped: True when a complete log already existed and the run was not redone (a run that had
            failed with `agent_error` or `timeout` is always redone).
    """

    scenario: str
    run: int
    log: Path
    stop_reason: str
    skipped: bool = False


class RunFolder:
    """Where the runs of one `eval run` are written: the logs folder (it exists) and its run records.

    A finished run is handed over (`save`) to one writer thread, which writes its log and then its run record
    (the record's line marks the run done), in the order the runs finished: the runs' own threads go on to
    their next run instead of each creating files (on two cores, eight threads each creating a file per run
    took eval run about a tenth of its time). `close` waits for every run handed over to be written.
    """

    def __init__(self, path: Path, records: RunRecordWriter) -> None:
        self.path, self.records = path, records
        self.failure: BaseException | None = None
        """The first error writing a run (a log that cannot be written): no run after it is written."""
        self._jobs: queue.SimpleQueue[tuple[Path, ConversationLog, str, RunRecord] | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._closed = False
        self._lock = threading.Lock()

    def save(self, path: Path, log: ConversationLog, name: str, record: RunRecord) -> None:
        """Hand the finished run over to be written: its log at `path`, then its record for the log `name`."""
        with self._lock:
            if self._closed:  # a run of a timed-out thread that ended after the eval run: it is redone next time
                return
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_all, name="eval-logs", daemon=True)
                self._writer.start()
            self._jobs.put((path, log, name, record))

    def _write_all(self) -> None:
        while (job := self._jobs.get()) is not None:
            if self.failure is not None:
                continue
            path, log, name, record = job
            try:
                write_log(path, log, atomic=False)
                self.records.add(name, record)
            except OSError as exc:  # the runs' threads see it and stop after their step
                self.failure = ConfigError(
                    f"cannot write the log of scenario {log.metadata.scenario!r} to {exc.filename or path}: "
                    f"{exc.strerror or exc}",
                    code=ErrorCode.CANNOT_WRITE,
                    hint="give --out a folder you can write to (the runs written so far are kept; run again to go on)",
                )
            except BaseException as exc:
                self.failure = exc

    def close(self) -> None:
        """Wait until every run handed over is written (or a write failed: `failure`), then close the records."""
        with self._lock:
            writer, self._closed = self._writer, True
        if writer is not None:
            self._jobs.put(None)
            writer.join()
        self.records.close()


@dataclass(frozen=True)
class RunSettings:
    """What every run of one `eval run` is given (its options)."""

    max_turns: int | None
    timeout: float | None
    mode: str
    memory: str | None
    config: dict[str, Any] | None
    user_model: str | None = None
    model_settings: Mapping[str, Any] | None = None


async def run_one(
    call: RunAgent, scenario: Scenario, entry: ManifestEntry, folder: RunFolder, settings: RunSettings
) -> RunOutcome:
    if scenario.user is not None:
        return await _run_simulated(call, scenario, entry, folder, settings)
    record, turns = RunRecord(), list[Turn]()
    script = _script(scenario, settings, turns)
    try:
        prompt, history = next(script)
        while True:
            prompt, history = script.send(await _ask(call, prompt, history, settings, record))
    except StopIteration as finished:
        max_turns, reason = finished.value
    return _write(scenario, entry, folder, settings, turns, max_turns, reason, record)


def run_scripted(
    twin: Callable[..., Any],
    scenario: Scenario,
    entry: ManifestEntry,
    folder: RunFolder,
    settings: RunSettings,
    stop: threading.Event,
) -> RunOutcome:
    """A scripted run through the agent's synchronous twin, in the calling worker thread (no timeout): the same
    turns, log and run record as `run_one` gives it."""
    record, turns = RunRecord(), list[Turn]()
    script = _script(scenario, settings, turns)
    try:
        prompt, history = next(script)
        while True:
            prompt, history = script.send(_ask_twin(twin, prompt, history, settings, record, stop))
    except StopIteration as finished:
        max_turns, reason = finished.value
    return _write(scenario, entry, folder, settings, turns, max_turns, reason, record)


_Ask = tuple[str, list[tuple[str, str]]]
_Answer = tuple[tuple[str, str] | None, str | None]


def _script(scenario: Scenario, settings: RunSettings, turns: list[Turn]) -> Generator[_Ask, _Answer, tuple[int, str]]:
    """A scripted run's turns, appended to `turns`: yields each `(message, history)` to ask the agent and receives
    `_ask`'s answer; returns the log's `(max_turns, stop_reason)`. The same script runs on the event loop and in a
    worker thread."""
    limit = len(scenario.turns) if settings.max_turns is None else settings.max_turns
    history: list[tuple[str, str]] = []
    reason: str | None = None
    for step in scenario.turns[:limit]:
        turns.append(Turn(role="user", timestamp=datetime.now(), text=step.message))
        if not step.message.strip():  # logged as is, so the turns still alternate (csv_specs/evaluation.md, 6.3)
            reason = StopReason.MISSING_INPUT
            turns.append(_assistant(f"Error: there is no user message for turn {step.turn}."))
            break
        error, reply = yield step.message, history
        if error is not None:
            reason, text = error
            turns.append(_assistant(text))
            break
        assert reply is not None
        turns.append(_assistant(reply))
        history = [*history, ("user", step.message), ("assistant", reply)]
    if reason is None:
        if len(scenario.turns) == 1 and limit >= 1:
            reason = StopReason.SINGLE_TURN
        else:
            reason = StopReason.MAX_TURNS if limit < len(scenario.turns) else StopReason.COMPLETED
    return (1 if len(scenario.turns) == 1 else limit), reason


def _write(
    scenario: Scenario,
    entry: ManifestEntry,
    folder: RunFolder,
    settings: RunSettings,
    turns: list[Turn],
    max_turns: int,
    reason: str,
    record: RunRecord,
) -> RunOutcome:
    """Hand the run's log and run record over to be written (`RunFolder.save`): the record's line marks the run
    done (for a resume) once the whole log is on disk, so the log is written in place, not through a temporary
    file."""
    session = f"{Path(entry.log).stem}_{turns[0].timestamp:%Y%m%dT%H%M%S}" if turns else Path(entry.log).stem
    metadata = RunMetadata(
        session_id=session, mode=settings.mode, scenario=scenario.name, max_turns=max_turns, stop_reason=str(reason)
    )
    path = folder.path / entry.log
    folder.save(path, ConversationLog(metadata=metadata, turns=tuple(turns)), entry.log, record)
    return RunOutcome(scenario.name, entry.run, path, str(reason))


async def _run_simulated(
    call: RunAgent, scenario: Scenario, entry: ManifestEntry, folder: RunFolder, settings: RunSettings
) -> RunOutcome:
    """One conversation between the scenario's simulated user and the agent (see `simulated_user`)."""
    user = scenario.user
    assert user is not None
    player = make_player(user, settings.user_model, settings.model_settings)
    limit = user.max_turns if settings.max_turns is None else min(user.max_turns, settings.max_turns)
    opening = scenario.turns[0].message if scenario.turns else ""
    turns: list[Turn] = []
    history: list[tuple[str, str]] = []
    goal: dict[str, Any] = {"reached": False, "user_turns": 0, "max_turns": limit}
    record = RunRecord(goal=goal)
    reason: str = StopReason.MAX_TURNS
    while len(history) // 2 < limit:
        try:
            message = opening if not history and opening.strip() else await player.next_message(history)
        except Exception as exc:
            turns.append(Turn(role="user", timestamp=datetime.now(), text="(the simulated user sent no message)"))
            turns.append(_assistant(f"Error: the simulated user failed ({describe_error(exc)})."))
            reason = StopReason.AGENT_ERROR
            break
        if message is None or not message.strip():
            reason = StopReason.USER_EXIT if user.stop_when else StopReason.COMPLETED
            goal["reached"] = not user.stop_when
            break
        turns.append(Turn(role="user", timestamp=datetime.now(), text=message))
        goal["user_turns"] += 1
        error, reply = await _ask(call, message, history, settings, record)
        if error is not None:
            reason, text = error
            turns.append(_assistant(text))
            break
        assert reply is not None
        turns.append(_assistant(reply))
        history += [("user", message), ("assistant", reply)]
        if stop_reached(user, reply, record.state):
            reason, goal["reached"] = StopReason.COMPLETED, True
            break
    if not turns:  # the user was done before saying anything
        turns += [
            Turn(role="user", timestamp=datetime.now(), text="(the simulated user sent no message)"),
            _assistant("Error: the simulated user sent no message."),
        ]
        reason = StopReason.MISSING_INPUT
    goal["stop_reason"] = str(reason)
    return _write(scenario, entry, folder, settings, turns, limit, reason, record)


async def _ask(
    call: RunAgent, prompt: str, history: list[tuple[str, str]], settings: RunSettings, record: RunRecord
) -> _Answer:
    """Call the agent once; return `((stop_reason, error text), None)` or `(None, reply)`."""
    chat_history = format_chat_history(history) if history else None
    try:
        pending = call(prompt, chat_history=chat_history, memory=settings.memory, config=settings.config)
        result = await asyncio.wait_for(pending, settings.timeout)
    except TimeoutError:
        return (StopReason.TIMEOUT, f"Error: the agent did not reply within {settings.timeout:g} seconds."), None
    except Exception as exc:
        return (StopReason.AGENT_ERROR, agent_error_text(exc)), None
    return _answer(result, record)


def _ask_twin(
    twin: Callable[..., Any],
    prompt: str,
    history: list[tuple[str, str]],
    settings: RunSettings,
    record: RunRecord,
    stop: threading.Event,
) -> _Answer:
    """`_ask` through the agent's synchronous twin, in the calling worker thread (no timeout)."""
    chat_history = format_chat_history(history) if history else None
    try:
        result = twin(prompt, chat_history=chat_history, memory=settings.memory, config=settings.config, stop=stop)
    except Exception as exc:
        return (StopReason.AGENT_ERROR, agent_error_text(exc)), None
    return _answer(result, record)


def _answer(result: Any, record: RunRecord) -> _Answer:
    """The reply text of the agent's `result` (recorded in the run record), or why it is not one."""
    record.add(result)
    text = reply_text(result)
    if text is None:
        return (
            StopReason.AGENT_ERROR,
            f"Error: the agent returned {type(result).__name__} without a 'content' text.",
        ), None
    if not text.strip():
        return (StopReason.AGENT_ERROR, "Error: the agent returned an empty reply."), None
    return None, text


def _assistant(text: str) -> Turn:
    return Turn(role="assistant", timestamp=datetime.now(), text=text)
