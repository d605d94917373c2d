"""`LLMAdapter` with the real `ChatOpenAI` against the local stub, and the error classification."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from openai_stub import OpenAIStub, chat_model, error, slow, text, tool_calls

from agentmap.errors import AgentMapError
from agentmap.llm.adapter import LLMAdapter, LLMError, LLMRateLimitError, LLMTimeoutError, to_llm_error
from agentmap.llm.offline import OfflineChatModel


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def add_task(title: str) -> str:
    """Add a task.

    Args:
        title: What to do.
    """
    return title


async def test_reply_with_tool_calls_comes_back_as_an_ai_message(stub: OpenAIStub) -> None:
    stub.script(tool_calls(("add_task", {"title": "milk"})))
    adapter = LLMAdapter(chat_model(stub), temperature=0.2, timeout_seconds=10)
    reply = await adapter.ainvoke([SystemMessage("be brief"), HumanMessage("add milk")], tools=[add_task])

    assert isinstance(reply, AIMessage)
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("add_task", {"title": "milk"})]
    [request] = stub.requests
    assert request["temperature"] == 0.2
    assert request["tools"][0]["function"]["name"] == "add_task"
    assert adapter.model_name == "gpt-stub"


async def test_call_temperature_overrides_the_default(stub: OpenAIStub) -> None:
    stub.script(text("a"), text("b"))
    adapter = LLMAdapter(chat_model(stub), temperature=0.2)
    await adapter.ainvoke([HumanMessage("x")])
    await adapter.ainvoke([HumanMessage("x")], temperature=0.9)
    assert [r["temperature"] for r in stub.requests] == [0.2, 0.9]
    assert "tools" not in stub.requests[0]


def test_sync_invoke(stub: OpenAIStub) -> None:
    stub.script(text("hello"))
    reply = LLMAdapter(chat_model(stub), temperature=0.0).invoke([HumanMessage("hi")])
    assert reply.text == "hello"
    assert stub.requests[0]["temperature"] == 0.0


async def test_429_is_a_rate_limit_error(stub: OpenAIStub) -> None:
    stub.script(error(429, "Rate limit reached"))
    with pytest.raises(LLMRateLimitError, match="rate limit") as caught:
        await LLMAdapter(chat_model(stub)).ainvoke([HumanMessage("x")])
    assert caught.value.code == "llm-rate-limit"
    assert isinstance(caught.value, AgentMapError)


@pytest.mark.parametrize("status", [500, 401, 400])
async def test_other_http_errors_are_llm_errors(stub: OpenAIStub, status: int) -> None:
    stub.script(error(status, "boom"))
    with pytest.raises(LLMError, match=f"HTTP {status}") as caught:
        await LLMAdapter(chat_model(stub)).ainvoke([HumanMessage("x")])
    assert type(caught.value) is LLMError
    assert caught.value.hint


async def test_slow_reply_is_a_timeout_at_the_limit(stub: OpenAIStub) -> None:
    stub.script(slow(5))
    started = time.perf_counter()
    with pytest.raises(LLMTimeoutError, match=r"within 0\.5s"):
        await LLMAdapter(chat_model(stub), timeout_seconds=0.5).ainvoke([HumanMessage("x")])
    assert time.perf_counter() - started < 5  # gave up at the limit, before the reply came (5 s)


def test_sync_slow_reply_times_out_through_the_client(stub: OpenAIStub) -> None:
    stub.script(slow(5))
    with pytest.raises(LLMTimeoutError):
        LLMAdapter(chat_model(stub), timeout_seconds=0.5).invoke([HumanMessage("x")])


async def test_model_without_tool_support_is_a_clear_error() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("x")]))
    with pytest.raises(LLMError, match="cannot call tools"):
        await LLMAdapter(model).ainvoke([HumanMessage("x")], tools=[add_task])


async def test_model_without_temperature_field_gets_no_temperature() -> None:
    adapter = LLMAdapter(OfflineChatModel(), temperature=0.5, timeout_seconds=3)
    assert adapter.call_options() == {}
    reply = await adapter.ainvoke([HumanMessage("hello")])
    assert reply.response_metadata["stand_in"] is True


def test_openai_model_gets_temperature_and_request_timeout(stub: OpenAIStub) -> None:
    adapter = LLMAdapter(chat_model(stub), temperature=0.0, timeout_seconds=7)
    assert adapter.call_options() == {"temperature": 0.0, "timeout": 7}


class _StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"status {status_code}")
        self.status_code = status_code


class ResourceExhausted(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (_StatusError(429), LLMRateLimitError),
        (ResourceExhausted("quota"), LLMRateLimitError),
        (TimeoutError(), LLMTimeoutError),
        (_StatusError(503), LLMError),
        (ValueError("bad json"), LLMError),
    ],
)
def test_errors_are_classified_by_what_they_carry(exc: Exception, kind: type[LLMError]) -> None:
    assert type(to_llm_error(exc, model="m")) is kind


def test_a_cause_deep_in_the_chain_is_found() -> None:
    try:
        try:
            raise _StatusError(429)
        except _StatusError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert isinstance(to_llm_error(outer), LLMRateLimitError)
