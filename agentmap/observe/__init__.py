"""See what a run did: OpenTelemetry traces of runs, and pictures of a graph and of the path a run took.

Tracing needs the `otel` extra and is imported only when turned on; drawing needs no extra for SVG
(`grandalf` lays the graph out) and the `draw` extra's renderer for PNG. Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmap._lazy import lazy_exports

if TYPE_CHECKING:
    from agentmap.observe.draw import draw_graph, draw_run, to_png
    from agentmap.observe.outputs import to_dot
    from agentmap.observe.tracing import Tracing, flush_traces, resolve_tracing, tracing_from_settings

_HOMES = {
    "Tracing": "agentmap.observe.tracing",
    "resolve_tracing": "agentmap.observe.tracing",
    "flush_traces": "agentmap.observe.tracing",
    "tracing_from_settings": "agentmap.observe.tracing",
    "draw_graph": "agentmap.observe.draw",
    "draw_run": "agentmap.observe.draw",
    "to_png": "agentmap.observe.draw",
    "to_dot": "agentmap.observe.outputs",
}
__all__ = [
    "Tracing",
    "draw_graph",
    "draw_run",
    "flush_traces",
    "resolve_tracing",
    "to_dot",
    "to_png",
    "tracing_from_settings",
]
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
