"""The async and process executors give the same results as the thread executor."""

from __future__ import annotations

from pathlib import Path

import forked
import pytest
from batch_helpers import shout_flow, words

import agentmap
from agentmap.batch import BatchResult

ROWS = words("a", "b", "boom", "d", "e", "f", "g")


def comparable(result: BatchResult) -> list[tuple[object, ...]]:
    """Everything about the rows but their timings."""
    return [(r.row, r.id, r.inputs, r.outputs, r.success, r.error, r.failed_nodes) for r in result.rows]


def test_async_matches_thread(tmp_path: Path) -> None:
    flow = shout_flow(tmp_path)
    threads = agentmap.batch(flow, ROWS, concurrency=3)
    assert comparable(agentmap.batch(flow, ROWS, executor="async", concurrency=3)) == comparable(threads)
    assert (threads.successes, threads.failures) == (6, 1)


@pytest.mark.slow
def test_process_matches_thread(tmp_path: Path) -> None:
    flow = shout_flow(tmp_path)
    threads = agentmap.batch(flow, ROWS)
    processes = agentmap.batch(flow, ROWS, executor="process", workers=2, chunk_size=2)
    assert comparable(processes) == comparable(threads)


_ORPHAN = """
import multiprocessing, os, time
from agentmap._cli_api import stop_worker_processes

# A worker the fork server started but no pool recorded (Ctrl-C cut its start short).
orphan = multiprocessing.get_context("forkserver").Process(target=time.sleep, args=(60,))
orphan.start()
started = time.monotonic()
stop_worker_processes()
try:
    state = open(f"/proc/{orphan.pid}/stat").read().rsplit(")", 1)[1].split()[0]
except OSError:
    state = "gone"
print(state, time.monotonic() - started < 10)
"""


@pytest.mark.slow
def test_stopping_the_workers_stops_what_the_fork_server_started(tmp_path: Path) -> None:
    code, out, err = forked.python(_ORPHAN, cwd=tmp_path)
    assert code == 0, err
    state, quick = out.split()
    assert state in ("gone", "Z") and quick == "True"  # ended (a zombie is ended, waiting to be reaped)


def test_process_workers_see_the_environment_the_batch_runs_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variable set after an earlier process batch (whose fork server keeps the environment of its start) reaches
    the workers of the next one: a key exported since is not missing there."""
    flow = shout_flow(tmp_path)
    agentmap.batch(flow, words("warm"), executor="process", workers=1)  # the fork server starts without the log
    log = tmp_path / "runs.log"
    monkeypatch.setenv("BATCH_RUN_LOG", str(log))
    result = agentmap.batch(flow, words("a", "b"), executor="process", workers=1)
    assert result.successes == 2
    assert sorted(log.read_text(encoding="utf-8").split()) == ["a", "b"]
