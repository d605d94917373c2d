"""The other forms of a picture: Graphviz DOT text, a file on disk, Jupyter's mime bundle of a run."""

from __future__ import annotations

import contextlib
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError, ErrorCode
from agentmap.observe.draw import _COLOURS, _duration, _mark_run, _model, draw_run, to_png

if TYPE_CHECKING:
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["run_bundle", "save", "to_dot"]


def to_dot(app: CompiledWorkflow, result: RunResult | None = None) -> str:
    """The graph in Graphviz DOT (for `dot -Tsvg` where Graphviz is installed)."""
    picture = _model(app)
    if result is not None:
        _mark_run(picture, result)

    def quote(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"digraph {quote(app.name)} {{", "  rankdir=TB;", '  node [shape=box, style="rounded,filled"];']
    for node in picture.nodes.values():
        fill, stroke, _ = _COLOURS[node.style]
        shape = ", shape=oval" if node.style == "terminal" else ""
        label = "\\n".join(line.replace('"', '\\"') for line in node.lines)
        lines.append(f'  {quote(node.name)} [label="{label}", fillcolor="{fill}", color="{stroke}"{shape}];')
    for edge in picture.edges:
        attrs = [f"label={quote(edge.label)}"] if edge.label else []
        if edge.dashed:
            attrs.append("style=dashed")
        if edge.taken:
            attrs.append('color="#2e8b3e", penwidth=2.5')
        lines.append(
            f"  {quote(edge.source)} -> {quote(edge.target)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def save(svg: str, path: str | Path | None) -> str:
    """Write `svg` to `path` (as PNG when the name ends in `.png`); returns `svg`.

    Raises:
        ConfigError: The file cannot be written (the message names it).
        ImportError: A PNG was asked for without the renderer installed.
    """
    if path is None:
        return svg

    target = Path(path)
    try:
        if target.suffix.lower() == ".png":
            target.write_bytes(to_png(svg))
        else:
            target.write_text(svg, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot write the picture to {target}: {exc.strerror or exc}",
            code=ErrorCode.CANNOT_WRITE,
            hint="name a file in a folder that exists and can be written",
        ) from None
    return svg


def run_bundle(result: RunResult) -> dict[str, Any]:
    """Jupyter's mime bundle of a run: its path as SVG, the summary as an HTML table, and text."""
    rows = "".join(
        f"<tr><td>{escape(e.name)}</td><td>{'' if e.success is None else '✓' if e.success else '✗'}</td>"
        f"<td>{'' if e.duration is None else _duration(e.duration)}</td><td>{escape(e.error or '')}</td></tr>"
        for e in result.summary
    )
    table = f"<table><tr><th>node</th><th>ok</th><th>duration</th><th>error</th></tr>{rows}</table>"
    with contextlib.suppress(ImportError, KeyError):  # the summary as a DataFrame when pandas is there
        table = result.summary_frame()[["name", "success", "duration", "error"]].to_html(index=False)
    bundle: dict[str, Any] = {
        "text/html": table,
        "text/plain": f"RunResult(success={result.success}, nodes={[e.name for e in result.summary]})",
    }
    if result.workflow is not None:
        bundle["image/svg+xml"] = draw_run(result.workflow, result)
        bundle["text/vnd.mermaid"] = result.workflow.draw_mermaid()
    return bundle
