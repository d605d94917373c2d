"""StateAdapter reads and writes dicts, pydantic models and plain objects without mutating them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from agentmap.agents.state import StateAdapter, parse_input_field, parse_output_field


class Model(BaseModel):
    question: str = "why?"
    answer: str | None = None


@dataclass
class Plain:
    question: str = "why?"
    answer: str | None = None


STATES: list[Any] = [{"question": "why?", "answer": None}, Model(), Plain()]


@pytest.mark.parametrize("state", STATES, ids=["dict", "pydantic", "object"])
def test_get_inputs_reads_every_shape_and_missing_keys_read_as_none(state: Any) -> None:
    assert StateAdapter.get_inputs(state, ["question", "absent", "question:q", "a=question"]) == {
        "question": "why?",
        "absent": None,
        "q": "why?",
        "a": "why?",
    }
    assert StateAdapter.get_value(state, "absent", "fallback") == "fallback"


@pytest.mark.parametrize("state", STATES, ids=["dict", "pydantic", "object"])
def test_set_value_returns_a_new_state_and_leaves_the_given_one_alone(state: Any) -> None:
    updated = StateAdapter.set_value(state, "answer", "because")
    assert updated is not state
    assert type(updated) is type(state)
    assert StateAdapter.get_value(updated, "answer") == "because"
    assert StateAdapter.get_value(updated, "question") == "why?"
    assert StateAdapter.get_value(state, "answer") is None


def test_set_value_on_a_dict_may_add_a_new_key() -> None:
    assert StateAdapter.set_value({"a": 1}, "b", 2) == {"a": 1, "b": 2}


def test_get_inputs_of_no_fields_is_empty() -> None:
    assert StateAdapter.get_inputs({"a": 1}, []) == {}


@pytest.mark.parametrize(
    ("field", "parsed"),
    [
        ("key", ("key", "key")),
        ("query:question", ("query", "question")),
        ("question=query", ("query", "question")),
        (" a : b ", ("a", "b")),
        ("key:", ("key", "key")),
    ],
)
def test_parse_input_field(field: str, parsed: tuple[str, str]) -> None:
    assert parse_input_field(field) == parsed


@pytest.mark.parametrize(("field", "parsed"), [("answer", ("answer", None)), ("answer = text", ("answer", "text"))])
def test_parse_output_field(field: str, parsed: tuple[str, str | None]) -> None:
    assert parse_output_field(field) == parsed
