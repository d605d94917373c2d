"""Chat model resolution: `provider:model` plus options to a langchain-core `BaseChatModel`.

A node names its model in Context (`"model": "openai:gpt-4o-mini"`) with optional `temperature`,
`max_tokens`, `timeout`, `base_url`, `max_retries` and `api_key_env` (the variable holding the key).
Whatever a node leaves out comes from the settings (`llm.model`, `llm.temperature`, ... as a nested
`{"llm": {...}}` mapping or flat dotted keys), then from `AGENTMAP_LLM_*` environment variables.

Provider packages are optional extras; each is imported inside `resolve_model` only, so importing this
module costs nothing. `check_model` reports, before a run, what `resolve_model` would fail on: an
unknown provider, a missing extra (with the `pip install` line) or a missing API key (with the variable).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentmap.agents.findings import EnvironmentProblem
from agentmap.errors import ConfigError, ErrorCode
from agentmap.llm._providers import ALIASES, FAMILIES, PROVIDERS, ProviderInfo

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "MODEL_OPTIONS",
    "PROVIDERS",
    "ModelOptions",
    "ModelSpec",
    "ProviderInfo",
    "build_model",
    "check_model",
    "choose_model",
    "model_options",
    "model_problems",
    "model_spec",
    "resolve_model",
]

MODEL_OPTIONS = ("model", "temperature", "max_tokens", "timeout", "base_url", "max_retries", "api_key_env")
"""The Context keys (and `llm.*` settings) that configure a chat model."""


@dataclass(frozen=True)
class ModelOptions:
    """The model options a node (or a caller) sets, as written: what `choose_model` resolves into a `ModelSpec`.

    None leaves an option to the `llm.*` setting, then to the provider. Numbers may still be text (a Context cell);
    `choose_model` checks them, so `check_model` reports a bad one before a run.

    Attributes:
        model: `provider:model` (`openai:gpt-4o-mini`, `offline`), or None for `llm.model`.
        temperature, max_tokens, timeout, base_url, max_retries, api_key_env: As in `ModelSpec`.
    """

    model: str | None = None
    temperature: float | str | None = None
    max_tokens: int | str | None = None
    timeout: float | str | None = None
    base_url: str | None = None
    max_retries: int | str | None = None
    api_key_env: str | None = None


def model_options(context: Mapping[str, Any]) -> ModelOptions:
    """The model options a node's Context sets (the one place that reads them from Context)."""
    from agentmap.llm._legacy_models import legacy_spec

    given = {k: context[k] for k in MODEL_OPTIONS if context.get(k) not in (None, "")}
    # AgentMap 0.9 files name the provider apart (`provider`, `llm_provider`) and tiers (`anthropic.medium`)
    given["model"] = legacy_spec(given.get("model"), context.get("provider") or context.get("llm_provider"))
    return ModelOptions(**given)


@dataclass(frozen=True)
class ModelSpec:
    """A fully resolved model choice (what `resolve_model` builds).

    Attributes:
        provider: The canonical provider name (`openai`, `anthropic`, `google_genai`, `ollama`, `offline`).
        model: The provider's model name.
        temperature: Sampling temperature, or None for the provider's default.
        max_tokens: Reply length limit, or None.
        timeout: Seconds before a request is abandoned, or None.
        base_url: Endpoint override (an OpenAI-compatible server, a remote Ollama), or None.
        max_retries: Retries the client makes on transient errors, or None for its default.
        api_key_env: The environment variable the API key is read from, or None when none is needed.
        rate_limit: Requests per second shared by every model of this provider (`llm.rate_limit`), or None.
    """

    provider: str
    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    base_url: str | None = None
    max_retries: int | None = None
    api_key_env: str | None = None
    rate_limit: float | None = None

    @property
    def name(self) -> str:
        """`provider:model`, as a node would write it."""
        return f"{self.provider}:{self.model}"

    @property
    def info(self) -> ProviderInfo:
        """The provider's build recipe."""
        return PROVIDERS[self.provider]


def _setting(settings: Mapping[str, Any] | None, key: str) -> Any:
    """`llm.<key>` from nested or flat settings, then `AGENTMAP_LLM_<KEY>`; None when unset."""
    if settings:
        llm = settings.get("llm")
        if isinstance(llm, Mapping) and llm.get(key) is not None:
            return llm[key]
        if settings.get(f"llm.{key}") is not None:
            return settings[f"llm.{key}"]
    value = os.environ.get(f"AGENTMAP_LLM_{key.upper()}")
    return value if value not in (None, "") else None


def _number(name: str, value: Any, kind: type[int] | type[float]) -> Any:
    if value is None:
        return None
    what = "a whole number" if kind is int else "a number"
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value)
        if kind is int and not number.is_integer():
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"model option {name!r} must be {what}, got {value!r}") from None
    if not math.isfinite(number):  # NaN or infinity (JSON and YAML can spell both): no setting at all
        raise ConfigError(f"model option {name!r} must be a finite number, got {value!r}")
    if number < 0:
        raise ConfigError(f"model option {name!r} must not be negative, got {value!r}")
    if number == 0 and name == "timeout":
        raise ConfigError(f"model option 'timeout' must be greater than 0, got {value!r}")
    return kind(number)


def _provider(name: str) -> str:
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(key, key)
    if key in PROVIDERS:
        return key
    known = sorted([*PROVIDERS, *ALIASES])
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(
        f"unknown model provider {name!r}{hint} Write the model as provider:model with provider one of "
        f"{', '.join(sorted(PROVIDERS))} (google is accepted for google_genai)"
    )


def _split(spec: str, default_provider: str | None) -> tuple[str, str]:
    text = spec.strip()
    if not text:
        raise ConfigError("empty model name; write provider:model, e.g. openai:gpt-4o-mini or offline")
    head, sep, rest = text.partition(":")
    if sep:
        return _provider(head), rest.strip()
    lowered = text.lower()
    if lowered in PROVIDERS or lowered in ALIASES:
        return _provider(lowered), ""
    if default_provider:
        return _provider(default_provider), text
    for prefix, provider in FAMILIES:
        if lowered.startswith(prefix):
            return provider, text
    raise ConfigError(f"model {spec!r} names no provider; write provider:model, e.g. openai:{text} or ollama:{text}")


def model_spec(
    spec: str | None = None,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    base_url: str | None = None,
    max_retries: int | None = None,
    api_key_env: str | None = None,
    default_provider: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> ModelSpec:
    """Resolve a model choice without importing any provider package.

    Args:
        spec: `provider:model` (`openai:gpt-4o-mini`, `google:gemini-2.0-flash`, `offline`); None uses
            `llm.model` from the settings or `AGENTMAP_LLM_MODEL`.
        temperature: Overrides `llm.temperature`.
        max_tokens: Overrides `llm.max_tokens`.
        timeout: Seconds; overrides `llm.timeout`.
        base_url: Overrides `llm.base_url`.
        max_retries: Overrides `llm.max_retries`.
        api_key_env: The variable holding the API key, instead of the provider's usual one.
        default_provider: The provider of a bare model name, and of no name at all (the `openai`
            agent type passes `openai`).
        settings: Global settings (the agent environment's `settings`).

    Raises:
        ConfigError: For an unknown provider, a bad number, no model anywhere, or an option the provider
            does not support.
    """
    return choose_model(
        ModelOptions(spec, temperature, max_tokens, timeout, base_url, max_retries, api_key_env),
        default_provider=default_provider,
        settings=settings,
    )


def choose_model(
    options: ModelOptions, *, default_provider: str | None = None, settings: Mapping[str, Any] | None = None
) -> ModelSpec:
    """`model_spec` with the node's options in one object (see there)."""
    spec, given = options.model, options
    text = spec if spec not in (None, "") else _setting(settings, "model")
    if text in (None, ""):
        if default_provider is None:
            raise ConfigError(
                'no model configured: set Context model (e.g. "openai:gpt-4o-mini" or "offline"), '
                "the llm.model setting, or the AGENTMAP_LLM_MODEL environment variable"
            )
        text = default_provider
    provider, model = _split(str(text), default_provider)
    info = PROVIDERS[provider]
    chosen = ModelSpec(
        provider=provider,
        model=model or info.default_model,
        temperature=_number("temperature", _pick(given.temperature, settings, "temperature"), float),
        max_tokens=_number("max_tokens", _pick(given.max_tokens, settings, "max_tokens"), int),
        timeout=_number("timeout", _pick(given.timeout, settings, "timeout"), float),
        base_url=_pick(given.base_url, settings, "base_url"),
        max_retries=_number("max_retries", _pick(given.max_retries, settings, "max_retries"), int),
        api_key_env=(given.api_key_env or _setting(settings, "api_key_env") or info.key_env)
        if info.key_env
        else given.api_key_env,
        rate_limit=_number("rate_limit", _setting(settings, "rate_limit"), float) or None,
    )
    explicit = {
        "max_tokens": given.max_tokens,
        "timeout": given.timeout,
        "base_url": given.base_url,
        "max_retries": given.max_retries,
    }
    supported = {*info.params, "timeout"} if provider == "ollama" else set(info.params)
    for option, value in explicit.items():
        # Only options the node set are checked: a global default a provider cannot take is dropped.
        if provider != "offline" and value is not None and option not in supported:
            raise ConfigError(f"model option {option!r} is not supported by provider {provider!r}")
    return chosen


def _pick(explicit: Any, settings: Mapping[str, Any] | None, key: str) -> Any:
    return explicit if explicit is not None else _setting(settings, key)


def check_model(
    spec: str | None = None,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    base_url: str | None = None,
    max_retries: int | None = None,
    api_key_env: str | None = None,
    default_provider: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> list[str]:
    """Return what would stop `resolve_model` with these arguments, without building the model.

    Each problem is one message saying what to change: the extra to install or the environment
    variable to set. An empty list means the model can be built. Arguments as for `model_spec`.
    """
    options = ModelOptions(spec, temperature, max_tokens, timeout, base_url, max_retries, api_key_env)
    return model_problems(options, default_provider=default_provider, settings=settings)


def model_problems(
    options: ModelOptions, *, default_provider: str | None = None, settings: Mapping[str, Any] | None = None
) -> list[str]:
    """`check_model` with the node's options in one object (see there)."""
    try:
        chosen = choose_model(options, default_provider=default_provider, settings=settings)
    except ConfigError as exc:
        return [exc.message]
    problems: list[str] = []
    info = chosen.info
    if chosen.provider != "offline" and importlib.util.find_spec(info.module) is None:
        problems.append(EnvironmentProblem(_missing_extra(chosen), fix=f'pip install "agentmap[{info.extra}]"'))
    if chosen.api_key_env and not os.environ.get(chosen.api_key_env):
        env = chosen.api_key_env
        problems.append(
            EnvironmentProblem(
                f"model {chosen.name} needs an API key: set the environment variable {env}",
                fix=f"export {env}=<your key> in the shell that runs agentmap (a key is never a cell of the file)",
            )
        )
    return problems


def _missing_extra(chosen: ModelSpec) -> str:
    return (
        f"model {chosen.name} needs the {chosen.info.module.replace('_', '-')} package: "
        f'pip install "agentmap[{chosen.info.extra}]"'
    )


def resolve_model(
    spec: str | None = None,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    base_url: str | None = None,
    max_retries: int | None = None,
    api_key_env: str | None = None,
    default_provider: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> BaseChatModel:
    """Build the chat model a node asks for.

    Example:
        >>> resolve_model("offline").invoke("hello").response_metadata["stand_in"]
        True

    Arguments as for `model_spec`; options left as None take the provider's defaults.

    Raises:
        ConfigError: For a bad choice, a missing extra or a missing API key, saying what to install or set.
    """
    options = ModelOptions(spec, temperature, max_tokens, timeout, base_url, max_retries, api_key_env)
    return build_model(choose_model(options, default_provider=default_provider, settings=settings))


def build_model(chosen: ModelSpec) -> BaseChatModel:
    """Instantiate the chat model for a resolved `ModelSpec` (imports the provider package here).

    Raises:
        ConfigError: When the provider package is not installed or the API key is not set.
    """
    info = chosen.info
    try:
        module = importlib.import_module(info.module)
    except ImportError:
        raise ConfigError(_missing_extra(chosen), code=ErrorCode.MISSING_EXTRA) from None
    kwargs: dict[str, Any] = {"model": chosen.model}
    if chosen.provider == "offline":
        kwargs = {"model_name": chosen.model}
    for option in ("temperature", "max_tokens", "timeout", "base_url", "max_retries"):
        value = getattr(chosen, option)
        if value is not None and option in info.params:
            kwargs[info.params[option]] = value
    if chosen.provider == "openai":  # a streamed reply (a terminal, stream_mode="messages") still reports its tokens
        kwargs["stream_usage"] = True
    if chosen.provider == "ollama" and chosen.timeout is not None:
        kwargs["client_kwargs"] = {"timeout": chosen.timeout}
    if chosen.api_key_env:
        key = os.environ.get(chosen.api_key_env)
        if not key:
            raise ConfigError(
                f"model {chosen.name} needs an API key: set the environment variable {chosen.api_key_env}",
                code=ErrorCode.MISSING_API_KEY,
            )
        kwargs[info.params.get("api_key", "api_key")] = key
    if chosen.rate_limit:
        from agentmap.llm.rate_limits import provider_limiter

        kwargs["rate_limiter"] = provider_limiter(chosen.provider, chosen.rate_limit)
    model: BaseChatModel = getattr(module, info.cls)(**kwargs)
    return model
