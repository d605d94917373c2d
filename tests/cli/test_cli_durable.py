"""Durable runs through the real command: kill -9 and SIGTERM mid-run, then `agentmap resume`; pause in one
process and answer in another; `agentmap threads`. Each runs on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import durable_graphs
import forked
import pytest
from cli_helpers import COMMAND, agentmap
from components import clean_env
from timing import deadline, scaled

import agentmap as agentmap_api

pytestmark = pytest.mark.slow
PG = [pytest.mark.postgres]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=PG)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """How the commands name the checkpoint: nothing (the default .agentmap/runs.db), or a Postgres URL."""
    env = {"TICK_FILE": str(tmp_path / "side.txt"), "TICK_SLEEP": "0.05"}
    if request.param == "postgres":
        env["AGENTMAP_CHECKPOINT"] = str(request.getfixturevalue("postgres_url"))
    return {"kind": request.param, "env": env, "side": tmp_path / "side.txt", "cwd": tmp_path}


def _start(store: dict[str, Any], *args: str, fresh: bool = False) -> subprocess.Popen[str] | forked.Forked:
    """Start `agentmap ARGS --json` as a new process: forked from a warm server, or `fresh` from a new interpreter."""
    env = clean_env() | store["env"]
    if not fresh:
        return forked.start(*args, "--json", cwd=store["cwd"], env=env)
    return subprocess.Popen(
        [*COMMAND, *args, "--json"],
        cwd=store["cwd"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def _lines(side: Path) -> list[str]:
    return side.read_text().split() if side.exists() else []


def _wait_for(side: Path, distinct: int, proc: subprocess.Popen[str] | forked.Forked, timeout: float = 30) -> str:
    """Wait until `distinct` nodes have started; return the node running now."""
    give_up = deadline(timeout)
    while time.monotonic() < give_up:
        seen = _lines(side)
        if len(set(seen)) >= distinct:
            return seen[-1]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.002)
    raise AssertionError(f"node {distinct} never started: {_lines(side)}")


def _run(store: dict[str, Any], *args: str) -> tuple[int, Any, str]:
    result = agentmap(*args, "--json", cwd=store["cwd"], env=store["env"])
    try:
        document = json.loads(result.out)
    except json.JSONDecodeError:
        document = None
    return result.code, document, result.err


def test_kill_9_at_ten_points_then_resume_runs_every_node_once(store: dict[str, Any]) -> None:
    # --durability sync: each step is saved before the next starts (the default, async, saves it while the next
    # runs, so a crash may also repeat the step that had just finished)
    durable_graphs.counter(store["cwd"], 20)
    in_flight: list[str] = []
    sync = ("--durability", "sync")
    proc = _start(store, "run", "counter.csv", "--thread", "k", "--state", '{"count": 0}', *sync)
    for distinct in range(2, 21, 2):  # ten kill points: while node 2, 4, ..., 20 runs
        in_flight.append(_wait_for(store["side"], distinct, proc))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if distinct == 2:
            code, listed, _ = _run(store, "threads")
            assert code == 0 and [(t["thread"], t["status"]) for t in listed["threads"]] == [("k", "interrupted")]
        proc = _start(store, "resume", "k", *sync)
    out, err = proc.communicate(timeout=scaled(60))
    assert proc.returncode == 0, err
    final = json.loads(out)
    assert final["state"]["count"] == 20 and final["status"] == "done"
    counts = Counter(_lines(store["side"]))
    assert set(counts) == {f"N{i:02d}" for i in range(1, 21)}
    repeated = {node for node, n in counts.items() if n > 1}
    assert repeated <= set(in_flight), f"a completed node ran again: {counts}"  # only the one in flight repeats
    assert all(n <= 2 for n in counts.values())
    if store["kind"] == "sqlite":
        with sqlite3.connect(store["cwd"] / ".agentmap" / "runs.db") as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_crash_in_one_parallel_branch_keeps_the_siblings_writes(store: dict[str, Any]) -> None:
    durable_graphs.fan_out(store["cwd"])
    crashed = _start(store | {"env": store["env"] | {"TICK_BOOM": "1"}}, "run", "fan.csv", "--thread", "f")
    crashed.communicate(timeout=scaled(60))
    assert crashed.returncode == -signal.SIGKILL
    assert sorted(_lines(store["side"])) == ["A", "B", "C", "Start"]
    code, final, err = _run(store, "resume", "f")
    assert code == 0, err
    assert Counter(_lines(store["side"])) == {"Start": 1, "A": 1, "B": 2, "C": 1, "End": 1}
    assert (final["state"]["a"], final["state"]["b"], final["state"]["c"], final["state"]["count"]) == (2, 2, 2, 3)


def test_sigterm_stops_the_run_prints_how_to_resume_and_exits_143(store: dict[str, Any]) -> None:
    durable_graphs.counter(store["cwd"], 20)
    proc = _start(store, "run", "counter.csv", "--thread", "s", "--state", '{"count": 0}', fresh=True)
    _wait_for(store["side"], 5, proc)
    where = store["env"].get("AGENTMAP_CHECKPOINT") or str(store["cwd"] / ".agentmap" / "runs.db")
    assert [(t.thread_id, t.status) for t in agentmap_api.threads(where)] == [("s", "running")]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=scaled(30))
    assert proc.returncode == 143, err
    stopped = json.loads(out)
    assert stopped["status"] == "interrupted" and stopped["thread"] == "s" and stopped["exit_code"] == 143
    assert "stopping once the running step is saved" in err and "agentmap resume s" in err and "Traceback" not in err
    assert stopped["running"] == []  # it stopped between steps
    code, _, err = _run(store, "run", "counter.csv", "--thread", "s")
    assert code == 2 and "resume it with `agentmap resume s`, or pass --restart" in err
    code, final, err = _run(store, "resume", "s")
    assert code == 0, err
    assert final["state"]["count"] == 20
    assert Counter(_lines(store["side"])) == {f"N{i:02d}": 1 for i in range(1, 21)}  # the stop waited for N05


def test_two_answers_to_one_pause_started_together_only_one_is_taken(store: dict[str, Any]) -> None:
    durable_graphs.approval(store["cwd"])
    code, paused, err = _run(store, "run", "review.csv", "--thread", "p", "--state", '{"count": 0}')
    assert code == 0 and paused["status"] == "paused", err
    store["env"]["TICK_SLEEP"] = "1"  # Publish runs long enough for the two resumes to overlap
    both = [_start(store, "resume", "p", answer) for answer in ("approve", "reject")]
    ends = [(proc.wait(scaled(60)), *proc.communicate(timeout=scaled(60))) for proc in both]
    codes = sorted(code for code, _, _ in ends)
    assert codes == [0, 2], ends
    (_, won, _), (_, _, refused) = sorted(ends, key=lambda end: end[0])
    assert "already-answered" in refused, refused
    approved = json.loads(won)["state"]["decision"]["approved"]
    assert f'{{"approved": {json.dumps(approved)}}} was taken' in refused  # the loser is told which answer won
    assert Counter(_lines(store["side"])) == {"Draft": 1, "Publish": 1} if approved else {"Draft": 1}


def test_pause_in_one_process_answer_in_another(store: dict[str, Any]) -> None:
    durable_graphs.approval(store["cwd"])
    code, paused, err = _run(store, "run", "review.csv", "--thread", "p", "--state", '{"count": 0}')
    assert code == 0 and paused["status"] == "paused", err
    assert paused["interrupts"][0]["question"] == "Publish the draft?"
    assert paused["resume"].startswith("agentmap resume p")

    code, _, err = _run(store, "resume", "p", "maybe")
    assert code == 2 and "neither yes nor no" in err and "approve" in err
    code, shown, _ = _run(store, "threads", "show", "p")
    assert shown["status"] == "paused" and shown["questions"][0]["interaction"] == "approval"
    assert [h["next"] for h in shown["history"]][-1] == ["Review"]

    code, _, err = _run(store, "resume", "q", "approve")
    assert code == 2 and "no thread 'q'" in err

    code, done, err = _run(store, "resume", "p", "approve")
    assert code == 0, err
    assert done["state"]["decision"] == {"approved": True} and done["state"]["count"] == 2
    code, _, err = _run(store, "resume", "p", "approve")
    assert code == 2 and "has finished" in err
    assert Counter(_lines(store["side"])) == {"Draft": 1, "Publish": 1}
