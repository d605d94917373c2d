"""The call journal under `agentmap serve`: a server killed with SIGKILL while a run's tool call was taking
effect, started again, continues the run without calling the model or the tool again for what had finished,
and asks a person (through the LangGraph client) about the call in doubt."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import forked
import pytest
import served
from test_journal import Loop, _effects, _setup, loop  # noqa: F401  (loop is a fixture)
from timing import deadline, scaled

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow


def _until(check: Callable[[], Any], what: str, seconds: float = 60) -> Any:
    give_up = deadline(seconds)
    while not (found := check()):
        assert time.monotonic() < give_up, f"never happened: {what}"
        time.sleep(0.02)
    return found


def _serve(folder: Path, env: dict[str, str], port: int) -> forked.Forked:
    args = ("pay.csv", "--checkpoint", str(folder / "runs.db"), "--lease", "2s")
    proc = served.Served(*args, cwd=folder, env=env, port=port).start().proc
    assert proc is not None
    return proc


def test_a_server_killed_during_a_tool_call_repeats_nothing_and_asks_about_the_call_in_doubt(
    tmp_path: Path,
    loop: Loop,  # noqa: F811
) -> None:
    env = _setup(tmp_path, loop.stub)
    port = served.free_port()
    hold = Path(env["EFFECTS"] + ".hold2")
    hold.touch()  # the second charge takes effect, then waits there until the server is killed
    server = _serve(tmp_path, env, port)
    try:
        with sdk.get_sync_client(url=f"http://127.0.0.1:{port}", api_key=None) as client:
            tid = client.threads.create()["thread_id"]
            run = client.runs.create(tid, "g", input={"q": "pay"})
            _until(lambda: "charge 2" in _effects(tmp_path), "the second charge made")
        server.send_signal(signal.SIGKILL)
        server.wait(scaled(60))
        hold.unlink()
        server = _serve(tmp_path, env, port)  # started again: it takes the run over from its last checkpoint
        with sdk.get_sync_client(url=f"http://127.0.0.1:{port}", api_key=None) as client:
            asked = _until(lambda: client.threads.get_state(tid)["interrupts"], "the call in doubt asked about")
            question = asked[0]["value"]
            assert "did `charge_card` with these arguments take effect?" in question["question"], question
            assert question["arguments"] == {"amount": 2}
            assert client.runs.get(tid, run["run_id"])["status"] in ("success", "interrupted")
            final = client.runs.wait(tid, "g", command={"resume": "done"})
        assert final["answer"] == "paid twice", final
        assert _effects(tmp_path) == ["charge 1", "charge 2"]  # no charge made twice
        assert all(count == 1 for count in loop.counts().values()), loop.counts()  # no model call paid twice
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGKILL)
            server.wait(scaled(60))
