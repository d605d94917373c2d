"""ExecutionTracker: recording nodes, success policies, metadata, nesting and thread safety."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from agentmap.runtime.tracking import ExecutionTracker, NodeExecution, resolve_policy


def _run(tracker: ExecutionTracker, outcomes: Sequence[tuple[str, bool]]) -> None:
    for name, ok in outcomes:
        tracker.record_node_start(name, {"in": name})
        tracker.record_node_result(name, ok, result=name.lower() if ok else None, error=None if ok else f"{name} broke")


def test_records_nodes_in_start_order_with_timings() -> None:
    tracker = ExecutionTracker()
    _run(tracker, [("A", True), ("B", False)])
    a, b = tracker.summary
    assert (a.name, a.success, a.result, a.inputs, a.error) == ("A", True, "a", {"in": "A"}, None)
    assert (b.name, b.success, b.error) == ("B", False, "B broke")
    assert a.duration is not None and a.duration >= 0
    assert a.end == pytest.approx(a.start + a.duration)
    assert a.start <= b.start


def test_a_node_still_running_has_no_outcome() -> None:
    tracker = ExecutionTracker()
    tracker.record_node_start("A")
    (entry,) = tracker.summary
    assert (entry.success, entry.end, entry.duration) == (None, None, None)
    assert tracker.update_graph_success() is True


def test_a_result_without_a_start_is_still_recorded() -> None:
    tracker = ExecutionTracker()
    tracker.record_node_result("Late", False, error="no start")
    assert [(e.name, e.success, e.error) for e in tracker.summary] == [("Late", False, "no start")]


def test_summary_is_a_copy() -> None:
    tracker = ExecutionTracker()
    _run(tracker, [("A", True)])
    tracker.summary.clear()
    assert len(tracker.summary) == 1


@pytest.mark.parametrize(
    ("policy", "critical", "outcomes", "expected"),
    [
        ("all_nodes", (), [("A", True), ("B", True)], True),
        ("all_nodes", (), [("A", False), ("B", True)], False),
        (None, (), [("A", True), ("B", False)], False),
        ("final_node", (), [("A", False), ("B", True)], True),
        ("final_node", (), [("A", True), ("B", False)], False),
        ("final_node", (), [], True),
        ("critical_nodes", ("B",), [("A", False), ("B", True)], True),
        ("critical_nodes", ("A", "B"), [("A", False), ("B", True)], False),
        ("critical_nodes", ("C",), [("A", False)], True),  # a critical node that did not run is no failure
    ],
)
def test_success_policies(
    policy: str | None, critical: tuple[str, ...], outcomes: list[tuple[str, bool]], expected: bool
) -> None:
    tracker = ExecutionTracker(policy, critical)  # type: ignore[arg-type]
    _run(tracker, outcomes)
    assert tracker.update_graph_success() is expected
    assert tracker.graph_success is expected


def test_custom_policy_sees_the_summary() -> None:
    seen: list[list[str]] = []

    def at_most_one_failure(summary: Sequence[NodeExecution]) -> bool:
        seen.append([e.name for e in summary])
        return sum(e.success is False for e in summary) <= 1

    tracker = ExecutionTracker(at_most_one_failure)
    _run(tracker, [("A", False), ("B", True)])
    assert tracker.update_graph_success() is True
    _run(tracker, [("C", False)])
    assert tracker.update_graph_success() is False
    assert seen[-1] == ["A", "B", "C"]


def test_bad_policies_are_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="all_nodes, final_node, critical_nodes or a callable"):
        resolve_policy("most_nodes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs the list of critical node names"):
        ExecutionTracker("critical_nodes")


def test_listener_hears_each_start_and_end() -> None:
    heard: list[tuple[str, bool | None]] = []
    tracker = ExecutionTracker()
    tracker._listen(lambda e: heard.append((e.name, e.success)))
    _run(tracker, [("A", True), ("B", False)])
    assert heard == [("A", None), ("A", True), ("B", None), ("B", False)]


def test_annotate_and_nested_subgraph_land_on_the_right_entry() -> None:
    tracker = ExecutionTracker()
    tracker.record_node_start("Outer")
    tracker.annotate("Outer", model="m", tokens=3)
    child = ExecutionTracker()
    _run(child, [("Inner", True)])
    tracker.record_subgraph("Outer", child.summary)
    tracker.record_node_result("Outer", True)
    tracker.annotate("Outer", late=True)  # after the end: the last execution of that node
    (outer,) = tracker.summary
    assert outer.metadata == {"model": "m", "tokens": 3, "late": True}
    data = outer.to_dict()
    assert data["subgraph"][0]["name"] == "Inner" and data["subgraph"][0]["success"] is True
    assert set(data) == {"name", "start", "end", "duration", "success", "error", "metadata", "subgraph"}


def test_to_dict_leaves_out_empty_metadata_and_inputs() -> None:
    tracker = ExecutionTracker()
    _run(tracker, [("A", True)])
    assert set(tracker.summary[0].to_dict()) == {"name", "start", "end", "duration", "success", "error"}


def test_parallel_threads_record_every_node() -> None:
    tracker = ExecutionTracker()
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        barrier.wait()
        for j in range(50):
            _run(tracker, [(f"n{i}-{j}", j % 2 == 0)])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    summary = tracker.summary
    assert len(summary) == 400
    assert all(e.success is (int(e.name.split("-")[1]) % 2 == 0) for e in summary)
