"""The node running in this context and how many model and tool calls it has made: the call journal's numbering.

`journal.py` owns the journal; this part lives apart so that starting a node run (`_steps.py`) does not import
the journal, which a workflow without model or tool calls never needs.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

__all__ = ["NODE", "NodeCalls", "begin_node"]


@dataclass
class NodeCalls:
    """The node running in this context, and how many calls it has made."""

    name: str
    calls: int = 0
    checked: bool = False  # whether the journal of the node's task was checked for damaged keys


NODE: contextvars.ContextVar[NodeCalls | None] = contextvars.ContextVar("agentmap_journal_node", default=None)


def begin_node(name: str) -> None:
    """Mark the start of a node's run: its calls are numbered from 0 again (a rerun makes the same calls)."""
    NODE.set(NodeCalls(name))
