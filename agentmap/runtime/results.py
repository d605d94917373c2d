"""`RunResult`: what one run of a `CompiledWorkflow` returns (final state, success, per-node summary, usage).

`total_usage` sums the tokens and cost the nodes recorded (their subgraphs' nodes included); the run's
drawing and Jupyter view are drawn by the observe room, loaded only when asked for (`runtime.views`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.runtime.tracking import NodeExecution

if TYPE_CHECKING:
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["RunResult", "total_usage"]


_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "total_tokens",
    "model_calls",
    "replayed_calls",
    "cache_hits",
)


def total_usage(executions: Sequence[NodeExecution]) -> dict[str, Any]:
    """The tokens and cost recorded by `executions` (and their subgraphs' nodes), summed; `{}` when none."""
    totals: dict[str, Any] = {}
    unpriced: set[str] = set()

    def add(found: Sequence[NodeExecution]) -> None:
        for execution in found:
            meta = execution.metadata
            if "input_tokens" in meta or "replayed_calls" in meta:
                for key in _COUNTS:
                    totals[key] = totals.get(key, 0) + int(meta.get(key) or 0)
                if meta.get("cost") is not None:
                    totals["cost"] = totals.get("cost", 0.0) + float(meta["cost"])
                unpriced.update(meta.get("unpriced_models") or ())
            add(execution.subgraph or [])

    add(executions)
    if "cost" in totals:
        totals["cost"] = round(totals["cost"], 8)
    if unpriced:
        totals["unpriced_models"] = sorted(unpriced)
    return totals


@dataclass(frozen=True)
class RunResult:
    """The outcome of one run.

    Attributes:
        state: The final state (keys of the initial state the graph does not use are kept).
        success: The success policy's verdict.
        summary: One record per node execution, in execution order.
        interrupts: Values of pending `interrupt()` calls, when the run paused for input.
        stopped: True when `invoke(..., stop=event)` ended the run between two steps before its end.
        usage: The tokens and cost of the run's model calls, summed over its nodes (`usage` property).
    """

    state: dict[str, Any]
    success: bool
    summary: list[NodeExecution] = field(default_factory=list)
    interrupts: tuple[Any, ...] = ()
    stopped: bool = False
    workflow: CompiledWorkflow | None = field(default=None, repr=False, compare=False)
    """The workflow that ran (what `draw()` draws the path on)."""

    @property
    def errors(self) -> list[str]:
        """The error messages of every failed node, in order."""
        return list(self.state.get("errors") or [])

    @property
    def failed_nodes(self) -> list[str]:
        """The names of the nodes that failed, in order."""
        return [e.name for e in self.summary if e.success is False]

    @property
    def usage(self) -> dict[str, Any]:
        """The run's model calls summed over its nodes (subgraphs included): `input_tokens`, `output_tokens`,
        `cached_tokens` (read from the provider's prompt cache), `cache_write_tokens` (written to it),
        `total_tokens`, `model_calls`, `replayed_calls` (answered by the call journal: no new cost), `cache_hits`
        (answered by the LLM response cache: no tokens, no cost), `cost` (USD at the prices paid, present when
        some model has a price) and `unpriced_models`; `{}` without model calls.
        """
        return total_usage(self.summary)

    def to_dict(self) -> dict[str, Any]:
        """`{"success", "state", "summary", "errors"}`, and `usage` after model calls (values that JSON cannot
        hold are left for the encoder)."""
        usage = self.usage
        return {
            "success": self.success,
            "state": self.state,
            "summary": [e.to_dict() for e in self.summary],
            "errors": self.errors,
            **({"usage": usage} if usage else {}),
            **({"interrupts": [repr(i) for i in self.interrupts]} if self.interrupts else {}),
            **({"stopped": True} if self.stopped else {}),
        }

    def summary_frame(self) -> Any:
        """The summary as a pandas DataFrame (needs the `notebook` extra)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError('summary_frame() needs pandas: pip install "agentmap[notebook]"') from None
        return pd.DataFrame([e.to_dict() for e in self.summary])

    def draw(self, path: str | Path | None = None) -> str:
        """The graph as SVG with the path this run took: nodes taken, failed, paused; durations; steps.

        Args:
            path: Also write the picture here (`.svg`, or `.png` with the `draw` extra).
        """
        from agentmap.runtime.views import views

        if self.workflow is None:
            raise ValueError("this RunResult does not know its workflow; draw it with agentmap.observe.draw_run")
        return views().draw_run(self.workflow, self, path)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Jupyter's view: the run's path as SVG (drawn offline), the summary table as HTML, and text."""
        from agentmap.runtime.views import views

        return views().run_bundle(self)
