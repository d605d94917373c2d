"""The model spellings of AgentMap 0.9 Context cells, turned into `provider:model`.

* `provider` / `llm_provider` (`openai`, `anthropic`, `google`, and the aliases `gpt`, `chatgpt`,
  `claude`, `gemini`) name the provider of a bare `model`, or of no model (its default model).
* `model: anthropic.medium` is the old routing tier (`low`, `medium`, `high`, `critical`) of a provider;
  it maps to the model the 0.9 routing matrix chose by default for that tier.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["PROVIDER_ALIASES", "TIERS", "legacy_notes", "legacy_problems", "legacy_spec"]

PROVIDER_ALIASES = {"gpt": "openai", "chatgpt": "openai", "claude": "anthropic", "gemini": "google"}
"""Old provider names -> the provider they mean."""

TIERS: dict[str, dict[str, str]] = {
    "anthropic": {
        "low": "claude-haiku-4-5-20251001",
        "medium": "claude-sonnet-4-6",
        "high": "claude-sonnet-4-6",
        "critical": "claude-opus-4-6",
    },
    "openai": {"low": "gpt-4o-mini", "medium": "gpt-4.1-mini", "high": "gpt-4.1", "critical": "o3"},
    "google": {
        "low": "gemini-2.5-flash-lite",
        "medium": "gemini-2.5-flash",
        "high": "gemini-2.5-pro",
        "critical": "gemini-2.5-pro",
    },
}
"""The default routing matrix of AgentMap 0.9: provider -> tier -> model."""


def legacy_spec(model: Any, provider: Any) -> Any:
    """`model` (and the old `provider` key) as a `provider:model` spec; anything else is returned unchanged.

    An unknown tier (`anthropic.huge`) is left as written, so the model check reports it by name.
    """
    chosen = PROVIDER_ALIASES.get(str(provider).strip().lower(), str(provider).strip().lower()) if provider else None
    if isinstance(model, str) and ":" not in model and "." in model:
        head, _, tier = model.strip().partition(".")
        head = PROVIDER_ALIASES.get(head.lower(), head.lower())
        if head in TIERS and tier.lower() in TIERS[head]:
            return f"{head}:{TIERS[head][tier.lower()]}"
    if chosen is None:
        return model
    if model in (None, ""):
        return chosen
    return model if ":" in str(model) else f"{chosen}:{model}"


def legacy_problems(model: Any) -> list[str]:
    """A `provider.tier` model whose tier AgentMap 0.9 never had: say what the tiers are."""
    if not isinstance(model, str) or ":" in model or "." not in model:
        return []
    head, _, tier = model.strip().partition(".")
    provider = PROVIDER_ALIASES.get(head.lower(), head.lower())
    if provider in TIERS and tier.lower() not in TIERS[provider]:
        return [
            f"model {model!r} reads as an AgentMap 0.9 routing tier of {provider}, but {tier!r} is not one: "
            f"use {provider}.low, .medium, .high or .critical, or name the model: {provider}:<model>"
        ]
    return []


def legacy_notes(context: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """`(column, what was assumed, modern spelling)` when the old keys or a tier chose the model."""
    model, provider = context.get("model"), context.get("provider") or context.get("llm_provider")
    spec = legacy_spec(model, provider)
    if spec == model or not isinstance(spec, str):
        return []
    written = ", ".join(f"{k}={context[k]!r}" for k in ("provider", "llm_provider", "model") if context.get(k))
    meaning = f"model {spec!r}" if ":" in spec else f"the default model of provider {spec!r}"
    return [("Context", f"{written} (AgentMap 0.9) is read as {meaning}", f'"model": "{spec}"')]
