"""The live run view (`agentmap.cli._live`) and the error paragraph of `agentmap.cli.render`."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from rich.table import Table

from agentmap.cli import _live, render
from agentmap.runtime.tracking import ExecutionTracker, NodeExecution


def test_live_view_never_draws_in_the_node_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # Drawing a table takes milliseconds; done in the listener, it would be counted in the node's duration.
    drawn_in: set[int] = set()
    real_table = render.summary_table

    def recording_table(executions: Any, **kwargs: Any) -> Any:
        drawn_in.add(threading.get_ident())
        return real_table(executions, **kwargs)

    monkeypatch.setattr(render, "summary_table", recording_table)
    view = _live.LiveView("running G")
    tracker = ExecutionTracker()
    tracker._listen(view.update)
    node_threads: set[int] = set()

    def node() -> None:
        node_threads.add(threading.get_ident())
        tracker.record_node_start("A")
        tracker.record_node_result("A", True, "ok")

    view.start()
    try:
        worker = threading.Thread(target=node)
        worker.start()
        worker.join()
    finally:
        view.stop("G")
    assert drawn_in, "the view drew nothing"
    assert not drawn_in & node_threads
    [execution] = tracker.summary
    assert execution.success is True


def test_live_view_keeps_every_node_once() -> None:
    view = _live.LiveView("running G")
    first = NodeExecution("A", time.time())
    view.update(first)
    first.success = True
    view.update(first)
    view.update(NodeExecution("B", time.time()))
    table = view._render()
    assert isinstance(table, Table) and table.row_count == 2


def test_live_view_shows_the_last_lines_of_streamed_text_under_the_table() -> None:
    from rich.console import Console

    view = _live.LiveView("running G")
    view.update(NodeExecution("Ask", time.time()))
    for piece in ["Ask: one\ntwo\n", "three\nfour\nfive\nsix\nse", "ven"]:
        view.write(piece)
    console = Console(width=60, record=True)
    console.print(view._render())
    shown = console.export_text()
    assert "Ask" in shown and "seven" in shown and "three" in shown and "two" not in shown  # the last 5 lines


@pytest.mark.parametrize(("seconds", "shown"), [(None, ""), (0.000021, "21 µs"), (0.0123, "12.3 ms"), (2.5, "2.50 s")])
def test_durations_keep_their_digits(seconds: float | None, shown: str) -> None:
    assert render._seconds(seconds) == shown
