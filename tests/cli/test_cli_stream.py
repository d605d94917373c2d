"""`agentmap run --stream` and a terminal: an LLM node's text shows as the model sends it, before the node ends.

The local OpenAI-compatible server holds the rest of the reply until the test has seen the first piece, so the
order of the output is what is asserted, never a time.
"""

from __future__ import annotations

import csv
import json
import os
import pty
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import forked
import pytest
from cli_helpers import _env, agentmap
from timing import deadline, scaled

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from openai_stub import OpenAIStub, streamed

HEADER = ["GraphName", "Node", "AgentType", "Input_Fields", "Output_Field", "Edge", "Prompt", "Context"]


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def _setup(folder: Path, stub: OpenAIStub) -> dict[str, str]:
    context = json.dumps({"model": "gpt-stub", "base_url": stub.base_url, "max_retries": 0})
    with (folder / "ask.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerow(["g", "Ask", "openai", "question", "answer", "Done", "Answer briefly.", context])
        writer.writerow(["g", "Done", "echo", "answer", "shown", "", "", ""])
    return _env({"OPENAI_API_KEY": "sk-stub"})


def _until(seen: Callable[[], bool], proc: forked.Forked, what: str) -> None:
    give_up = deadline(60)
    while time.monotonic() < give_up:
        if seen():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    raise AssertionError(f"never shown: {what}")


def test_stream_flag_writes_the_text_as_it_comes_and_keeps_the_json(tmp_path: Path, stub: OpenAIStub) -> None:
    gate = threading.Event()
    stub.script(streamed("Par", "is is ", "the capital.", gate=gate))
    env = _setup(tmp_path, stub)
    proc = forked.start("run", "ask.csv", "--stream", "--state", '{"question": "France?"}', cwd=tmp_path, env=env)
    _until(lambda: "Ask: Par" in proc.printed()[1], proc, "the first piece")
    assert proc.printed()[0] == ""  # the node has not ended: no result yet
    gate.set()
    out, err = proc.communicate(timeout=scaled(60))
    assert proc.wait() == 0, err
    assert "Ask: Paris is the capital.\n" in err  # on stderr: stdout carries the JSON document, unchanged
    assert json.loads(out)["state"]["answer"] == "Paris is the capital."


def test_without_a_terminal_or_the_flag_nothing_streams(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(streamed("Par", "is."))
    result = agentmap("run", "ask.csv", "--state", '{"question": "France?"}', cwd=tmp_path, env=_setup(tmp_path, stub))
    assert result.code == 0, result.err
    assert "Par" not in result.err
    assert json.loads(result.out)["state"]["answer"] == "Paris."


def test_a_terminal_shows_the_text_before_the_node_ends(tmp_path: Path, stub: OpenAIStub) -> None:
    gate = threading.Event()
    stub.script(streamed("Par", "is is ", "the capital.", gate=gate))
    env = _setup(tmp_path, stub) | {"COLUMNS": "120", "LINES": "50", "TERM": "xterm-256color"}
    master, slave = pty.openpty()
    proc = forked.start(
        "run", "ask.csv", "--state", '{"question": "France?"}', cwd=tmp_path, env=env, terminal=os.ttyname(slave)
    )
    screen = b""

    def read() -> bool:
        nonlocal screen
        while select.select([master], [], [], 0)[0]:
            try:
                screen += os.read(master, 65536)
            except OSError:
                break
        return b"Ask: Par" in screen

    try:
        _until(read, proc, "the first piece")
        before = screen.decode("utf-8", "replace")
        gate.set()
        give_up = deadline(60)
        while proc.poll() is None and time.monotonic() < give_up:
            read()
        read()
    finally:
        os.close(master)
        os.close(slave)
    assert proc.wait(timeout=scaled(60)) == 0
    assert "Final state" not in before and "succeeded" not in before  # shown while the node was running
    assert "Paris is the capital." in screen.decode("utf-8", "replace")
