"""`TokenWriter`: LLM nodes' text as it streams, one line a reply, parallel replies taking turns on new lines."""

from __future__ import annotations

import uuid

from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from agentmap.runtime.streaming import TokenWriter


def _start(writer: TokenWriter, node: str, **extra: object) -> uuid.UUID:
    run = uuid.uuid4()
    writer.on_chat_model_start({}, [[]], run_id=run, metadata={"langgraph_node": node}, **extra)  # type: ignore[arg-type]
    return run


def _end(writer: TokenWriter, run: uuid.UUID, text: str = "") -> None:
    writer.on_llm_end(LLMResult(generations=[[ChatGeneration(message=AIMessage(text))]]), run_id=run)


def test_parallel_replies_take_turns_on_new_lines_and_an_unstreamed_one_is_written_whole() -> None:
    pieces: list[str] = []
    writer = TokenWriter(pieces.append)
    a, b = _start(writer, "A"), _start(writer, "B")
    writer.on_llm_new_token("hel", run_id=a)
    writer.on_llm_new_token("hi", run_id=b)
    writer.on_llm_new_token("lo", run_id=a)
    _end(writer, b, "hi")
    _end(writer, a, "hello")
    whole = _start(writer, "C")
    _end(writer, whole, "all at once")
    hidden = _start(writer, "D", tags=["nostream"])
    writer.on_llm_new_token("secret", run_id=hidden)
    _end(writer, hidden, "secret")
    assert "".join(pieces) == "A: hel\nB: hi\nA: lo\nC: all at once\n"
