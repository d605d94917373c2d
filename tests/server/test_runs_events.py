"""How a run's chunks become the server's events: JSON values, interrupts, and messages by id."""

from __future__ import annotations

import datetime
import json

from langchain_core.messages import AIMessage, AIMessageChunk
from langgraph.types import Interrupt

from agentmap.server._encode import dumps, jsonable
from agentmap.server._runs import _Messages


def test_values_become_json_the_way_langgraph_server_writes_them() -> None:
    value = {
        "pause": (Interrupt(value={"question": "ok?"}, id="i1"),),
        "when": datetime.date(2026, 1, 2),
        "tags": {"a"},
        "raw": b"bytes",
        "message": AIMessage(content="hi", id="m1"),
        "other": object,
    }
    data = jsonable(value)
    assert data["pause"] == [{"value": {"question": "ok?"}, "id": "i1"}]
    assert data["when"] == "2026-01-02" and data["tags"] == ["a"] and data["raw"] == "bytes"
    assert data["message"]["content"] == "hi" and data["message"]["type"] == "ai"
    assert data["other"] == "<class 'object'>"  # never a crash on what JSON cannot hold
    assert json.loads(dumps(value)) == data


def test_messages_mode_sends_metadata_once_then_partials_that_grow() -> None:
    messages = _Messages()
    meta = {"langgraph_node": "Assistant"}
    first = messages.events((AIMessageChunk(content="Hel", id="m1"), meta), {"messages"})
    second = messages.events((AIMessageChunk(content="lo", id="m1"), meta), {"messages"})
    assert [e for e, _ in first] == ["messages/metadata", "messages/partial"]
    assert first[0][1] == {"m1": {"metadata": meta}}
    assert [e for e, _ in second] == ["messages/partial"] and second[0][1][0]["content"] == "Hello"
    both = messages.events((AIMessage(content="Done", id="m2"), meta), {"messages", "messages-tuple"})
    assert [e for e, _ in both] == ["messages", "messages/metadata", "messages/complete"]
    assert both[0][1][0]["content"] == "Done" and both[0][1][1] == meta
