"""The reply heuristics: refusals, clarifications, JSON framing and tool traces."""

from __future__ import annotations

import pytest

from agentmap.interface.detect import clarification, has_json_framing, has_tool_trace, is_refusal


@pytest.mark.parametrize(
    ("text", "refuses"),
    [
        ("I can't help with that.", True),
        ("I’m sorry, but I cannot provide medical advice.", True),
        ("We are unable to assist with this request.", True),
        ("I must respectfully decline.", True),
        ("Sure, here is the plan for today.", False),
        ("The API cannot handle that, but here is a workaround.", False),
    ],
)
def test_refusals(text: str, refuses: bool) -> None:
    assert is_refusal(text) is refuses


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Could you clarify which city you mean?", "bounded"),
        ("What date? Which city?", "bounded"),
        ("Which one do you want? A? B? C? D?", "unbounded"),
        ("Here is the answer. Did you like it?", None),
        ("The sky is blue.", None),
    ],
)
def test_clarifications(text: str, kind: str | None) -> None:
    assert clarification(text) == kind


@pytest.mark.parametrize(
    ("text", "framed"),
    [
        ('{"content": "hi", "traces": []}', True),
        ("[1, 2]", True),
        ('```json\n{"a": 1}\n```', True),
        ("{hello} is a placeholder", False),
        ("Use {x} for variables.", False),
    ],
)
def test_json_framing(text: str, framed: bool) -> None:
    assert has_json_framing(text) is framed


@pytest.mark.parametrize(
    ("text", "traced"),
    [
        ("Action: search\nAction Input: flights\nObservation: none", True),
        ("<tool_call>{}</tool_call>", True),
        ('The result: {"tool_calls": []}', True),
        ("The next action: book the hotel.", False),
    ],
)
def test_tool_traces(text: str, traced: bool) -> None:
    assert has_tool_trace(text) is traced
