"""`agentmap init [DIR]` (a starter project) and `agentmap scaffold FILE` (stubs for what a workflow
names but nobody wrote yet). Neither overwrites an existing file unless `--force`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
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
    from agentmap import NodeSpec, Workflow

__all__ = ["init_project", "register", "scaffold_workflow"]


def _write(path: Path, content: str, force: bool, base: Path) -> bool:
    """Write `content` unless `path` exists (and not `force`); say what happened. True if written."""
    shown = path.relative_to(base) if path.is_relative_to(base) else path
    if path.exists() and not force:
        sys.stdout.write(f"  kept    {shown} (it exists; --force overwrites it)\n")
        return False
    ensure_writable(path, "the file")
    try:
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise cannot_write(path, "the file", exc) from None
    sys.stdout.write(f"  wrote   {shown}\n")
    return True


def init_project(directory: Path, *, force: bool = False) -> int:
    """The `init` command: write the starter project into `directory`."""
    from agentmap.cli._templates import STARTER_FILES

    if directory.exists() and not directory.is_dir():
        raise ConfigError(
            f"{directory} is a file, not a folder",
            code=ErrorCode.NOT_A_FOLDER,
            hint="name a new or existing folder: agentmap init my_project",
        )
    ensure_writable(directory, "the project folder", folder=True)
    sys.stdout.write(f"Starter project in {directory}:\n")
    for relative, content in STARTER_FILES.items():
        _write(directory / relative, content, force, directory)
    here = "" if directory.resolve() == Path.cwd().resolve() else f"cd {directory} && "
    sys.stdout.write(f'Next: {here}agentmap run   (or: agentmap run --state \'{{"name": "Ada"}}\')\n')
    return 0


@dataclass
class _Need:
    """Something a workflow names that does not exist yet, and the nodes that name it."""

    written: str
    nodes: list[NodeSpec] = field(default_factory=list)
    targets: set[str] = field(default_factory=set)


@dataclass
class _Missing:
    """Unknown agent types by normalised key, missing routers by name, references left to the user."""

    agents: dict[str, _Need] = field(default_factory=dict)
    routers: dict[str, _Need] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def _identifier(text: str) -> str:
    cleaned = re.sub(r"\W+", "_", text).strip("_") or "custom"
    return cleaned if not cleaned[0].isdigit() else f"t_{cleaned}"


def _class_name(key: str) -> str:
    return "".join(part.title() for part in _identifier(key).split("_") if part) + "Agent"


def _find_missing(workflow: Workflow, graph: str | None, options: dict[str, Any]) -> _Missing:
    """What `validate` reports as unknown: agent types (by key) and `func:` routers (by name)."""
    from agentmap import validate
    from agentmap._cli_api import FuncRef, normalize_type, select_graph

    graphs = [select_graph(workflow, graph, source=workflow.file)] if graph else list(workflow.graphs)
    missing = _Missing()
    for spec in graphs:
        unknown = {(i.node, i.code, i.column) for i in validate(workflow, spec.name, **options)}
        for node in spec.nodes:
            if (node.name, "unknown-agent-type", spec.column("AgentType")) in unknown:
                written = node.agent_type or "default"
                missing.agents.setdefault(normalize_type(written), _Need(written)).nodes.append(node)
            for column, targets in node.next_cells():
                codes = ("unknown-function", "function-not-allowed")
                if not isinstance(targets, FuncRef) or not any(
                    (node.name, code, spec.column(column)) in unknown for code in codes
                ):
                    continue
                if targets.module or not targets.name.isidentifier():
                    missing.skipped.append(f"{targets} (node {node.name!r}): define it in its module by hand")
                    continue
                need = missing.routers.setdefault(targets.name, _Need(targets.name))
                need.nodes.append(node)
                need.targets |= node.successors() or {n.name for n in spec.nodes if n.name != node.name}
    return missing


def _agent_stub(key: str, need: _Need, file: Path) -> str:
    from agentmap.cli._templates import AGENT_STUB

    inputs = sorted({f for n in need.nodes for f in n.inputs})
    outputs = list(dict.fromkeys(o for n in need.nodes for o in n.outputs))
    if len(outputs) > 1:
        body = "return {" + ", ".join(f'{o!r}: f"{{self.name}}: {o}"' for o in outputs) + "}"
    else:
        body = 'return f"{self.name} received {inputs}"'
    description = next((n.description for n in need.nodes if n.description), f"The {need.written} agent type.")
    return AGENT_STUB.format(
        type=need.written,
        file=file.name,
        nodes=", ".join(sorted({n.name for n in need.nodes})),
        cls=_class_name(key),
        description=description.replace('"""', "'''"),
        inputs=", ".join(inputs) or "none",
        outputs=" | ".join(outputs) or "output",
        body=body,
    )


def _router_stub(need: _Need, file: Path) -> str:
    from agentmap.cli._templates import ROUTER_STUB

    targets = sorted(need.targets)
    candidates = f"Nodes it may want: {', '.join(targets)}." if targets else "Return node names of this graph."
    return ROUTER_STUB.format(
        name=need.written, file=file.name, candidates=candidates, nodes=", ".join(sorted({n.name for n in need.nodes}))
    )


def scaffold_workflow(
    target: str | None,
    *,
    force: bool = False,
    config: Path | None = None,
    debug: bool = False,
    allow_roots: list[Path] | None = None,
) -> int:
    """The `scaffold` command: stubs for unknown agent types and missing `func:` routers."""
    settings = load(config, debug, allow_roots)
    path, graph = split_target(target, settings)
    from agentmap import load as load_workflow

    workflow = load_workflow(path, strict=False)
    missing = _find_missing(workflow, graph, settings.compile_options())
    agents, routers = missing.agents, missing.routers
    agents_dir = settings.paths.custom_agents or path.parent / "custom_agents"
    functions_dir = settings.paths.functions or path.parent / "functions"
    if not agents and not routers:
        sys.stdout.write(f"Nothing to scaffold: every agent type and func: router in {path} is known.\n")
    base = Path.cwd()
    for key, need in sorted(agents.items()):
        sys.stdout.write(f"agent type {need.written!r} -> class {_class_name(key)}\n")
        _write(agents_dir / f"{_identifier(key)}.py", _agent_stub(key, need, path), force, base)
    for name, need in sorted(routers.items()):
        sys.stdout.write(f"router func:{name}\n")
        _write(functions_dir / f"{name}.py", _router_stub(need, path), force, base)
    for line in missing.skipped:
        sys.stdout.write(f"  skipped {line}\n")
    if agents or routers:
        sys.stdout.write(f"Next: fill in the TODOs, then `agentmap validate {path}`\n")
    return 0


def register(app: typer.Typer) -> None:
    """Add `agentmap init` and `agentmap scaffold`."""

    @app.command("init")
    def init(
        directory: Annotated[Path, typer.Argument(metavar="DIR", help="Folder to create the project in.")] = Path("."),
        force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
    ) -> None:
        """Start a project: a workflow CSV, agentmap.yaml, an example custom agent and an example router."""
        raise typer.Exit(init_project(directory, force=force))

    @app.command("scaffold")
    def scaffold(
        target: WorkflowArgument = None,
        force: Annotated[bool, typer.Option("--force", help="Overwrite existing stub files.")] = False,
        config: ConfigOption = None,
        debug: DebugOption = False,
        allow_root: AllowRootOption = None,
    ) -> None:
        """Write documented stubs for unknown agent types and missing func: routers of a workflow."""
        raise typer.Exit(scaffold_workflow(target, force=force, config=config, debug=debug, allow_roots=allow_root))
