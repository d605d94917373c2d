"""`agentmap studio [FILE|FOLDER]`: edit a workflow in the browser as a spreadsheet, checked on every change.

Listens on 127.0.0.1 (port 8124) and prints the page's address. Listening on another host needs an API key,
read from the environment variable `--api-key-env` names, as for `agentmap serve`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentmap.cli._common import ApiKeyEnvOption, ConfigOption, DebugOption, HostOption, api_key_from, load
from agentmap.errors import ConfigError, ErrorCode

__all__ = ["register", "studio_command"]


def studio_command(
    target: str | None,
    *,
    host: str = "127.0.0.1",
    port: int = 8124,
    api_key_env: str | None = None,
    config: Path | None = None,
    debug: bool = False,
) -> None:
    """Check the options, then serve the studio until Ctrl-C, printing its address once it listens.

    Raises:
        ConfigError: A missing API key (variable unset, or needed for a non-loopback host), or the `serve`
            extra not installed.
        WorkflowFileError: The file or folder does not exist.
    """
    settings = load(config, debug)
    chosen = target or settings.workflow or "."
    api_key = api_key_from(api_key_env, "the studio")
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise ConfigError(
            "agentmap studio needs FastAPI and uvicorn, which are not installed",
            code=ErrorCode.MISSING_EXTRA,
            hint='pip install "agentmap[serve]"',
        ) from None
    from agentmap import CompileOptions
    from agentmap._cli_api import StudioConfig, require_key, studio

    require_key(host, api_key)
    file, _, graph = chosen.partition("::")
    studio_config = StudioConfig(
        target=Path(file), api_key=api_key, options=CompileOptions(**settings.compile_options()), graph=graph or None
    )

    def started(url: str) -> None:
        typer.echo(f"AgentMap studio: {url}  (Ctrl-C stops it)")

    studio(studio_config, host=host, port=port, log_level="debug" if debug else "warning", started=started)


def register(app: typer.Typer) -> None:
    """Add `agentmap studio`."""

    @app.command("studio")
    def studio(
        target: Annotated[
            str | None,
            typer.Argument(
                metavar="[FILE|FOLDER]",
                help="The workflow file to edit, or a folder of them (default: `workflow` from the config file, "
                "else the current folder).",
                show_default=False,
            ),
        ] = None,
        host: HostOption = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", "-p", help="Port to listen on.")] = 8124,
        api_key_env: ApiKeyEnvOption = None,
        config: ConfigOption = None,
        debug: DebugOption = False,
    ) -> None:
        """Edit a workflow in the browser as a spreadsheet: findings on their cells, the graph drawn, saved in place."""
        studio_command(target, host=host, port=port, api_key_env=api_key_env, config=config, debug=debug)
