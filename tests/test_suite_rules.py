"""The suite's own rules about time (tests/timing.py): every deadline a test sets scales with the machine.

A test that computes `time.monotonic() + 30` or passes `timeout=60` waits 30 or 60 s whatever the load: on a busy
machine it fails where it would have passed given the time, and CI runs the fast tier with every core busy. Such a
test uses `timing.deadline(30)`, `timing.until(...)` or `timing.scaled(60)`. These checks read the tests' own code
(not the agent and tool sources they hold in strings, which run in other processes), and name file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TESTS = Path(__file__).parent
TIMING = TESTS / "timing.py"
BIGGEST_UNSCALED_TIMEOUT = 10
"""`timeout=N` above this bounds a wait, so it is scaled; at or below it, a timeout is the behaviour under test
(a tool's 0.3 s limit) or bounds a call expected to fail fast (a probe while a server starts)."""


def _trees() -> Iterator[tuple[Path, ast.AST]]:
    for path in sorted(TESTS.rglob("*.py")):
        if path != TIMING:
            yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_monotonic(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "monotonic"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "time"
    )


def _number(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _fixed_deadlines(tree: ast.AST) -> Iterator[ast.BinOp]:
    """`time.monotonic() + <number>`."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _is_monotonic(node.left)):
            continue
        if _number(node.right) is not None:  # not `time.monotonic() + seconds`: a helper's parameter, scaled there
            yield node


def _fixed_timeouts(tree: ast.AST) -> Iterator[ast.keyword]:
    """`timeout=<number>` (above `BIGGEST_UNSCALED_TIMEOUT`) given to any call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "timeout" and (_number(keyword.value) or 0) > BIGGEST_UNSCALED_TIMEOUT:
                    yield keyword


def test_no_test_sets_a_deadline_of_fixed_seconds() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)}:{node.lineno}: {ast.unparse(node)} (use timing.deadline)"
        for path, tree in _trees()
        for node in _fixed_deadlines(tree)
    ]
    assert found == []


def test_no_wait_is_bounded_by_fixed_seconds() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)}:{keyword.lineno}: timeout={ast.unparse(keyword.value)} (use timing.scaled)"
        for path, tree in _trees()
        for keyword in _fixed_timeouts(tree)
    ]
    assert found == []


def test_the_checks_see_what_they_forbid() -> None:
    """A fixed deadline and a fixed wait are found; scaled ones, and a timeout under test, are not."""
    code = """
import time
from timing import deadline, scaled
end = time.monotonic() + 30
proc.wait(timeout=60)
later, fine = deadline(30), time.monotonic() + scaled(30)
proc.communicate(timeout=scaled(60))
LocalToolExecutor(tools, timeout=0.3)
"""
    tree = ast.parse(code)
    assert [n.lineno for n in _fixed_deadlines(tree)] == [4]
    assert [k.lineno for k in _fixed_timeouts(tree)] == [5]


def test_a_matrix_sample_has_each_value_of_each_parameter() -> None:
    from types import SimpleNamespace

    from conftest import sampled

    combinations: list[Any] = [
        SimpleNamespace(callspec=SimpleNamespace(params={"store": store, "boundary": boundary}))
        for store in ("sqlite", "postgres")
        for boundary in ("model1", "tool1", "model2")
    ]
    kept = [tuple(getattr(c, "callspec").params.values()) for c in sampled(combinations)]  # noqa: B009
    assert kept == [("sqlite", "model1"), ("sqlite", "tool1"), ("sqlite", "model2"), ("postgres", "model1")]
