"""The thread executor runs rows on as many threads as help: rows that only compute go to one thread, rows that
wait still run `concurrency` at once (batch/_pacing.py), and rows that start waiting get every thread back."""

from __future__ import annotations

import logging
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from timing import scaled

import agentmap
from agentmap.agents.base import TRACE
from agentmap.batch import BatchResult, RowResult

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="threads are measured from Linux's per-thread scheduler statistics"
)

AGENT = '''
import threading
import time

from agentmap import BaseAgent

GROUP = threading.Barrier(8)
LOCK = threading.Lock()
COMPUTED = []  # the threads of the rows that computed, in the order they finished
STATE = {"phase": "compute", "waited": 0}


def spin(seconds):
    """Compute (hold the GIL) for `seconds` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class PaceAgent(BaseAgent):
    """`mode` wait: wait for 7 other rows (at most `timeout` s). compute: about `ms` of CPU a row until the last 30
    rows ran on one thread, then nothing; switch: the same, but then the next 16 rows wait for each other first."""

    def process(self, inputs):
        name = threading.current_thread().name
        timeout = float(inputs["timeout"])
        if inputs["mode"] == "wait":
            GROUP.wait(timeout)
            return {"thread": name, "phase": "wait"}
        with LOCK:
            phase = STATE["phase"]
            if phase == "wait":
                STATE["waited"] += 1
                if inputs["mode"] == "compute" or STATE["waited"] > 16:
                    phase = "done"
        if phase == "compute":
            spin(float(inputs["ms"]) / 1000)
            with LOCK:
                COMPUTED.append(name)
                if len(COMPUTED) >= 30 and len(set(COMPUTED[-30:])) == 1:
                    STATE["phase"] = "wait"
        elif phase == "wait":
            GROUP.wait(timeout)
        return {"thread": name, "phase": phase}
'''


def _flow(folder: Path) -> Path:
    (folder / "custom_agents").mkdir()
    (folder / "custom_agents" / "pace.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    flow = folder / "pace.csv"
    flow.write_text("GraphName,Node,AgentType,Input_Fields,Output_Field\nP,Pace,pace,mode|ms|timeout,ran\n")
    return flow


def _rows(mode: str, count: int, ms: float = 0.0) -> list[dict[str, object]]:
    return [{"mode": mode, "ms": ms, "timeout": scaled(30)} for _ in range(count)]


def _ran(result: BatchResult) -> list[dict[str, str]]:
    """What each row's agent said (its thread and phase), in row order; every row must have succeeded."""
    assert result.failures == 0, [r.error for r in result.rows if not r.success][:3]
    return [r.outputs["ran"] for r in sorted(result.rows, key=lambda r: r.row)]


class _Told(logging.Handler):
    """The thread executor's lines (each window it read, at TRACE, and each change between one thread and every
    thread, at DEBUG), for failure messages."""

    def __init__(self) -> None:
        super().__init__(TRACE)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def _told() -> Iterator[list[str]]:
    logger = logging.getLogger("agentmap.batch")
    handler, level = _Told(), logger.level
    logger.addHandler(handler)
    logger.setLevel(TRACE)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _said(counted: Counter[str], told: list[str]) -> str:
    """A failure message: what was counted, then the executor's lines, one a line (none cut)."""
    return "\n".join([repr(counted), *told])


def test_rows_that_only_compute_end_up_on_one_thread(tmp_path: Path) -> None:
    with _told() as told:
        ran = _ran(agentmap.batch(_flow(tmp_path), _rows("compute", 1000, ms=2), concurrency=8))
    phases = Counter(r["phase"] for r in ran)
    assert phases["done"], _said(phases, told)  # 30 rows in a row ran on one thread (before: spread over the 8 threads)
    after = Counter(r["thread"] for r in ran if r["phase"] == "done")
    assert after.most_common(1)[0][1] >= 0.8 * phases["done"], _said(after, told)  # and the rows after them, mostly


def test_rows_start_on_one_thread(tmp_path: Path) -> None:
    """A batch's first window runs its rows on one thread (before: on every thread, taking turns at the GIL until
    the first window was read); rows that wait get every thread after it (the test below)."""
    ran = _ran(agentmap.batch(_flow(tmp_path), _rows("compute", 200, ms=0.5), concurrency=8))
    assert len({r["thread"] for r in ran[:20]}) == 1, [r["thread"] for r in ran[:20]]


def test_rows_that_wait_for_each_other_still_run_concurrency_at_once(tmp_path: Path) -> None:
    ran = _ran(agentmap.batch(_flow(tmp_path), _rows("wait", 32), concurrency=8))
    assert len({r["thread"] for r in ran}) == 8  # each group of 8 met at the barrier: 8 rows at once


def test_rows_that_start_waiting_get_every_thread_back(tmp_path: Path) -> None:
    with _told() as told:
        ran = _ran(agentmap.batch(_flow(tmp_path), _rows("switch", 1500, ms=1), concurrency=8))
    phases = Counter(r["phase"] for r in ran)
    assert phases["wait"] == 16, _said(phases, told)  # the computing rows went to one thread (before: they never did)
    waited = {r["thread"] for r in ran if r["phase"] == "wait"}
    assert len(waited) == 8  # then the rows that wait for each other met, 8 at once, with no deadlock


TALLY_AGENT = """
from agentmap import BaseAgent


class TallyAgent(BaseAgent):
    def process(self, inputs):
        tally = inputs["tally"]
        with tally.lock:
            tally.finished += 1
        return "ok"
"""


class _Tally:
    """Rows finished so far, counted by the rows themselves (one object in every row's state)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.finished = 0

    def __str__(self) -> str:
        return "tally"


def test_rows_on_one_thread_hand_over_their_results_in_groups(tmp_path: Path) -> None:
    """Waking the batch's thread costs the GIL and the row's objects a trip to the other core: while rows run on one
    thread, the batch's thread takes their results many at a time. Before, it took each as it came, and at most
    twice `concurrency` rows were ever handed out."""
    (tmp_path / "custom_agents").mkdir()
    (tmp_path / "custom_agents" / "tally.py").write_text(TALLY_AGENT, encoding="utf-8")
    flow = tmp_path / "tally.csv"
    flow.write_text("GraphName,Node,AgentType,Input_Fields,Output_Field\nT,Tally,tally,tally,ran\n")
    tally, lags = _Tally(), list[int]()

    def taken(result: RowResult) -> None:  # in the batch's thread, as it takes each row
        lags.append(tally.finished - len(lags) - 1)  # rows finished and not yet taken

    rows = [{"id": i, "tally": tally} for i in range(3000)]
    result = agentmap.batch(flow, rows, concurrency=4, id_column="id", on_result=taken, keep_rows=False)
    assert result.successes == 3000
    assert max(lags) > 2 * 4, Counter(lags).most_common(5)
