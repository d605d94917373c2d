"""The providers a node may name: how each one's chat model is built, their other names and model families."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ALIASES", "FAMILIES", "PROVIDERS", "ProviderInfo"]


@dataclass(frozen=True)
class ProviderInfo:
    """How to build one provider's chat model.

    Attributes:
        module: The integration package's import name.
        cls: The chat model class in that module.
        extra: The AgentMap extra that installs the package (`pip install "agentmap[<extra>]"`).
        key_env: The environment variable holding the API key, or None when none is needed.
        default_model: The model used when a node names only the provider.
        params: Our option name -> the class's keyword argument; an option missing here is unsupported.
    """

    module: str
    cls: str
    extra: str
    key_env: str | None
    default_model: str
    params: Mapping[str, str] = field(default_factory=dict)


_COMMON = {"temperature": "temperature", "max_tokens": "max_tokens", "max_retries": "max_retries"}

PROVIDERS: dict[str, ProviderInfo] = {
    "openai": ProviderInfo(
        "langchain_openai",
        "ChatOpenAI",
        "openai",
        "OPENAI_API_KEY",
        "gpt-4o-mini",
        {**_COMMON, "timeout": "timeout", "base_url": "base_url", "api_key": "api_key"},
    ),
    "anthropic": ProviderInfo(
        "langchain_anthropic",
        "ChatAnthropic",
        "anthropic",
        "ANTHROPIC_API_KEY",
        "claude-3-5-haiku-latest",
        {**_COMMON, "timeout": "timeout", "base_url": "base_url", "api_key": "api_key"},
    ),
    "google_genai": ProviderInfo(
        "langchain_google_genai",
        "ChatGoogleGenerativeAI",
        "google",
        "GOOGLE_API_KEY",
        "gemini-2.0-flash",
        {**_COMMON, "max_tokens": "max_output_tokens", "timeout": "timeout", "api_key": "google_api_key"},
    ),
    "ollama": ProviderInfo(
        "langchain_ollama",
        "ChatOllama",
        "ollama",
        None,
        "llama3.2",
        {"temperature": "temperature", "max_tokens": "num_predict", "base_url": "base_url"},
    ),
    "offline": ProviderInfo("agentmap.llm.offline", "OfflineChatModel", "", None, "offline", {}),
}
"""Supported providers by name; `google` is an alias of `google_genai`."""

ALIASES = {
    "google": "google_genai",
    "gemini": "google_genai",
    "claude": "anthropic",
    "gpt": "openai",
    "chatgpt": "openai",
}
"""Other names of providers."""
FAMILIES = (
    ("gpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
    ("gemini", "google_genai"),
)
"""Model-name prefixes whose provider is unambiguous: a bare model name with one of them is accepted."""
