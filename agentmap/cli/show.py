"""`agentmap inspect` (graphs and nodes as tables, or the known agent types) and `agentmap export`
(SVG/PNG pictures and Mermaid/DOT text drawn offline, or the validated specification as JSON).
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentmap.cli._common import (
    AllowRootOption,
    ConfigOption,
    DebugOption,
    WorkflowArgument,
    cannot_write,
    ensure_writable,
    load,
    split_target,
)
from agentmap.errors import ConfigError, ErrorCode

if TYPE_CHECKING:
    from rich.table import Table

    from agentmap import GraphSpec, NodeSpec
    from agentmap._cli_api import Targets

__all__ = ["ExportFormat", "export_workflow", "inspect_workflow", "register"]


class ExportFormat(enum.StrEnum):
    """What `agentmap export` writes."""

    mermaid = "mermaid"
    json = "json"
    svg = "svg"
    png = "png"
    dot = "dot"
    python = "python"


def _targets(targets: Targets | None) -> str:
    if targets is None:
        return ""
    return "|".join(targets) if isinstance(targets, tuple) else str(targets)


def _next(node: NodeSpec) -> str:
    parts = []
    if node.edge is not None:
        parts.append(f"→ {_targets(node.edge)}")
    if node.success_next is not None:
        parts.append(f"ok → {_targets(node.success_next)}")
    if node.failure_next is not None:
        parts.append(f"fail → {_targets(node.failure_next)}")
    return "\n".join(parts) or "(end)"


def graph_table(graph: GraphSpec) -> Table:
    """One graph's nodes: agent type, inputs, outputs, next nodes and row."""
    from rich.markup import escape
    from rich.table import Table

    title = f"[bold]{escape(graph.name)}[/] — {len(graph.nodes)} nodes, entry {escape(graph.entry)}"
    table = Table(title=title, title_justify="left")
    for column, justify in (
        ("row", "right"),
        ("node", "left"),
        ("agent type", "left"),
        ("inputs", "left"),
        ("outputs", "left"),
        ("next", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for node in graph.nodes:
        table.add_row(
            str(node.row or ""),
            escape(node.name),
            escape(node.agent_type or "default"),
            escape(", ".join(node.inputs)),
            escape(", ".join(node.outputs)),
            escape(_next(node)),
        )
    return table


def agent_types_table() -> Table:
    """Every known agent type and the class behind it."""
    from rich.table import Table

    from agentmap import registry

    table = Table(
        title="Agent types (AgentType column; case-insensitive, an Agent suffix is optional)", title_justify="left"
    )
    table.add_column("type")
    table.add_column("class")
    table.add_column("description")
    for name in registry.names():
        try:
            cls = registry.get(name)
        except ImportError as exc:  # a built-in type whose optional extra is missing
            table.add_row(name, "", f"unavailable: {exc}")
            continue
        if cls is None:
            continue
        doc = (cls.__doc__ or "").strip().splitlines()
        table.add_row(name, f"{cls.__module__}.{cls.__qualname__}", doc[0] if doc else "")
    return table


def inspect_workflow(
    target: str | None,
    *,
    agents: bool = False,
    config: Path | None = None,
    debug: bool = False,
    allow_roots: list[Path] | None = None,
) -> int:
    """The `inspect` command."""
    from agentmap.cli.render import console

    settings = load(config, debug, allow_roots)
    out = console()
    if target is None and (agents or not settings.workflow):
        out.print(agent_types_table())
        return 0
    path, graph = split_target(target, settings)
    from agentmap import load as load_workflow
    from agentmap._cli_api import select_graph

    workflow = load_workflow(path, **settings.compile_options())
    graphs = [select_graph(workflow, graph, source=str(path))] if graph else list(workflow.graphs)
    out.print(f"[bold]{path}[/]: {len(workflow.graphs)} graph{'s' if len(workflow.graphs) != 1 else ''}")
    for spec in graphs:
        out.print(graph_table(spec))
    if agents:
        out.print(agent_types_table())
    return 0


def export_workflow(
    target: str | None,
    fmt: ExportFormat,
    *,
    output: Path | None = None,
    config: Path | None = None,
    debug: bool = False,
    allow_roots: list[Path] | None = None,
) -> int:
    """The `export` command."""
    settings = load(config, debug, allow_roots)
    path, graph = split_target(target, settings)
    text: str
    if fmt in (ExportFormat.svg, ExportFormat.png, ExportFormat.dot):
        return _export_picture(path, graph, fmt, output, settings)
    if fmt in (ExportFormat.mermaid, ExportFormat.python):
        from agentmap import compile
        from agentmap._cli_api import eject

        app = compile(path, graph, **settings.compile_options())
        text = app.draw_mermaid() if fmt is ExportFormat.mermaid else eject(app, settings.execution.success_policy)
    else:
        from agentmap import load as load_workflow
        from agentmap._cli_api import select_graph

        workflow = load_workflow(path, **settings.compile_options())
        data: Any = workflow if graph is None else select_graph(workflow, graph, source=str(path))
        text = data.model_dump_json(indent=2, exclude_none=True) + "\n"
    return _write(text if text.endswith("\n") else text + "\n", output)


def _write(data: str | bytes, output: Path | None) -> int:
    """Write the export to stdout, or to `output` (its folder made when missing) and say so on stderr."""
    if output is None:
        sys.stdout.write(str(data))
        return 0
    ensure_writable(output, "the export")
    try:
        if isinstance(data, bytes):
            output.write_bytes(data)
        else:
            output.write_text(data, encoding="utf-8")
    except OSError as exc:
        raise cannot_write(output, "the export", exc) from None
    sys.stderr.write(f"wrote {output}\n")
    return 0


def _export_picture(path: Path, graph: str | None, fmt: ExportFormat, output: Path | None, settings: Any) -> int:
    """`export --format svg|png|dot`: the graph drawn offline."""
    if fmt is ExportFormat.png:
        from agentmap.cli._observe import check_picture

        if output is None:
            raise ConfigError(
                "a PNG is written to a file, not the terminal", code=ErrorCode.USAGE, hint="add -o graph.png"
            )
        check_picture(output.with_suffix(".png"))
    from agentmap import compile
    from agentmap._cli_api import picture

    return _write(picture(compile(path, graph, **settings.compile_options()), fmt.value), output)


def register(app: typer.Typer) -> None:
    """Add `agentmap inspect` and `agentmap export`."""

    @app.command("inspect")
    def inspect_(
        target: Annotated[
            str | None,
            typer.Argument(
                metavar="FILE[::GRAPH]", help="Workflow file (without it: the known agent types).", show_default=False
            ),
        ] = None,
        agents: Annotated[bool, typer.Option("--agents", help="List the known agent types.")] = False,
        config: ConfigOption = None,
        debug: DebugOption = False,
        allow_root: AllowRootOption = None,
    ) -> None:
        """Show graphs, nodes, agent types, edges, inputs and outputs as tables."""
        raise typer.Exit(inspect_workflow(target, agents=agents, config=config, debug=debug, allow_roots=allow_root))

    @app.command("export")
    def export(
        target: WorkflowArgument = None,
        fmt: Annotated[
            ExportFormat,
            typer.Option(
                "--format",
                "-f",
                help="mermaid: the diagram as text; svg/png: the graph drawn (offline); dot: Graphviz text; "
                "json: the validated specification; python: a standalone LangGraph module.",
            ),
        ] = ExportFormat.mermaid,
        output: Annotated[
            Path | None,
            typer.Option(
                "--output", "-o", help="Write to this file instead of stdout.", show_default=False, dir_okay=False
            ),
        ] = None,
        config: ConfigOption = None,
        debug: DebugOption = False,
        allow_root: AllowRootOption = None,
    ) -> None:
        """Export a graph as a picture (SVG, PNG), a Mermaid or DOT diagram, a standalone LangGraph module (python),
        or a workflow's specification as JSON."""
        raise typer.Exit(
            export_workflow(target, fmt, output=output, config=config, debug=debug, allow_roots=allow_root)
        )
