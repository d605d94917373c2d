"""An agent's log: messages prefixed `[ClassName:node]`, at the levels of the agent contract.

`log_trace` follows the contract's `getattr(logger, level, logger.info)`: a logger with a `trace` method gets
the message there, a standard `logging.Logger` gets it through `logger.info`, marked `TRACE_MARK` in the
record's extras so that a handler (the command line's) can leave trace lines out while showing INFO.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

__all__ = ["TRACE", "TRACE_MARK", "AgentLog", "is_trace"]

TRACE = 5
"""The level name `TRACE` of the settings (`logging.level`), below DEBUG."""
logging.addLevelName(TRACE, "TRACE")

TRACE_MARK = "agentmap_trace"
"""The record attribute (true) of a `log_trace` message written through a standard logger's `info`."""


def is_trace(record: logging.LogRecord) -> bool:
    """Whether `record` is a `log_trace` message."""
    return bool(getattr(record, TRACE_MARK, False))


class AgentLog:
    """Writes one agent's messages to its logger.

    Args:
        agent_name: The node name (for the error when no logger was given).
        prefix: What every message starts with (`[ClassName:node]`).
        logger: Where messages go; None makes `log` raise the contract's ValueError.
    """

    enabled: Callable[[int], bool]
    """`enabled(level)`: whether a message at `level` would be written (False without a logger)."""

    def __init__(self, agent_name: str, prefix: str, logger: logging.Logger | None) -> None:
        self.agent_name = agent_name
        self.prefix = prefix
        self.logger = logger

    @property
    def logger(self) -> logging.Logger | None:
        """Where messages go (None: `log` raises the contract's ValueError)."""
        return self._logger

    @logger.setter
    def logger(self, logger: logging.Logger | None) -> None:
        self._logger = logger
        self.enabled = _level_check(logger)  # looked up once per logger, not once per message
        self.trace_level = TRACE if hasattr(logger, "trace") else logging.INFO

    def tracing(self) -> bool:
        """Whether a `log_trace` message would be written (a standard logger writes it at INFO)."""
        return self.enabled(self.trace_level)

    def log(self, level: str, message: str, *args: Any, **kwargs: Any) -> None:
        """Log `message` at `level` ("debug", "info", ..., "trace").

        Raises:
            ValueError: No logger was given to the agent.
        """
        logger = self.logger
        if logger is None:
            raise ValueError(
                f"Logger not provided to agent '{self.agent_name}'. "
                "Please inject logger dependency using DI fixtures in tests or provide logger in constructor."
            )
        if level == "trace" and isinstance(logger, logging.Logger):
            kwargs["extra"] = {**kwargs.get("extra", {}), TRACE_MARK: True}
        logger_method = getattr(logger, level, logger.info)
        logger_method(f"{self.prefix} {message}", *args, **kwargs)


def _never(level: int) -> bool:
    return False


def _always(level: int) -> bool:
    return True


def _level_check(logger: Any) -> Callable[[int], bool]:
    """`logger.isEnabledFor`, bound once (a logger-like object without it logs everything)."""
    if logger is None:
        return _never
    check = getattr(logger, "isEnabledFor", None)
    if check is None:
        return _always
    if isinstance(logger, logging.Logger):
        return check  # type: ignore[no-any-return]
    return lambda level: bool(check(level))
