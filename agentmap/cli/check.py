"""`agentmap validate FILE`: every finding with file:row:column, severity, code and fix.

Exit code 0 when there are only warnings (or nothing), 4 when there are errors, 3 when the file or the
graph cannot be found or read at all (reported as an error paragraph, like `run` does).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentmap.cli._common import (
    AllowRootOption,
    ConfigOption,
    DebugOption,
    JsonOption,
    WorkflowArgument,
    load,
    split_target,
)
from agentmap.cli.render import dump_json, print_issues, set_json_output
from agentmap.errors import FILE_ERROR_CODES, AgentMapError, ErrorCode

if TYPE_CHECKING:
    from agentmap import Issue

__all__ = ["register", "validate_workflow"]


def _as_error(issue: Issue) -> AgentMapError | None:
    """The file-level error an issue stands for (so it exits 3, as `run` does), or None."""
    if issue.row is not None or issue.severity != "error":
        return None
    cls = FILE_ERROR_CODES.get(issue.code)
    return cls(issue.message, code=ErrorCode(issue.code), hint=issue.fix or None) if cls is not None else None


def validate_workflow(
    target: str | None,
    graph: str | None = None,
    *,
    json_output: bool = False,
    config: Path | None = None,
    debug: bool = False,
    allow_roots: list[Path] | None = None,
) -> int:
    """The `validate` command: returns 0 (valid, maybe with warnings) or 4 (errors)."""
    set_json_output(json_output)
    settings = load(config, debug, allow_roots)
    path, selected = split_target(target, settings)
    from agentmap import validate

    found = validate(path, graph or selected, **settings.compile_options())
    # The checks run in passes; list the findings as the user reads the file (this file's first).
    issues = sorted(found, key=lambda i: (i.file not in (None, str(path)), i.file or "", i.row or 0))
    for issue in issues:
        error = _as_error(issue)
        if error is not None:
            raise error
    errors = sum(1 for i in issues if i.severity == "error")
    warnings = len(issues) - errors
    code = 4 if errors else 0
    if json_output:
        dump_json(
            {
                "file": str(path),
                "graph": graph or selected,
                "valid": not errors,
                "exit_code": code,
                "errors": errors,
                "warnings": warnings,
                "issues": [i.model_dump() for i in issues],
            }
        )
        return code

    print_issues(issues)
    counts = f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}"
    verdict = f"{path}: {counts}" if errors else f"{path} is valid ({counts})"
    sys.stdout.write(verdict + "\n")
    return code


def register(app: typer.Typer) -> None:
    """Add `agentmap validate`."""

    @app.command("validate")
    def validate(
        target: WorkflowArgument = None,
        graph: Annotated[
            str | None,
            typer.Option("--graph", "-g", metavar="GRAPH", help="Check only this graph.", show_default=False),
        ] = None,
        json_output: JsonOption = False,
        config: ConfigOption = None,
        debug: DebugOption = False,
        allow_root: AllowRootOption = None,
    ) -> None:
        """Check a workflow file: every finding with file:row:column, severity, code and fix."""
        raise typer.Exit(
            validate_workflow(
                target, graph, json_output=json_output, config=config, debug=debug, allow_roots=allow_root
            )
        )
