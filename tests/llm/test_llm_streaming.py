"""Token streaming: an LLM node's reply reaches `stream_mode="messages"` as the provider streams it, from a
subgraph's node too (`subgraphs=True`)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_stub import OpenAIStub, streamed

import agentmap

HEADER = ["GraphName", "Node", "AgentType", "Input_Fields", "Output_Field", "Prompt", "Context"]


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    with OpenAIStub() as server:
        yield server


def _workflow(folder: Path, stub: OpenAIStub, *, nested: bool = False) -> Path:
    context = json.dumps({"model": "gpt-stub", "base_url": stub.base_url, "max_retries": 0})
    path = folder / "ask.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        graph = "Inner" if nested else "g"
        if nested:
            writer.writerow(["g", "Call", "graph", "question", "answer", "", "{workflow=::Inner}"])
        writer.writerow([graph, "Ask", "openai", "question", "answer", "Answer briefly.", context])
    return path


def _text(chunks: list[Any]) -> str:
    return "".join(message.text for message, _ in chunks)


def test_stream_mode_messages_yields_the_chunks_the_provider_sent(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(streamed("Par", "is is ", "the capital."))
    app = agentmap.compile(_workflow(tmp_path, stub))
    chunks = list(app.stream({"question": "capital of France?"}, stream_mode="messages"))
    assert [type(m).__name__ for m, _ in chunks] == ["AIMessageChunk"] * len(chunks)
    assert [m.text for m, _ in chunks if m.text] == ["Par", "is is ", "the capital."]
    assert _text(chunks) == "Paris is the capital."
    assert {meta["langgraph_node"] for _, meta in chunks} == {"Ask"}
    assert stub.requests[0]["stream"] is True
    assert stub.requests[0]["stream_options"] == {"include_usage": True}  # at any base_url: the tokens are counted
    assert sum(m.usage_metadata["output_tokens"] for m, _ in chunks if m.usage_metadata) == 5


async def test_astream_messages_and_other_modes_together(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(streamed("one ", "two"))
    app = agentmap.compile(_workflow(tmp_path, stub))
    stream = app.astream({"question": "count"}, stream_mode=["messages", "updates"])
    seen = [(mode, chunk) async for mode, chunk in stream]
    modes = [mode for mode, _ in seen]
    assert modes.index("messages") < modes.index("updates")  # the tokens come before the node's update
    assert _text([chunk for mode, chunk in seen if mode == "messages"]) == "one two"
    assert next(chunk for mode, chunk in seen if mode == "updates")["Ask"]["answer"] == "one two"


def test_a_subgraph_node_streams_with_subgraphs_true(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(streamed("from ", "inside"))
    app = agentmap.compile(_workflow(tmp_path, stub, nested=True), "g")
    seen = list(app.stream({"question": "hi"}, stream_mode="messages", subgraphs=True))
    assert {ns[0].partition(":")[0] for ns, _ in seen} == {"Call"}
    assert _text([chunk for _, chunk in seen]) == "from inside"
    assert {meta["langgraph_node"] for _, (_, meta) in seen} == {"Ask"}
