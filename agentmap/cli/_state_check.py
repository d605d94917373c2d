"""Before a run: warn (or, with `--strict`, refuse) when the initial state lacks inputs no node writes.

The check is the runtime's (`missing_state`), the one `agentmap serve` makes too; this module says it on stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError

if TYPE_CHECKING:
    from agentmap import GraphSpec

__all__ = ["check_initial_state"]


def check_initial_state(graph: GraphSpec, state: Mapping[str, Any], *, strict: bool) -> None:
    """Warn on stderr (or raise, when `strict`) when `state` lacks inputs that no node of `graph` writes.

    Args:
        graph: The graph about to run.
        state: The initial state.
        strict: Raise instead of warning.

    Raises:
        ConfigError: With code `missing-state` (exit 2), when `strict` and a key is missing.
    """
    from agentmap._cli_api import missing_state

    found = missing_state(graph, state)
    if found is None:
        return
    keys = ", ".join(repr(k) for k in found.keys)
    hint = f"pass {keys} in the initial state, e.g. --state '{json.dumps(found.example, default=str)}'"
    if strict:
        raise ConfigError(found.message, code="missing-state", hint=hint)
    sys.stderr.write(f"warning: {found.message}\n    fix: {hint} (--strict makes this an error)\n")
    sys.stderr.flush()
