"""A model call as a provider's batch API takes it, and the provider's answer read back as the chat model reads
its own (`agentmap batch --llm-batch`; the journal's side is `agents/llm_batch.py`).

The request body is the one the LangChain chat model would send (`_get_request_payload`, the messages as sent:
the static part marked for Anthropic's prompt cache), and an answer is turned into the model's reply by the model
itself (`_create_chat_result` for `ChatOpenAI`, `_format_output` for `ChatAnthropic`): LangChain stays the one
reader and writer of each provider's messages. Other models (Ollama, Google, the offline model) have no batch
API here: their calls are made as usual.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentmap.agents.llm_batch import ModelBatching, Queued

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage

    from agentmap.agents.costs import Price

__all__ = ["answer_of", "batching_of", "provider_of", "queued_call"]

_DEFAULT_ROOTS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
_KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def provider_of(model: Any) -> str | None:
    """`openai` for `ChatOpenAI`, `anthropic` for `ChatAnthropic` (their subclasses too), else None: no batch API
    (Azure's deployments, Ollama, Google, the offline model)."""
    names = {c.__name__ for c in type(model).__mro__}
    if "AzureChatOpenAI" in names:
        return None
    if "ChatOpenAI" in names:
        return "openai"
    if "ChatAnthropic" in names:
        return "anthropic"
    return None


def batching_of(model: Any, model_name: str) -> ModelBatching:
    """Whether `model`'s calls can go through a provider batch job, as the batch's notice says it."""
    provider = provider_of(model)
    if provider is not None:
        return ModelBatching(provider, model_name)
    return ModelBatching(None, model_name, f"{type(model).__name__} has no provider batch API")


def queued_call(
    model: Any,
    sent: Sequence[BaseMessage],
    target: Any,
    options: Mapping[str, Any],
    key_env: str | None,
    price: Price | None,
) -> Queued | None:
    """The call as its provider's batch API takes it (None: the provider has none)."""
    provider = provider_of(model)
    if provider is None:
        return None
    bound = dict(getattr(target, "kwargs", None) or {})
    chosen = {k: v for k, v in options.items() if k != "timeout"}
    body = dict(model._get_request_payload(list(sent), **bound, **chosen))
    body.pop("stream", None)
    body.pop("stream_options", None)
    if provider == "anthropic":
        body = {k: v for k, v in body.items() if v is not None}
        root = getattr(model, "anthropic_api_url", None)
    else:
        root = getattr(model, "openai_api_base", None)
    in_batch = () if price is None else dataclasses.astuple(price.in_batch())
    return Queued(
        provider,
        str(root or _DEFAULT_ROOTS[provider]).rstrip("/"),
        key_env or _KEY_ENVS[provider],
        str(body.get("model") or ""),
        body,
        in_batch,
    )


def answer_of(model: Any, body: Mapping[str, Any]) -> AIMessage:
    """The reply a provider's batch job answered with `body` (a chat completion; a message), read by the model.

    Raises:
        ValueError: The body is not an answer the model can read.
    """
    from langchain_core.messages import AIMessage

    provider = provider_of(model)
    if provider == "anthropic":
        from anthropic.types import Message

        result = model._format_output(Message.model_validate(dict(body)))
    elif provider == "openai":
        result = model._create_chat_result(dict(body))
    else:
        raise ValueError(f"{type(model).__name__} reads no provider batch answer")
    reply = result.generations[0].message
    if not isinstance(reply, AIMessage):
        raise ValueError(f"the answer is a {type(reply).__name__}, not a model reply")
    return reply
