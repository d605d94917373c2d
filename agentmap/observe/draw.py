"""Pictures of a graph and of the path a run took: SVG drawn offline, PNG from the SVG, DOT text.

`grandalf` (the layered layout langchain-core's ASCII drawing uses) places the nodes and routes the
edges; this module only writes the boxes, arrows and labels as SVG. PNG is the SVG rendered by `resvg`
(the `draw` extra: a wheel with no system libraries). Nothing here touches the network.

A run's picture (`draw_run`) colours the nodes the run took (green), failed (red, ✗) or paused at
(amber), greys out the rest, writes each node's duration and its step number (branches that ran in
parallel share a number and are marked ∥), and thickens the edges the run went along.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.tracking import NodeExecution

__all__ = ["draw_graph", "draw_run", "to_png"]

_START, _END = "__start__", "__end__"
_CHAR_W, _LINE_H, _PAD, _GAP_X, _GAP_Y = 7.0, 16.0, 10.0, 36.0, 56.0
_LABEL_W = 6.5  # the width of a character of an edge label (11 px)
_COLOURS = {  # fill, stroke, text
    "plain": ("#eef3fb", "#4a6fa5", "#1c2b40"),
    "taken": ("#e3f5e1", "#2e8b3e", "#173d1c"),
    "failed": ("#fde4e1", "#c0392b", "#5a1610"),
    "paused": ("#fff4d6", "#c98a00", "#4d3600"),
    "skipped": ("#f4f4f4", "#b5b5b5", "#8a8a8a"),
    "terminal": ("#ffffff", "#555555", "#333333"),
}


@dataclass
class _Node:
    name: str
    lines: list[str]
    style: str = "plain"
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0
    badge: str = ""


@dataclass
class _Edge:
    source: str
    target: str
    label: str = ""
    dashed: bool = False
    taken: bool = False
    call: bool = False
    points: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class _Picture:
    title: str
    nodes: dict[str, _Node]
    edges: list[_Edge]
    legend: str = ""


def _model(app: CompiledWorkflow) -> _Picture:
    """Nodes and edges of the compiled graph, labelled from the spec (agent type, ok/fail edges)."""
    spec = {n.name: n for n in app.spec.nodes}
    drawn = app.graph.get_graph()
    nodes: dict[str, _Node] = {}
    for name in drawn.nodes:
        if name in (_START, _END):
            nodes[name] = _Node(name, ["start" if name == _START else "end"], "terminal")
        else:
            node = spec.get(name)
            nodes[name] = _Node(name, [name, (node.agent_type or "default").lower() if node else ""])
    edges: list[_Edge] = []
    for edge in drawn.edges:
        label, dashed = "", bool(edge.conditional)
        source = spec.get(edge.source)
        if source is not None and edge.conditional:
            if isinstance(source.success_next, tuple) and edge.target in source.success_next:
                label = "ok"
            elif isinstance(source.failure_next, tuple) and edge.target in source.failure_next:
                label = "fail"
            elif source.edge is not None and not isinstance(source.edge, tuple):
                label = "func"
        edges.append(_Edge(edge.source, edge.target, label, dashed))
    for name, agent in app.agents.items():  # an orchestrator calls its planner and workers by name
        for callee in type(agent).referenced_nodes(agent.context):
            if callee in nodes and name in nodes:
                edges.append(_Edge(name, callee, "calls", True, call=True))
    return _Picture(app.name, nodes, edges)


def _steps(summary: Sequence[NodeExecution]) -> dict[str, list[int]]:
    """Each node's step numbers: executions whose times overlap (parallel branches) share a number."""
    steps: dict[str, list[int]] = {}
    if summary and all("step" in e.facts for e in summary):  # LangGraph's own supersteps
        ordinals = {step: i + 1 for i, step in enumerate(sorted({e.facts["step"] for e in summary}))}
        for execution in summary:
            steps.setdefault(execution.name, []).append(ordinals[execution.facts["step"]])
        return steps
    number, current_end = 0, -1.0
    for execution in sorted(summary, key=lambda e: e.start):
        end = execution.end if execution.end is not None else execution.start
        if number == 0 or execution.start >= current_end:
            number += 1
            current_end = end
        else:
            current_end = max(current_end, end)
        steps.setdefault(execution.name, []).append(number)
    return steps


def _duration(seconds: float) -> str:
    if seconds < 0.001:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"


def _mark_run(picture: _Picture, result: RunResult) -> None:
    ran: dict[str, list[NodeExecution]] = {}
    for execution in result.summary:
        ran.setdefault(execution.name, []).append(execution)
    steps = _steps(result.summary)
    shared = [n for ns in steps.values() for n in ns]
    for name, node in picture.nodes.items():
        if node.style == "terminal":
            continue
        executions = ran.get(name)
        if not executions:
            called = any(e.call and e.target == name and e.source in ran for e in picture.edges)
            node.style = "plain" if called else "skipped"
            continue
        last = executions[-1]
        node.style = "failed" if last.success is False else "paused" if last.success is None else "taken"
        total = sum(e.duration or 0.0 for e in executions)
        times = f" ×{len(executions)}" if len(executions) > 1 else ""
        mark = {"failed": "✗ ", "paused": "‖ "}.get(node.style, "✓ ")
        node.lines.append(f"{mark}{_duration(total)}{times}")
        if any(e.subgraph for e in executions):
            inner = sum(len(e.subgraph or ()) for e in executions)
            node.lines.append(f"subgraph: {inner} node{'s' if inner != 1 else ''}")
        numbers = steps.get(name, [])
        parallel = any(shared.count(n) > 1 for n in numbers)
        node.badge = ",".join(map(str, numbers)) + (" ∥" if parallel else "")
    taken = set(ran)
    order = {name: min(e.start for e in executions) for name, executions in ran.items()}
    for edge in picture.edges:
        if edge.call:
            edge.taken = edge.source in taken
        elif edge.source == _START:
            edge.taken = edge.target in taken
        elif edge.target == _END:
            edge.taken = edge.source in taken and not result.interrupts
        else:
            edge.taken = edge.source in taken and edge.target in taken and order[edge.source] <= order[edge.target]
    verdict = "paused" if result.interrupts else "succeeded" if result.success else "failed"
    total = sum(e.duration or 0.0 for e in result.summary)
    picture.legend = f"run {verdict}: {len(result.summary)} node runs, {_duration(total)} in nodes"
    if any(node.badge.endswith("∥") for node in picture.nodes.values()):
        picture.legend += " · ∥ ran in parallel (same step number)"


_LAYOUT_LOCK = threading.Lock()
"""grandalf counts vertices in a class attribute (`Vertex.ncur`) while it orders them: one layout at a time."""


def _layout(picture: _Picture) -> tuple[float, float]:
    """Place nodes and route edges with grandalf; returns the drawing's width and height."""
    with _LAYOUT_LOCK:
        return _place(picture)


def _place(picture: _Picture) -> tuple[float, float]:
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    class _View:
        def __init__(self, w: float, h: float) -> None:
            self.w, self.h = w, h
            self.xy = (0.0, 0.0)

    class _EdgeView:
        def __init__(self) -> None:
            self.points: list[tuple[float, float]] = []

        def setpath(self, points: Iterable[Any]) -> None:
            self.points = [(float(x), float(y)) for x, y in points]

    vertices: dict[str, Any] = {}
    for name, node in picture.nodes.items():
        node.w = max(len(line) for line in node.lines) * _CHAR_W + 2 * _PAD + (14 if node.badge else 0)
        node.h = len(node.lines) * _LINE_H + _PAD
        vertex = Vertex(name)
        vertex.view = _View(node.w, node.h)
        vertices[name] = vertex
    pairs = [(e, Edge(vertices[e.source], vertices[e.target])) for e in picture.edges if e.source != e.target]
    for _, edge in pairs:
        edge.view = _EdgeView()
    graph = Graph(list(vertices.values()), [edge for _, edge in pairs])
    offset_x = 0.0
    for component in graph.C:
        layout = SugiyamaLayout(component)
        layout.xspace, layout.yspace = _GAP_X, _GAP_Y
        roots = [v for v in component.sV if v.data == _START] or None
        layout.init_all(roots=roots)
        layout.draw()
        xs = [v.view.xy[0] - v.view.w / 2 for v in component.sV]
        shift = offset_x - min(xs)
        for vertex in component.sV:
            node = picture.nodes[vertex.data]
            node.x, node.y = vertex.view.xy[0] + shift, vertex.view.xy[1]
        for edge in component.sE:
            edge.view.points = [(x + shift, y) for x, y in edge.view.points]
        offset_x = max(n.x + n.w / 2 for n in (picture.nodes[v.data] for v in component.sV)) + _GAP_X
    for drawn, edge in pairs:
        drawn.points = edge.view.points
    top = min(n.y - n.h / 2 for n in picture.nodes.values()) - 40
    for node in picture.nodes.values():
        node.y -= top
    for drawn in picture.edges:
        drawn.points = [(x, y - top) for x, y in drawn.points]
    left = min([n.x - n.w / 2 for n in picture.nodes.values()] + [x for e in picture.edges for x, _ in e.points])
    for node in picture.nodes.values():
        node.x += _PAD - left
    for drawn in picture.edges:
        drawn.points = [(x + _PAD - left, y) for x, y in drawn.points]
    # The canvas holds everything drawn: nodes, edges routed around them, and the edges' labels.
    rights = [n.x + n.w / 2 for n in picture.nodes.values()] + [x for e in picture.edges for x, _ in e.points]
    rights += [_label_at(e.points)[0] + 4 + len(e.label) * _LABEL_W for e in picture.edges if e.label and e.points]
    width = max(rights) + _PAD
    height = max(n.y + n.h / 2 for n in picture.nodes.values()) + (34 if picture.legend else _PAD)
    return max(width, len(picture.title) * 8.5 + 2 * _PAD, len(picture.legend) * _CHAR_W + 2 * _PAD), height


def _label_at(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Where an edge's label is anchored: its middle bend, or the middle of a straight edge."""
    if len(points) > 2:
        return points[len(points) // 2]
    return (points[0][0] + points[-1][0]) / 2, (points[0][1] + points[-1][1]) / 2


def _clip(a: tuple[float, float], b: tuple[float, float], node: _Node) -> tuple[float, float]:
    """Where the segment from `a` (inside `node`) to `b` leaves the node's box."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    if dx == 0 and dy == 0:
        return a
    scale = min(
        (node.w / 2) / abs(dx) if dx else float("inf"),
        (node.h / 2) / abs(dy) if dy else float("inf"),
    )
    return (a[0] + dx * min(scale, 1.0), a[1] + dy * min(scale, 1.0))


def _svg(picture: _Picture, width: float, height: float) -> str:
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans, Verdana, Arial, sans-serif" '
        'font-size="12">',
        f"<title>{escape(picture.title)}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>'
        '<marker id="arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#2e8b3e"/></marker></defs>',
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
        f'<text x="{_PAD}" y="22" font-size="15" font-weight="bold" fill="#222">{escape(picture.title)}</text>',
    ]
    for edge in picture.edges:
        points = list(edge.points)
        source, target = picture.nodes[edge.source], picture.nodes[edge.target]
        if len(points) < 2:
            points = [(source.x, source.y), (target.x, target.y)]
        points[0] = _clip((source.x, source.y), points[1], source)
        points[-1] = _clip((target.x, target.y), points[-2], target)
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        colour = "#2e8b3e" if edge.taken else "#777"
        style = f'stroke="{colour}" stroke-width="{2.6 if edge.taken else 1.2}" fill="none"'
        dash = ' stroke-dasharray="2,3"' if edge.call else ' stroke-dasharray="5,4"' if edge.dashed else ""
        marker = "arrow-taken" if edge.taken else "arrow"
        out.append(
            f'<polyline class="edge{" taken" if edge.taken else ""}" points="{path}" {style}{dash} '
            f'marker-end="url(#{marker})" data-source="{escape(edge.source)}" data-target="{escape(edge.target)}"/>'
        )
        if edge.label:
            mx, my = _label_at(points)
            out.append(
                f'<text x="{mx + 4:.1f}" y="{my - 3:.1f}" fill="#555" font-size="11">{escape(edge.label)}</text>'
            )
    for node in picture.nodes.values():
        fill, stroke, ink = _COLOURS[node.style]
        left, top = node.x - node.w / 2, node.y - node.h / 2
        radius = node.h / 2 if node.style == "terminal" else 6
        width_attr = 2.2 if node.style in ("taken", "failed", "paused") else 1.2
        out.append(f'<g class="node {node.style}" data-node="{escape(node.name)}">')
        out.append(
            f'<rect x="{left:.1f}" y="{top:.1f}" width="{node.w:.1f}" height="{node.h:.1f}" rx="{radius:.1f}" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{width_attr}"/>'
        )
        for i, line in enumerate(node.lines):
            weight = ' font-weight="bold"' if i == 0 and node.style != "terminal" else ""
            size = ' font-size="11"' if i else ""
            y = top + _PAD / 2 + _LINE_H * (i + 0.75)
            out.append(
                f'<text x="{node.x:.1f}" y="{y:.1f}" text-anchor="middle" fill="{ink}"{weight}{size}>'
                f"{escape(line)}</text>"
            )
        if node.badge:
            out.append(
                f'<circle cx="{left:.1f}" cy="{top:.1f}" r="10" fill="{stroke}"/>'
                f'<text x="{left:.1f}" y="{top + 4:.1f}" text-anchor="middle" fill="#fff" font-size="10" '
                f'font-weight="bold">{escape(node.badge.split(" ")[0])}</text>'
            )
            if node.badge.endswith("∥"):
                out.append(
                    f'<text x="{left + node.w - 6:.1f}" y="{top + 13:.1f}" text-anchor="end" fill="{ink}" '
                    'font-size="11">∥</text>'
                )
        out.append("</g>")
    if picture.legend:
        out.append(f'<text x="{_PAD}" y="{height - 10:.0f}" fill="#444" font-size="11">{escape(picture.legend)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def draw_graph(app: CompiledWorkflow) -> str:
    """The graph as an SVG document (nodes with their agent types; ok/fail/func edges labelled)."""
    picture = _model(app)
    return _svg(picture, *_layout(picture))


def draw_run(app: CompiledWorkflow, result: RunResult) -> str:
    """The graph as an SVG document with the path `result` took highlighted (see the module docstring)."""
    picture = _model(app)
    _mark_run(picture, result)
    return _svg(picture, *_layout(picture))


def to_png(svg: str, zoom: float = 2.0) -> bytes:
    """Render an SVG document as PNG (needs the `draw` extra: `pip install "agentmap[draw]"`).

    Raises:
        ImportError: The renderer is not installed (the message says what to install).
    """
    try:
        import resvg_py
    except ImportError:
        raise ImportError('PNG needs the resvg renderer: pip install "agentmap[draw]"') from None
    return bytes(resvg_py.svg_to_bytes(svg_string=svg, zoom=zoom, background="#ffffff"))
