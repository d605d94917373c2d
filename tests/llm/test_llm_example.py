"""graphs/llm_offline.csv, the example in csv_specs/llm.md: runs anywhere on the offline model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import agentmap

EXAMPLE = Path(__file__).resolve().parents[2] / "graphs" / "llm_offline.csv"


def test_the_example_validates_and_runs_a_conversation() -> None:
    assert not [i for i in agentmap.validate(EXAMPLE) if i.severity == "error"]
    app = agentmap.compile(EXAMPLE)
    state: dict[str, Any] = {}
    replies = []
    for request in ('reverse "hello world"', 'make "the old man" title case', "hello", "tell me a story"):
        result = app.invoke({**state, "request": request})
        assert result.success, result.state.get("errors")
        state = result.state
        replies.append(state["message"])
    assert replies == [
        "Done: reverse text returned dlrow olleh. (your request had 3 words)",
        "Done: title case returned The Old Man. (your request had 6 words)",
        "Hello! How can I help you today? (your request had 1 words)",
        "[offline] tell me a story (your request had 4 words)",
    ]
    # max_memory_messages is 6: the first exchange has left the window.
    assert state["chat_history"][0]["content"] == 'make "the old man" title case'
    assert len(state["chat_history"]) == 6
    assistant = next(e for e in result.summary if e.name == "Assistant")
    assert assistant.metadata["stand_in"] is True and assistant.metadata["model"] == "offline:offline"
