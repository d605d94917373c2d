"""Before a run: does the initial state hold every input that no node writes?

A state without such a key would run with the node reading None (`Hello, None!`); a typo (`{"nmae": ...}`) does
the same. A key is not asked for when every node reading it has a `default` in its Context. Every run of a
`CompiledWorkflow` with a new state asks `CompiledWorkflow.check_state` (on a thread, the thread's saved values
count too), and so do `agentmap run`, `agentmap serve` and `agentmap batch` before it starts; what it found is
an error (`missing-state`, the default) or, with `missing_inputs="warn"` (`--missing-inputs warn`), a warning
(a batch: one for the whole table); `runtime.options.MISSING_INPUTS` lists the modes.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from agentmap.errors import ConfigError, ErrorCode
from agentmap.spec.models import GraphSpec, state_key
from agentmap.spec.validation import SYSTEM_KEYS

__all__ = ["MissingState", "missing_inputs", "missing_state"]

_DEFAULTS = ("default", "default_result")
"""Context keys by which a node answers for an input it lacks."""


@dataclass(frozen=True)
class MissingState:
    """What an initial state lacks.

    Attributes:
        message: One line naming each missing key, the nodes reading it, and a given key that looks like it.
        keys: The missing keys, in row order.
        example: The state with the missing keys added (a look-alike key renamed), for a hint.
    """

    message: str
    keys: tuple[str, ...]
    example: dict[str, Any]

    def hint(self, where: str = "the initial state", example: str = "{}") -> str:
        """`pass 'key' in <where>, e.g. <example>`, the example state as JSON put into `example`'s `{}`."""
        keys = ", ".join(repr(k) for k in self.keys)
        return f"pass {keys} in {where}, e.g. {example.replace('{}', json.dumps(self.example, default=str))}"

    def error(self, where: str = "the initial state", example: str = "{}", otherwise: str = "") -> ConfigError:
        """The `missing-state` error a run refused raises; `otherwise` names how to run anyway."""
        hint = self.hint(where, example) + (f" ({otherwise})" if otherwise else "")
        return ConfigError(self.message, code=ErrorCode.MISSING_STATE, hint=hint)


def missing_inputs(graph: GraphSpec, state: Mapping[str, Any], called: Collection[str] = ()) -> dict[str, list[str]]:
    """The inputs no node writes and `state` lacks: `{key: [nodes reading it]}`, in row order.

    A node with a default in its Context (`default`; a `branching` node's `default_result`, which decides a
    missing value) has an answer of its own for what it lacks, and a node another node `called` by name (an
    orchestrator's planner and workers) gets its inputs from that caller: their inputs are not asked.
    """
    written = {state_key(f, output=True) for node in graph.nodes for f in node.outputs}
    missing: dict[str, list[str]] = {}
    for node in graph.nodes:
        if node.name in called or any(key in node.context for key in _DEFAULTS):
            continue
        for field in node.inputs:
            key = state_key(field, output=False)
            if key not in written and key not in SYSTEM_KEYS and key not in state:
                readers = missing.setdefault(key, [])
                if node.name not in readers:
                    readers.append(node.name)
    return missing


def missing_state(graph: GraphSpec, state: Mapping[str, Any], called: Collection[str] = ()) -> MissingState | None:
    """What `state` lacks of the inputs no node of `graph` writes (see `missing_inputs`), or None."""
    missing = missing_inputs(graph, state, called)
    if not missing:
        return None
    read = {state_key(f, output=False) for node in graph.nodes for f in node.inputs}
    unknown = [k for k in state if k not in read]
    parts = []
    example = dict(state)
    for key, readers in missing.items():
        close = difflib.get_close_matches(key, unknown, n=1, cutoff=0.6)
        guess = f" (the state has {close[0]!r}: did you mean {key!r}?)" if close else ""
        nodes = ", ".join(repr(n) for n in readers)
        parts.append(f"{key!r}, read by node{'s' if len(readers) > 1 else ''} {nodes}{guess}")
        example[key] = example.pop(close[0]) if close else "..."
    several = len(missing) > 1
    many = len({n for nodes in missing.values() for n in nodes}) > 1
    message = (
        f"the initial state has no {'; no '.join(parts)}; no node writes "
        f"{'these keys' if several else 'it'}, so the node{'s' if many else ''} would read None"
    )
    return MissingState(message, tuple(missing), example)
