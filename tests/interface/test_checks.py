"""The `expected_state` expression language and trajectory matching (agentmap/interface/checks.py)."""

from __future__ import annotations

import pytest

from agentmap.interface.checks import (
    ExpressionError,
    Step,
    check_state,
    match_trajectory,
    parse_condition,
    parse_trajectory,
)

STATE = {"booking": {"status": "confirmed", "seats": 2}, "items": ["a", "b"], "tags": ["vip"], "note": None}


@pytest.mark.parametrize(
    "condition",
    [
        'booking.status == "confirmed"',
        'booking["status"] == "confirmed"',
        "len(items) >= 2",
        "items[0] == 'a' and items[-1] == 'b'",
        "'vip' in tags and 'x' not in tags",
        "booking.seats > 1 or missing",
        "booking",
        "not note",
        "not missing.key",
        "1 < booking.seats <= 2",
        "booking.status in ['confirmed', 'pending']",
    ],
)
def test_conditions_that_hold(condition: str) -> None:
    assert check_state(condition, STATE) is None


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ('booking.status == "cancelled"', "booking.status == \"cancelled\": false (booking.status is 'confirmed')"),
        ("len(items) > 5", "len(items) > 5: false (items is ['a', 'b'])"),
        ("missing.key == 1", "missing.key == 1: missing is not in the final state"),
        ("items[7] == 1", "items[7] == 1: items[7] is not in the final state"),
        ("note", "note: false (note is None)"),
        ("booking.status > 3", "cannot be evaluated"),
    ],
)
def test_conditions_that_fail_say_why(condition: str, message: str) -> None:
    problem = check_state(condition, STATE)
    assert problem is not None and message in problem


@pytest.mark.parametrize(
    ("condition", "why"),
    [
        ("booking.__class__", "names starting with __"),
        ("'x'.upper()", "the only call allowed is len"),
        ("__import__('os').system('true')", "the only call allowed is len"),
        ("len(items).real", "not a path"),
        ("import os", "not a condition"),
        ("[x for x in items]", "a comprehension"),
        ("9**9**9**9", "an exponent"),
        ("items * 10", "arithmetic"),
        ("(lambda: 1)", "a lambda"),
        ("len(items, 2)", "len takes exactly one value"),
        ("items[0:2]", "a subscript must be"),
        ("note is None", "not `is`"),
        ("x == '" + "a" * 2000 + "'", "longer than"),
    ],
)
def test_unsafe_or_unknown_conditions_are_refused_before_running(condition: str, why: str) -> None:
    with pytest.raises(ExpressionError, match=why):
        parse_condition(condition)


def test_nesting_is_bounded() -> None:
    with pytest.raises(ExpressionError, match="nests deeper"):
        parse_condition(" and ".join(["not"] * 1) + " " + "not " * 40 + "x")


def test_a_trajectory_cell_holds_nodes_and_tool_calls() -> None:
    steps = parse_trajectory('Lookup | search(city="Paris", n=2) | Reply | done()')
    assert steps == (
        Step("Lookup"),
        Step("search", tool=True, args=(("city", "Paris"), ("n", 2))),
        Step("Reply"),
        Step("done", tool=True),
    )
    assert str(steps[1]) == "search(city='Paris', n=2)"


@pytest.mark.parametrize("cell", ["A||B", "search(city)", "search(city=os.name)", "(x=1)", "search(city='a'"])
def test_malformed_trajectories_are_refused(cell: str) -> None:
    with pytest.raises(ExpressionError):
        parse_trajectory(cell)


RUN = [Step("A"), Step("B"), Step("C"), Step("search", tool=True, args=(("city", "Paris"), ("n", 2)))]


@pytest.mark.parametrize(
    ("mode", "passing", "failing"),
    [
        ("exact", "A|B|C", "A|C|B"),
        ("in_order", "A|C", "C|A"),
        ("any_order", "C|B|A", "A|B"),
        ("subset", "A|B|C|D", "A|B"),
        ("superset", "C|A", "A|D"),
    ],
)
def test_every_match_mode(mode: str, passing: str, failing: str) -> None:
    assert match_trajectory(parse_trajectory(passing), RUN, mode) is None
    problem = match_trajectory(parse_trajectory(failing), RUN, mode)
    assert problem is not None and problem.startswith("nodes ") and f"({mode};" in problem


def test_tool_calls_match_by_name_and_the_arguments_given() -> None:
    assert match_trajectory(parse_trajectory("search(city='Paris')"), RUN, "exact") is None
    assert match_trajectory(parse_trajectory("search()"), RUN, "exact") is None
    problem = match_trajectory(parse_trajectory("search(city='Rome')"), RUN, "exact")
    assert problem is not None and "tool calls are not exactly search(city='Rome')" in problem
    assert "the run's tool calls: search(city='Paris', n=2)" in problem


def test_any_order_pairs_each_step_once() -> None:
    run = [Step("t", tool=True, args=(("a", 1),)), Step("t", tool=True, args=(("a", 1), ("b", 2)))]
    assert match_trajectory(parse_trajectory("t(a=1, b=2) | t(a=1)"), run, "any_order") is None
    assert match_trajectory(parse_trajectory("t(a=1) | t(a=1) | t(a=1)"), run, "any_order") is not None
