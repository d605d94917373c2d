"""Before a run: refuse (or, with `--missing-inputs warn`, warn) when the initial state lacks inputs no node writes.

The check is the runtime's (`CompiledWorkflow.check_state`), the one every run, `agentmap serve` and `batch` make
too; this module says it in the command's words, with a `--state` example, before the run starts.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap import CompiledWorkflow

__all__ = ["check_initial_state"]

_EXAMPLE = "--state '{}'"


def check_initial_state(
    app: CompiledWorkflow, state: Mapping[str, Any], *, mode: str, thread: str | None = None
) -> None:
    """Raise (`mode` error) or warn on stderr (`mode` warn) when `state` lacks inputs no node of `app` writes.

    On `thread`, the values it saved count as given.

    Raises:
        ConfigError: With code `missing-state` (exit 2), when `mode` is error and a key is missing.
    """
    if mode == "ignore":
        return
    found = app.check_state(state, thread_id=thread)
    if found is None:
        return
    if mode == "error":
        raise found.error(example=_EXAMPLE, otherwise="--missing-inputs warn runs anyway, the node reading None")
    sys.stderr.write(f"warning: {found.message}\n    fix: {found.hint(example=_EXAMPLE)}\n")
    sys.stderr.flush()
