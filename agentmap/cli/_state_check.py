"""Before a run: does the initial state hold every input that no node writes?

A state without such a key runs, and the node reads None (`Hello, None!`); a typo (`{"nmae": ...}`) does the
same. `agentmap run` warns, naming the missing keys and the given keys that look like them; `--strict` makes
it an error (exit 2).
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError

if TYPE_CHECKING:
    from agentmap import GraphSpec

__all__ = ["check_initial_state", "missing_inputs"]


def missing_inputs(graph: GraphSpec, state: Mapping[str, Any]) -> dict[str, list[str]]:
    """The inputs no node writes and `state` lacks: `{key: [nodes reading it]}`, in row order."""
    from agentmap._cli_api import SYSTEM_KEYS, state_key

    written = {state_key(f, output=True) for node in graph.nodes for f in node.outputs}
    missing: dict[str, list[str]] = {}
    for node in graph.nodes:
        for field in node.inputs:
            key = state_key(field, output=False)
            if key not in written and key not in SYSTEM_KEYS and key not in state:
                readers = missing.setdefault(key, [])
                if node.name not in readers:
                    readers.append(node.name)
    return missing


def check_initial_state(graph: GraphSpec, state: Mapping[str, Any], *, strict: bool) -> None:
    """Warn on stderr (or raise, when `strict`) when `state` lacks inputs that no node of `graph` writes.

    Args:
        graph: The graph about to run.
        state: The initial state.
        strict: Raise instead of warning.

    Raises:
        ConfigError: With code `missing-state` (exit 2), when `strict` and a key is missing.
    """
    missing = missing_inputs(graph, state)
    if not missing:
        return
    read = {k for node in graph.nodes for k in _input_keys(node)}
    unknown = [k for k in state if k not in read]
    parts = []
    example = dict(state)
    for key, readers in missing.items():
        close = difflib.get_close_matches(key, unknown, n=1, cutoff=0.6)
        guess = f" (the state has {close[0]!r}: did you mean {key!r}?)" if close else ""
        nodes = ", ".join(repr(n) for n in readers)
        parts.append(f"{key!r}, read by node{'s' if len(readers) > 1 else ''} {nodes}{guess}")
        example[key] = example.pop(close[0]) if close else "..."
    keys = ", ".join(repr(k) for k in missing)
    message = (
        f"the initial state has no {'; no '.join(parts)}; no node writes "
        f"{'these keys' if len(missing) > 1 else 'it'}, so the node{'s' if len(missing) > 1 else ''} will read None"
    )
    hint = f"pass {keys} in the initial state, e.g. --state '{json.dumps(example, default=str)}'"
    if strict:
        raise ConfigError(message, code="missing-state", hint=hint)
    sys.stderr.write(f"warning: {message}\n    fix: {hint} (--strict makes this an error)\n")
    sys.stderr.flush()


def _input_keys(node: Any) -> list[str]:
    from agentmap._cli_api import state_key

    return [state_key(f, output=False) for f in node.inputs]
