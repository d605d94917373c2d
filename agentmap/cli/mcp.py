"""`agentmap mcp [FILE|FOLDER ...]`: every graph an MCP tool, served over stdin/stdout.

An MCP client (a desktop assistant, an editor, another agent) starts this command itself; stdout carries only
the protocol, logs go to stderr. Paused runs are kept in `--checkpoint` (memory unless given).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentmap.cli._common import ConfigOption, DebugOption, load
from agentmap.errors import ConfigError, ErrorCode

__all__ = ["mcp_command", "register"]


def mcp_command(
    targets: list[str], *, checkpoint: str = "memory", config: Path | None = None, debug: bool = False
) -> None:
    """Compile every graph of `targets` (or the configured `workflow`) and serve them until stdin closes.

    Raises:
        ConfigError: No workflow, a bad checkpoint, or the `mcp-server` extra not installed.
    """
    settings = load(config, debug)
    if not targets:
        if not settings.workflow:
            raise ConfigError(
                "no workflow to offer as MCP tools",
                code=ErrorCode.NO_WORKFLOW,
                hint="name files or folders, e.g. `agentmap mcp graphs/`, or set `workflow:` in agentmap.yaml",
            )
        targets = [settings.workflow]
    from agentmap import CompileOptions
    from agentmap._cli_api import serve_stdio

    serve_stdio(targets, checkpoint=checkpoint, options=CompileOptions.from_settings(settings))


def register(app: typer.Typer) -> None:
    """Add `agentmap mcp`."""

    @app.command("mcp")
    def mcp(
        targets: Annotated[
            list[str] | None,
            typer.Argument(
                metavar="[FILE[::GRAPH]|FOLDER]...",
                help="Workflow files and folders, one tool per graph (default: `workflow` from the config file).",
                show_default=False,
            ),
        ] = None,
        checkpoint: Annotated[
            str,
            typer.Option(
                "--checkpoint",
                metavar="memory|FILE",
                help="Where paused runs are kept: `memory` (lost when the client stops the server) or a SQLite "
                "file (a paused run is answered after a restart).",
            ),
        ] = "memory",
        config: ConfigOption = None,
        debug: DebugOption = False,
    ) -> None:
        """Serve workflows as MCP tools over stdio (for an MCP client's server configuration)."""
        mcp_command(list(targets or ()), checkpoint=checkpoint, config=config, debug=debug)
