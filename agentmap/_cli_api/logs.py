"""logs: the decision log the settings name, and values as JSON the way it writes them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

__all__ = ["configured_log_path", "dumps"]


def configured_log_path(settings: Mapping[str, Any] | None = None) -> Path | None:
    """logs: the decision log the settings name (None when decision logging is off)."""
    from agentmap.llm.decision_log import configured_log_path

    return configured_log_path(settings)


def dumps(value: Any) -> str:
    """logs, and JSON output: a value as JSON the way the decision log writes it (what JSON cannot hold as text)."""
    from agentmap.llm.decision_log import dumps

    return dumps(value)
