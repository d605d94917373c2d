"""Before a run: warn (or, with `--strict`, refuse) when the initial state lacks inputs no node writes.

The check is the runtime's (`CompiledWorkflow.check_state`), the one `agentmap serve` and `batch` make too; this
module says it on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap import CompiledWorkflow

__all__ = ["check_initial_state"]

_EXAMPLE = "--state '{}'"


def check_initial_state(app: CompiledWorkflow, state: Mapping[str, Any], *, strict: bool) -> None:
    """Warn on stderr (or raise, when `strict`) when `state` lacks inputs that no node of `app` writes.

    Raises:
        ConfigError: With code `missing-state` (exit 2), when `strict` and a key is missing.
    """
    found = app.check_state(state)
    if found is None:
        return
    if strict:
        raise found.error(example=_EXAMPLE)
    sys.stderr.write(
        f"warning: {found.message}\n    fix: {found.hint(example=_EXAMPLE)} (--strict makes this an error)\n"
    )
    sys.stderr.flush()
