"""Every command: the settings, and which of the log lines they let through."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentmap.config import Settings

__all__ = ["is_trace", "load_settings"]


def load_settings(config: str | Path | None = None) -> Settings:
    """Every command: the settings of `--config` (else `agentmap.yaml`/`.toml` found here) and `AGENTMAP_*`."""
    from agentmap.config import load_settings

    return load_settings(config)


def is_trace(record: logging.LogRecord) -> bool:
    """Every command: whether a log record is a node's trace line (shown only at the TRACE level)."""
    from agentmap.agents._agent_log import is_trace

    return is_trace(record)
