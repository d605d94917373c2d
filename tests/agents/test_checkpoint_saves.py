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


def test_a_model_call_for_a_provider_batch_job_is_queued_only_once_its_steps_checkpoint_is_saved(
    tmp_path: Path, waits: Callable[[], bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agentmap batch --llm-batch`: a call queued before its step's checkpoint is saved, then a kill, would leave an
    entry a rerun (from an earlier checkpoint: another task id) never reads, sent in a job beside the rerun's own
    and billed twice (bench/llm_batch_kills.py found it). The row runs with the batch's mode in its config."""
    import csv
    import json

    from agentmap.agents.journal_entries import queued_calls
    from agentmap.agents.llm_batch import MODE_KEY

    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    context = json.dumps({"model": "openai:gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1"})  # never called
    flow = tmp_path / "flow.csv"
    with flow.open("w", newline="") as handle:
        csv.writer(handle).writerows(
            [
                ["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field"],
                ["g", "A", "llm", "say {topic}", context, "topic", "a"],
            ]
        )
    saver = _saver("agentmap", tmp_path)
    gate = Gate(saver, tmp_path / "effects.txt")
    app = agentmap.compile(flow, checkpointer=saver)
    outcome: list[Any] = []

    def run() -> None:
        outcome.append(app.invoke({"topic": "tea"}, {"configurable": {"thread_id": "t", MODE_KEY: "on"}}))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    _until(lambda: waits() or queued_calls(saver), "the node waiting for its step's checkpoint, or its call queued")
    assert gate.entered.is_set() and queued_calls(saver) == []  # the save is held: nothing queued yet
    gate.opened.set()
    thread.join(scaled(30))
    assert not thread.is_alive() and outcome
    assert "waits for a provider batch job" in str(outcome[0].interrupts)  # the run paused
    (call,) = queued_calls(saver)
    assert call.key.thread_id == "t" and call.key.node == "A"
