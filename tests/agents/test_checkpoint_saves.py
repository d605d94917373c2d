"""A node's first journaled call waits until the checkpoint its step started from is saved
(agents/_checkpoint_saves.py): a saver whose `put` is held by a gate, a `tool` node that charges a card, run
through the public API."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from timing import deadline, scaled

import agentmap
from agentmap.agents import _checkpoint_saves


class Gate:
    """Holds the saver's `put` until opened; writes `saved` to the effects file after the first save."""

    def __init__(self, saver: Any, effects: Path) -> None:
        self.opened = threading.Event()
        self.entered = threading.Event()
        self.effects = effects
        original = saver.put

        def put(*args: Any, **kwargs: Any) -> Any:
            self.entered.set()
            self.opened.wait(scaled(30))
            result = original(*args, **kwargs)
            if not self.effects.exists():
                self.effects.write_text("saved\n")
            return result

        saver.put = put


def _saver(kind: str, folder: Path) -> Any:
    if kind == "agentmap":  # announces its saves
        return agentmap.checkpointer(str(folder / "runs.db"))
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver()
    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = SqliteSaver(sqlite3.connect(folder / "plain.db", check_same_thread=False))
    saver.setup()
    return saver


def _until(condition: Callable[[], Any], what: str, within: float = 30) -> None:
    give_up = deadline(within)
    while not condition():
        assert time.monotonic() < give_up, f"never happened: {what}"
        time.sleep(0.002)


def _run_in_thread(app: Any, mode: str, outcome: list[Any], durability: str = "async") -> threading.Thread:
    config = {"configurable": {"thread_id": "t"}}

    def run() -> None:
        try:
            if mode == "async":
                outcome.append(asyncio.run(app.ainvoke({"amount": 1}, config, durability=durability)))
            else:
                outcome.append(app.invoke({"amount": 1}, config, durability=durability))
        except Exception as exc:  # the deadline test's error, checked by the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def waits(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[], bool]]:
    caplog.set_level(logging.DEBUG, logger="agentmap.journal")
    yield lambda: any("waits for checkpoint" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("kind", "mode"),
    [("agentmap", "sync"), ("agentmap", "async"), ("memory", "sync"), ("sqlite", "sync")],
)
def test_a_tool_call_waits_for_its_steps_checkpoint_and_is_made_right_after(
    charge: Path, waits: Callable[[], bool], kind: str, mode: str
) -> None:
    effects = charge.parent / "effects.txt"
    saver = _saver(kind, charge.parent)
    gate = Gate(saver, effects)
    app = agentmap.compile(charge, checkpointer=saver)
    outcome: list[Any] = []
    thread = _run_in_thread(app, mode, outcome)
    _until(waits, "the node waiting for its step's checkpoint")
    assert gate.entered.is_set() and not effects.exists()  # the save is held, and the card was not charged
    gate.opened.set()
    thread.join(scaled(30))
    assert not thread.is_alive()
    assert outcome and outcome[0].state["result"] == "charged 1", outcome
    assert effects.read_text().splitlines() == ["saved", "charge 1"]  # charged once, after the save


def test_a_checkpoint_never_saved_stops_the_node_before_its_call_and_the_run_resumes(
    charge: Path, waits: Callable[[], bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    effects = charge.parent / "effects.txt"
    saver = _saver("agentmap", charge.parent)
    gate = Gate(saver, effects)
    monkeypatch.setattr(_checkpoint_saves, "SAVE_DEADLINE", 0.2)
    raised = _checkpoint_saves._not_saved

    def not_saved(*args: Any) -> Any:
        gate.opened.set()  # let the held save finish once the node has given up on it
        return raised(*args)

    monkeypatch.setattr(_checkpoint_saves, "_not_saved", not_saved)
    app = agentmap.compile(charge, checkpointer=saver)
    outcome: list[Any] = []
    thread = _run_in_thread(app, "sync", outcome)
    thread.join(scaled(30))
    assert not thread.is_alive()
    error = outcome[0]
    assert isinstance(error, agentmap.errors.AgentMapError), outcome
    assert error.code == "checkpoint-not-saved" and "agentmap resume t" in str(error)
    assert effects.read_text().splitlines() == ["saved"]  # the call was never made
    monkeypatch.setattr(_checkpoint_saves, "SAVE_DEADLINE", 60.0)
    assert app.resume("t").state["result"] == "charged 1"
    assert effects.read_text().splitlines() == ["saved", "charge 1"]


def test_with_exit_durability_a_call_waits_for_nothing(charge: Path, waits: Callable[[], bool]) -> None:
    # nothing is saved before the run ends: a call that waited for its step's checkpoint would wait forever
    effects = charge.parent / "effects.txt"
    saver = _saver("agentmap", charge.parent)
    gate = Gate(saver, effects)
    app = agentmap.compile(charge, checkpointer=saver)
    outcome: list[Any] = []
    thread = _run_in_thread(app, "sync", outcome, durability="exit")
    # charged while every save is held (the run's one save, at its end, may have started since: not awaited)
    _until(lambda: effects.exists() and effects.read_text() == "charge 1\n", "the card charged, no save done")
    assert not waits()
    gate.opened.set()
    thread.join(scaled(30))
    assert not thread.is_alive() and outcome[0].state["result"] == "charged 1", outcome
