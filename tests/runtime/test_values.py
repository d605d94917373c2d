"""`agentmap.runtime.values`: the one reader of a JSON value from outside, and the keys a run may start with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentmap
from agentmap.runtime.values import MAX_DEPTH, BadValue, read_json, repaired, state_problem, value_problem

HELLO = Path(__file__).resolve().parents[2] / "graphs" / "hello_world.csv"


def _refused(text: str | bytes) -> str:
    with pytest.raises(BadValue) as caught:
        read_json(text)
    return caught.value.problem.message("input")


def test_each_rule_names_the_place_in_the_value() -> None:
    assert _refused('{"a": [1, "\\ud800"]}').startswith("input.a[1] holds a lone surrogate")
    assert _refused('{"a b": {"\\udc00": 1}}').startswith('input["a b"] has a key "\\udc00"')
    assert _refused('{"n": ' + "9" * 5000 + "}").startswith("input.n is an integer of 5000 digits")
    assert _refused('{"n": -9223372036854775809}').startswith("input.n is -9223372036854775809, beyond")
    assert _refused('{"x": {"y": NaN}}').startswith("input.x.y is nan: JSON carries finite numbers only")
    assert _refused('{"x": -Infinity}').startswith("input.x is -inf")
    assert _refused('{"x": 1,}').startswith("input is not valid JSON: Expecting property name")
    assert _refused(b'{"x": "\xff"}') == "input is not UTF-8 text"


def test_nesting_is_refused_past_the_bound_and_named_near_the_top_without_recursion() -> None:
    ok = '{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"
    assert read_json(ok) == json.loads(ok)  # the outer object is level 1
    assert _refused('{"a": {"b": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}}") == (
        f"input.a.b nests objects and arrays deeper than {MAX_DEPTH} levels"
    )
    deep: object = []
    for _ in range(100_000):  # far past Python's recursion limit: the walk has no recursion to run out of
        deep = [deep]
    problem = value_problem({"a": deep})
    assert problem is not None and problem.path == "a[0]"
    assert _refused("[" * 100_000 + "]" * 100_000) == f"input nests objects and arrays deeper than {MAX_DEPTH} levels"


def test_values_within_the_rules_are_read_as_they_are() -> None:
    text = json.dumps({"big": 2**63 - 1, "small": -(2**63), "emoji": "\U0001f600", "nul": "\u0000"})
    assert read_json(text) == json.loads(text)
    assert read_json('"\\ud83d\\ude00"') == "\U0001f600"  # an escaped surrogate pair is one character


def test_every_name_langgraph_reserves_is_a_key_a_run_cannot_start_with() -> None:
    from langgraph._internal._constants import RESERVED
    from langgraph.constants import START

    for key in {*RESERVED, START, "__pregel_tasks"}:
        problem = state_problem({key: 1})
        assert problem is not None and problem.path == key and "LangGraph keeps for itself" in problem.reason


def test_system_keys_may_be_given_with_a_value_of_their_type() -> None:
    assert state_problem({"errors": ["earlier"], "last_action_success": True, "graph_success": False}) is None
    assert state_problem({"name": "Ada", "__end__x": 1}) is not None
    problem = state_problem({"errors": "boom"})
    assert problem is not None and problem.message() == (
        "errors must be a list, not text: the runtime appends the error of every failed node to it"
    )


def test_a_python_caller_gets_bad_state_instead_of_a_type_error_inside_the_run() -> None:
    app = agentmap.compile(HELLO)
    with pytest.raises(agentmap.ConfigError) as caught:
        app.invoke({"name": "Ada", "errors": 1})
    assert caught.value.code == agentmap.ErrorCode.BAD_STATE
    assert str(caught.value.message).startswith("the initial state's errors must be a list, not a number")
    assert app.invoke({"name": "Ada", "errors": ["before"]}).state["errors"] == ["before"]


def test_a_budget_must_be_a_finite_positive_number() -> None:
    app = agentmap.compile(HELLO)
    for budget in (float("nan"), float("inf"), 0):
        with pytest.raises(agentmap.ConfigError, match="the budget must be a positive number"):
            app.invoke({"name": "Ada"}, {"configurable": {"budget": budget}})


def test_repaired_replaces_lone_surrogates_only() -> None:
    fixed, changed = repaired({"k\udc00": ["a\ud800b", 1, {"ok": "caf\u00e9"}]})
    assert changed and fixed == {"k\ufffd": ["a\ufffdb", 1, {"ok": "caf\u00e9"}]}
    same = {"a": ["b"]}
    assert repaired(same) == (same, False) and repaired(same)[0] is same
