"""The call journal of a Ray batch (`agentmap batch --executor ray --checkpoint ...`): killed inside its row's second
model call and run again, the row continues its thread, in a PostgreSQL database or a SQLite file, without sending
the answered call again. The SQLite batch that is killed starts a local Ray of its own, as a user's would; the runs
whose Ray is not what is tested (the PostgreSQL one too: it is killed as the driver of a cluster it joined) join
the run's local Ray (`ray_cluster` in tests/conftest.py) instead of starting one.

The batch with its own Ray is killed under a parent that never reaps what is left to it, as a machine's first
process may be slow to: Ray's own processes then linger as zombies, and a Ray worker that waited for Ray to tell it
would go on running the row (its model call ends in a time-out, the row fails and its thread finishes) beside the
batch run again. The worker ends with the batch's process instead, as it does with a joined cluster's driver."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import forked
import pytest
from components import RayCluster, require
from test_batch_journal import BATCH, checkpoint, killed_in_second_call_then_continued
from test_journal import Loop, _running
from timing import deadline

from openai_stub import OpenAIStub  # isort: skip

import agentmap

pytestmark = [pytest.mark.ray, pytest.mark.slow]

PARENT = """
import ctypes, os, sys, time

ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: what the batch leaves behind comes here
pid = os.fork()
if pid == 0:
    from agentmap.cli import main

    os._exit(main({args!r}) or 0)
open("batch.pid", "w").write(str(pid))
time.sleep(900)  # and is never reaped
"""


def _until(condition: Any, what: str, within: float) -> None:
    give_up = deadline(within)
    while not condition():
        assert time.monotonic() < give_up, f"never happened: {what}"
        time.sleep(0.01)


class Unreaped:
    """`agentmap ARGS` as the child of a process that never reaps (`PARENT`): what `_kill_at` kills."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str]) -> None:
        self.parent = forked.start_python(PARENT.format(args=list(args)), cwd=cwd, env=env)
        file = cwd / "batch.pid"
        _until(lambda: file.exists() and file.read_text(), "the batch started", 60)
        self.pid = int(file.read_text())

    def poll(self) -> int | None:
        return None if _running(self.pid) else -9

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def wait(self, timeout: float) -> None:
        _until(lambda: not _running(self.pid), "the batch ended", timeout)

    def communicate(self) -> tuple[str, str]:
        return self.parent.printed()


def _row_worker(folder: Path, batch: tuple[str, ...]) -> int:
    """The pid of the process that ran row `r1` of `batch` (run in `folder`), as its thread's checkpoint says."""
    where = batch[batch.index("--checkpoint") + 1]
    saver = agentmap.checkpointer(where if "://" in where else str(folder / where))
    try:
        return int(saver.get_tuple({"configurable": {"thread_id": "r1"}}).metadata["agentmap_pid"])
    finally:
        saver.conn.close()


@pytest.fixture
def loop() -> Iterator[Loop]:
    try:
        import ray  # noqa: F401
    except ImportError:
        require(False, 'Ray is not installed (pip install "agentmap[ray]")')
    with OpenAIStub() as server:
        yield Loop(server)


def test_a_sqlite_checkpoint_is_kept_with_ray_at_this_machines_own_address(
    tmp_path: Path, ray_cluster: RayCluster
) -> None:
    """Ray names a cluster started here by the address it reports (on a machine with a network, that of its
    interface, not 127.0.0.1): a SQLite checkpoint is on this machine too, so the batch runs (`test_batch_journal.py`
    has the refusal for another machine)."""
    (tmp_path / "flow.csv").write_text(
        "GraphName,Node,AgentType,Prompt,Output_Field\nF,Greet,template,Hello,greeting\n"
    )
    (tmp_path / "rows.csv").write_text("id\nr1\nr2\n")
    batch = ("batch", "flow.csv", "-i", "rows.csv", "-o", "out.csv", "--checkpoint", "runs.db", "--executor", "ray")
    code, _, err = ray_cluster.run(*batch, "--id-column", "id", cwd=tmp_path, env=dict(os.environ))
    assert code == 0, err
    assert (tmp_path / "out.csv").read_text().count("Hello") == 2 and (tmp_path / "runs.db").exists()


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_ray_row_killed_after_a_model_call_continues_without_calling_it_again(
    tmp_path: Path, loop: Loop, store: str, request: pytest.FixtureRequest, ray_cluster: RayCluster
) -> None:
    batch = (*BATCH, *checkpoint(store, request), "--executor", "ray", "--chunk-size", "1")
    started: list[Unreaped | forked.Forked] = []

    def start(*args: str, cwd: Path, env: dict[str, str]) -> Unreaped | forked.Forked:
        # The SQLite run is killed with the local Ray it started, under a parent that never reaps it; the
        # PostgreSQL run (the store is its scenario) on a Ray cluster it joined, whose driver dies without a word.
        own = store == "sqlite"
        started.append(Unreaped(*args, cwd=cwd, env=env) if own else ray_cluster.start(*args, cwd=cwd, env=env))
        return started[-1]

    def killed() -> None:  # the Ray worker that ran the row ends with the batch, though nothing reaped Ray
        worker = _row_worker(tmp_path, batch)
        assert worker != started[0].pid  # the row ran in a Ray worker, not in the batch's process
        _until(lambda: not _running(worker), f"the Ray worker (pid {worker}) ended with the batch", 20)

    try:  # the command starts a local Ray first: tens of seconds on a busy two-core machine, more beside another
        killed_in_second_call_then_continued(
            tmp_path, loop, batch, within=180, start=start, killed=killed, rerun=ray_cluster.run
        )
    finally:
        for process in started:
            if isinstance(process, Unreaped):  # its zombies go to the machine's first process, which reaps them
                process.parent.send_signal(9)


class _WorkerStopped:
    """`agentmap ARGS` on `cluster`, whose row's Ray worker `_kill_at` stops as Ray stops a worker (SIGTERM: Ray's
    handler in the worker raises SystemExit in the running task), the batch itself left running."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str], cluster: RayCluster) -> None:
        self.batch = cluster.start(*args, cwd=cwd, env=env)
        self.cwd, self.args = cwd, args
        self.code: int | None = None

    def poll(self) -> int | None:
        return self.batch.poll()

    def send_signal(self, sig: int) -> None:
        worker = _row_worker(self.cwd, self.args)
        assert worker != self.batch.pid
        os.kill(worker, signal.SIGTERM)

    def wait(self, timeout: float) -> None:
        self.code = self.batch.wait(timeout)  # the batch ends: a worker it waited on died

    def communicate(self) -> tuple[str, str]:
        return self.batch.printed()


def test_a_ray_worker_stopped_mid_row_records_no_failure_and_the_row_continues(
    tmp_path: Path, loop: Loop, ray_cluster: RayCluster
) -> None:
    """A worker Ray stops (a node drained, a cluster scaled down or shut down) is not the row's failure: before,
    the row's node failed with `SystemExit(1)` and its thread ended, so running the batch again kept that error.
    Both runs join a running Ray, as batches on a cluster do."""
    batch = (*BATCH, "--checkpoint", "runs.db", "--executor", "ray", "--chunk-size", "1")
    started: list[_WorkerStopped] = []

    def start(*args: str, cwd: Path, env: dict[str, str]) -> _WorkerStopped:
        started.append(_WorkerStopped(*args, cwd=cwd, env=env, cluster=ray_cluster))
        return started[-1]

    def stopped() -> None:  # the first run said a worker died (exit 5), not that the row failed
        assert started[0].code == 5, started[0].communicate()

    killed_in_second_call_then_continued(
        tmp_path, loop, batch, within=180, start=start, killed=stopped, rerun=ray_cluster.run
    )
