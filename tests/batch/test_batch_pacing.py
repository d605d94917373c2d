"""How the thread executor decides, window after window, whether rows run on one thread (batch/_pacing.py)."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from timing import until

from agentmap.batch._pacing import FIRST_PATIENCE, LASTING, MOST_PATIENCE, Meter, Pacing, Window, busy_seconds


def _busy(cores: float, *, ran: float | None = None, rows: int = 20) -> Window:
    """A 0.2 s window in which the batch kept `cores` cores busy (`ran` of them running, default all) and finished
    `rows` rows."""
    running = cores if ran is None else ran
    return Window(0.2, 0.2 * running, 0.2 * (cores - running), rows)


def _narrowed() -> Pacing:
    """Rows on one thread, after a window on every thread that finished 20 rows."""
    pacing = Pacing()
    assert pacing.after(_busy(1.0), 0.2)
    return pacing


def test_rows_that_keep_about_one_core_busy_go_to_one_thread() -> None:
    assert Pacing().after(_busy(0.95), 0.2)
    loaded = _busy(1.1, ran=0.5)  # another process holds a core half the time: the rows wait for it, not for I/O
    assert Pacing().after(loaded, 0.2)
    many = _busy(2.0, ran=0.9)  # threads taking turns at the GIL each wait for a core when woken: still rows compute
    assert Pacing().after(many, 0.2)
    shared = _busy(1.0, ran=0.3)  # a machine so loaded that the one thread runs a third of the time: it computes
    pacing = Pacing()
    assert pacing.after(_busy(1.0), 0.2)
    assert pacing.after(shared, 0.4) and pacing.after(_busy(1.0, ran=0.3, rows=5), 0.6)  # whatever its pace


def test_a_window_ending_while_the_one_thread_waits_for_a_core_does_not_give_rows_every_thread() -> None:
    pacing = Pacing()  # a loaded machine: the thread runs a third of the time, its waits for a core counted late
    assert pacing.after(_busy(1.0, ran=0.3), 0.2) and pacing.after(_busy(1.0, ran=0.3), 0.4)
    assert pacing.after(_busy(0.7, ran=0.3, rows=5), 0.6)  # a wait not counted yet, and the load grew: slower
    assert pacing.after(_busy(1.3, ran=0.3, rows=5), 0.8)  # the wait counted


def test_rows_that_wait_or_run_at_once_stay_on_every_thread() -> None:
    assert not Pacing().after(_busy(0.5), 0.2)  # the cores are idle half the time: the rows wait
    assert not Pacing().after(_busy(1.8), 0.2)  # 1.8 cores of CPU: the rows run at once (code that frees the GIL)


def test_rows_stay_on_one_thread_while_they_compute() -> None:
    pacing = _narrowed()
    assert pacing.after(_busy(1.0), 0.4)
    assert pacing.after(_busy(0.9, rows=0), 0.6)  # long rows, computing: none finished, still one thread's work
    assert pacing.after(_busy(0.95, rows=5), 0.8)  # slower rows, computing


def test_rows_that_wait_on_what_threads_do_not_speed_up_stay_on_one_thread() -> None:
    pacing = _narrowed()  # say rows that wait on a database's one writer a third of the time
    for n in range(10):
        assert pacing.after(_busy(0.65, rows=22), 0.4 + 0.2 * n)  # as many rows as on every thread, or more
        assert pacing.after(_busy(0.6, rows=19), 0.5 + 0.2 * n)


def test_rows_finishing_slower_on_one_thread_go_back_to_every_thread() -> None:
    pacing = _narrowed()
    assert not pacing.after(_busy(0.6, rows=10), 0.4)  # half the pace they had on every thread: they wait


def test_rows_that_do_not_keep_the_core_busy_wait_on_every_thread_when_their_pace_there_is_unknown() -> None:
    pacing = Pacing()
    assert pacing.after(_busy(1.0, rows=0), 0.2)  # the first rows had not finished yet
    assert not pacing.after(_busy(0.3, rows=3), 0.4)
    pacing = Pacing()
    assert pacing.after(_busy(1.0, rows=3), 0.2)  # too few to tell a pace
    assert not pacing.after(_busy(0.7, rows=3), 0.4)


def test_a_row_waiting_on_one_thread_gives_rows_every_thread_back() -> None:
    pacing = _narrowed()
    assert pacing.after(_busy(0.9), 0.4)
    assert not pacing.after(_busy(0.05, rows=0), 0.6)  # none finished, the core idle: a row waits (on other rows)


def test_rows_that_start_running_at_once_get_every_thread_back() -> None:
    pacing = _narrowed()
    assert not pacing.after(_busy(1.5), 0.4)


def test_only_the_threads_running_rows_tell_that_rows_run_at_once() -> None:
    beside = Window(0.2, 0.2 * 1.5, 0.0, 20, own=0.2 * 0.9)  # a thread of another part of the process ran beside
    assert Pacing().after(beside, 0.2)


def test_a_stint_on_one_thread_that_did_not_last_makes_the_next_wait_longer() -> None:
    pacing, now, patience = Pacing(), 0.2, FIRST_PATIENCE
    while patience < MOST_PATIENCE:
        assert pacing.after(_busy(1.0), now)  # threads taking turns at the GIL while rows wait look as busy
        now += 0.2
        assert not pacing.after(_busy(0.2, rows=3), now)  # on one thread the rows wait
        assert pacing.patience == patience
        assert not pacing.after(_busy(1.0), now + patience - 0.1)  # busy again: rows stay on every thread a while
        now += patience + 0.01
        patience = min(MOST_PATIENCE, 2 * patience)
    assert pacing.after(_busy(1.0), now)
    assert not pacing.after(_busy(0.2, rows=3), now + 0.2)
    assert pacing.patience == MOST_PATIENCE


def test_a_lasting_stint_on_one_thread_starts_the_patience_over() -> None:
    pacing = Pacing(patience=MOST_PATIENCE)
    assert not pacing.after(_busy(1.0), 0.2)
    assert pacing.after(_busy(1.0), MOST_PATIENCE)
    assert not pacing.after(_busy(0.2, rows=0), MOST_PATIENCE + LASTING)  # the rows changed after computing a while
    assert pacing.patience == FIRST_PATIENCE
    assert pacing.after(_busy(1.0), MOST_PATIENCE + LASTING + FIRST_PATIENCE)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's per-thread scheduler statistics")
def test_the_meter_counts_the_threads_started_since_it_was_made() -> None:
    """A window's `ran` comes from the process's CPU clock, which on a busy VM drifts from the threads' own counters by
    up to a third of a second either way: each thread runs a second, alone, so what is counted stands out."""
    done, before_done = threading.Event(), threading.Event()
    ids: dict[str, int] = {}

    def spin(name: str) -> None:
        ids[name] = threading.get_native_id()
        while not done.is_set() and not (name == "before" and before_done.is_set()):
            pass

    def ran(name: str) -> float:
        busy = busy_seconds(ids[name])
        assert busy is not None
        return busy[0]

    own = threading.get_native_id()
    before = threading.Thread(target=spin, args=("before",))
    before.start()
    after = threading.Thread(target=spin, args=("after",))
    try:
        until(lambda: "before" in ids, 10, "the thread never started")
        meter, was = Meter(length=0.0), ran("before")
        until(lambda: ran("before") - was >= 1.0, 20, "the thread never computed")
        quiet = meter.read([own], 0, time.monotonic())  # a thread that was there before the batch: not the batch's
        assert quiet is not None and quiet.ran < 0.5
        before_done.set()
        before.join()
        after.start()
        until(lambda: "after" in ids and ran("after") >= 1.0, 20, "the thread started since never computed")
        window = meter.read([own, ids["after"]], 3, time.monotonic())
    finally:
        done.set()
        before.join()
        if after.is_alive():
            after.join()
    assert window is not None and window.rows == 3 and window.own is not None and window.own >= 0.05
    assert window.ran > 0.5 and meter.working
    assert meter.read([0], 0, time.monotonic()) is None and not meter.working  # no such thread: nothing measured
