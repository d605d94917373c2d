"""Token streaming through `agentmap serve` to LangGraph's own client (`langgraph-sdk`): `messages-tuple` gets
each chunk with its metadata, `messages` the metadata once then the message growing to its complete form; an LLM
node inside a subgraph streams too."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import serving

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from openai_stub import OpenAIStub, streamed

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

HEADER = ["GraphName", "Node", "AgentType", "Input_Fields", "Output_Field", "Prompt", "Context"]


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    with OpenAIStub() as server:
        yield server


@pytest.fixture
def client(tmp_path: Path, stub: OpenAIStub) -> Iterator[Any]:
    context = json.dumps({"model": "gpt-stub", "base_url": stub.base_url, "max_retries": 0})
    with (tmp_path / "ask.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerow(["Ask", "Answer", "openai", "question", "answer", "Answer briefly.", context])
        writer.writerow(["Nested", "Call", "graph", "question=question", "answer=answer", "", "{workflow=::Ask}"])
    with serving(tmp_path / "ask.csv") as url, sdk.get_sync_client(url=url, api_key=None) as c:
        yield c


def test_messages_tuple_sends_each_chunk_with_its_node(client: Any, stub: OpenAIStub) -> None:
    stub.script(streamed("Par", "is is ", "the capital."))
    parts = list(client.runs.stream(None, "Ask", input={"question": "France?"}, stream_mode="messages-tuple"))
    tuples = [p.data for p in parts if p.event == "messages"]
    assert [m["content"] for m, _ in tuples if m["content"]] == ["Par", "is is ", "the capital."]
    assert {meta["langgraph_node"] for _, meta in tuples} == {"Answer"}
    assert {m["type"] for m, _ in tuples} == {"AIMessageChunk"}


def test_messages_sends_metadata_then_partials_then_the_complete_message(client: Any, stub: OpenAIStub) -> None:
    stub.script(streamed("Par", "is is ", "the capital."))
    parts = list(client.runs.stream(None, "Ask", input={"question": "France?"}, stream_mode="messages"))
    events = [p.event for p in parts if p.event.startswith("messages")]
    assert events[0] == "messages/metadata" and events[-1] == "messages/complete"
    partials = [p.data[0]["content"] for p in parts if p.event == "messages/partial"]
    assert "Par" in partials and "Paris is " in partials  # the message as it grows
    complete = next(p.data[0] for p in parts if p.event == "messages/complete")
    assert complete["content"] == "Paris is the capital." and complete["type"] == "ai"
    [metadata] = [p.data for p in parts if p.event == "messages/metadata"]
    assert next(iter(metadata.values()))["metadata"]["langgraph_node"] == "Answer"


def test_a_subgraph_node_streams_to_the_client(client: Any, stub: OpenAIStub) -> None:
    stub.script(streamed("from ", "inside"))
    parts = list(client.runs.stream(None, "Nested", input={"question": "hi"}, stream_mode=["messages-tuple", "values"]))
    tuples = [p.data for p in parts if p.event == "messages"]
    assert "".join(m["content"] for m, _ in tuples) == "from inside"
    assert {meta["langgraph_node"] for _, meta in tuples} == {"Answer"}
    assert all(meta["langgraph_checkpoint_ns"].startswith("Call:") for _, meta in tuples)
    assert [p.data for p in parts if p.event == "values"][-1]["answer"] == "from inside"  # the top graph's values
