"""What a failed model call raised, as one of three errors the engine (and the `llm` agent types) can act on:

* `LLMRateLimitError`: the provider refused the call for too many requests (HTTP 429).
* `LLMTimeoutError`: no answer within the time limit.
* `LLMError`: any other failure (a 500, a bad key, a dropped connection, malformed output).

Providers are recognised by what their exceptions carry (`status_code`, class names such as
`RateLimitError` or `APITimeoutError`), so no provider SDK is imported here. `llm.adapter` re-exports them.
"""

from __future__ import annotations

from agentmap.errors import AgentMapError, ErrorCode

__all__ = ["LLMError", "LLMRateLimitError", "LLMTimeoutError", "to_llm_error"]

_RATE_LIMIT_NAMES = ("ratelimit", "toomanyrequests", "resourceexhausted")


class LLMError(AgentMapError, RuntimeError):
    """A model call failed (provider error, bad credentials, lost connection, bad output).

    Attributes:
        model: The model's name, when known.
    """

    default_code = ErrorCode.LLM_ERROR

    def __init__(self, message: str, *, model: str | None = None, hint: str | None = None) -> None:
        self.model = model
        super().__init__(message, hint=hint)


class LLMRateLimitError(LLMError):
    """The provider refused the call because of too many requests (HTTP 429)."""

    default_code = ErrorCode.LLM_RATE_LIMIT


class LLMTimeoutError(LLMError):
    """The model did not answer within the time limit."""

    default_code = ErrorCode.LLM_TIMEOUT


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _status_code(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    if code is None:
        code = getattr(getattr(exc, "response", None), "status_code", None)
    return code if isinstance(code, int) else None


def to_llm_error(exc: BaseException, *, model: str | None = None, timeout: float | None = None) -> LLMError:
    """Classify an exception raised by a model call.

    Args:
        exc: What the chat model (or its client) raised.
        model: The model's name, for the message.
        timeout: The time limit that applied, for the message.

    Returns:
        An `LLMRateLimitError`, an `LLMTimeoutError` or an `LLMError`, with `exc` as its cause.
    """
    if isinstance(exc, LLMError):
        return exc
    who = f"model {model!r}" if model else "the model"
    for link in _chain(exc):
        name = type(link).__name__.lower()
        if _status_code(link) == 429 or any(n in name for n in _RATE_LIMIT_NAMES):
            return LLMRateLimitError(
                f"{who} refused the call: rate limit reached ({link})",
                model=model,
                hint="Wait a moment and retry, or lower the request rate / raise the provider quota.",
            )
    for link in _chain(exc):
        if isinstance(link, TimeoutError) or "timeout" in type(link).__name__.lower():
            limit = f" within {timeout:g}s" if timeout is not None else ""
            return LLMTimeoutError(
                f"{who} did not answer{limit}",
                model=model,
                hint="Raise `timeout` in the node's Context, or check that the provider is reachable.",
            )
    status = _status_code(exc)
    detail = f"HTTP {status}: " if status is not None else ""
    return LLMError(
        f"{who} call failed: {detail}{type(exc).__name__}: {exc}",
        model=model,
        hint="Check the provider's status, the model name and the API key.",
    )
