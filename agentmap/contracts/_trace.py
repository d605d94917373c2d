"""Trace ids and the time stamps of trace events (csv_specs/agents.md): what a request carries and an agent's
trace records, shared by every contract type that names a moment (`agentmap.contracts.io` re-exports them).
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

__all__ = ["new_trace_id", "trace_event", "utc_timestamp"]


def new_trace_id() -> str:
    """Return a fresh, unique trace id (a UUID4 in hex)."""
    return uuid.uuid4().hex


_last_stamp: tuple[int, str] = (-1, "")


def utc_timestamp() -> str:
    """Return the current time as ISO 8601 UTC with milliseconds: `2025-01-01T10:00:00.123Z`."""
    global _last_stamp
    millis = time.time_ns() // 1_000_000
    last = _last_stamp
    if last[0] == millis:  # trace events come in bursts: format each millisecond once
        return last[1]
    stamp = datetime.fromtimestamp(millis / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"
    _last_stamp = (millis, stamp)
    return stamp


def trace_event(event: str, trace_id: str, **data: Any) -> dict[str, Any]:
    """Return a trace event: `{"event": event, "trace_id": trace_id, "timestamp": <now>, **data}`."""
    return {"event": event, "trace_id": trace_id, "timestamp": utc_timestamp(), **data}
