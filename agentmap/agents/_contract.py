"""Small pieces of `BaseAgent.run` that hold clauses of the agent contract exactly.

The state changes `_pre_process` / `_post_process` make are part of what `run` returns; log lines stay
safe for any value; an agent raising `SystemExit` or
`KeyboardInterrupt` fails its node instead of ending the process.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

__all__ = ["escape_signal", "hook_changes", "hook_snapshot", "log_text"]


def escape_signal(exc: BaseException) -> Exception:
    """A `SystemExit` / `KeyboardInterrupt` raised by an agent, as the error its node fails with."""
    error = RuntimeError(f"the agent raised {type(exc).__name__}({', '.join(map(repr, exc.args))})")
    error.__cause__ = exc
    return error


def hook_snapshot(state: Any, hooks_overridden: bool) -> dict[str, Any] | None:
    """The state's keys before the hooks run, when the agent overrides a hook (else None: nothing to compare)."""
    if not hooks_overridden:
        return None
    return dict(state) if isinstance(state, Mapping) else None


def hook_changes(before: dict[str, Any] | None, state: Any) -> dict[str, Any]:
    """The keys `_pre_process` / `_post_process` added or changed in the state: part of what `run` returns."""
    if before is None or not isinstance(state, Mapping):
        return {}
    changed: dict[str, Any] = {}
    for key, value in state.items():
        if key in before and before[key] is value:
            continue
        try:
            same = key in before and bool(before[key] == value)
        except Exception:  # a value whose == raises or is not a bool (an array): count it as changed
            same = False
        if not same:
            changed[key] = value
    return changed


def log_text(value: Any, limit: int = 2000) -> str:
    """`str(value)` for a log line: cut after `limit` characters, and safe for values nested too deep for `str`."""
    try:
        text = str(value)
    except RecursionError:
        text = reprlib.repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"
