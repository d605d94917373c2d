"""`agentmap studio [FILE|FOLDER]`: edit a workflow in the browser as a spreadsheet, checked on every change.

Listens on 127.0.0.1 (port 8124) and prints the page's address, which ends with the token every request must
carry (a new one at each start, unless `--token-env` names a variable holding one). Listening on another host
needs an API key, read from the environment variable `--api-key-env` names, as for `agentmap serve`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from agentmap.cli._common import (
    AllowHostOption,
    ApiKeyEnvOption,
    ConfigOption,
    DebugOption,
    HostOption,
    PortOption,
    api_key_from,
    load,
)
from agentmap.errors import ConfigError, ErrorCode

__all__ = ["register", "studio_command"]


def studio_command(
    target: str | None,
    *,
    host: str = "127.0.0.1",
    port: int = 8124,
    api_key_env: str | None = None,
    token_env: str | None = None,
    allowed_hosts: list[str] | None = None,
    max_body: int = 5_242_880,
    config: Path | None = None,
    debug: bool = False,
    auth: str | None = None,
) -> None:
    """Check the options, then serve the studio until Ctrl-C, printing its address once it listens.

    Raises:
        ConfigError: A missing API key (variable unset, or needed for a non-loopback host), a `--token-env`
            variable unset, a `--max-body` below 1, or the `serve` extra not installed.
        WorkflowFileError: The file or folder does not exist.
    """
    settings = load(config, debug)
    chosen = target or settings.workflow or "."
    api_key = api_key_from(api_key_env, "the studio")
    token = _token(token_env)
    if max_body < 1:
        raise ConfigError(f"--max-body must be at least 1 byte, not {max_body}", code=ErrorCode.USAGE)
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
        target=Path(file),
        api_key=api_key,
        options=CompileOptions(**settings.compile_options()),
        graph=graph or None,
        allowed_hosts=tuple(allowed_hosts or ()),
        max_body=max_body,
        auth=auth or settings.serve.auth,
        **({"token": token} if token else {}),  # else a new one for this start
    )

    def started(url: str) -> None:
        typer.echo(f"AgentMap studio: {url}  (Ctrl-C stops it)")

    studio(studio_config, host=host, port=port, log_level="debug" if debug else "warning", started=started)


def _token(env: str | None) -> str | None:
    """The token the variable `--token-env` names (None without the option).

    Raises:
        ConfigError: The variable is unset or empty.
    """
    if env is None:
        return None

    token = os.environ.get(env, "").strip()
    if not token:
        raise ConfigError(
            f"--token-env names {env}, which is not set (or empty)",
            code=ErrorCode.USAGE,
            hint=f"export {env}=<a long random token> before starting the studio, or leave --token-env out for a "
            "new token at each start",
        )
    return token


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
        port: PortOption = 8124,
        api_key_env: ApiKeyEnvOption = None,
        token_env: Annotated[
            str | None,
            typer.Option(
                "--token-env",
                metavar="VAR",
                help="Environment variable holding the token every request must carry (X-AgentMap-Token), for "
                "scripts; without it a new token is made at each start and printed in the page's address.",
                show_default=False,
            ),
        ] = None,
        allow_host: AllowHostOption = None,
        max_body: Annotated[
            int, typer.Option("--max-body", help="Largest request body accepted, in bytes (5 MiB).")
        ] = 5_242_880,
        auth: Annotated[
            str | None,
            typer.Option(
                "--auth",
                metavar="FILE.py:NAME",
                help="The auth handlers runs from the page go through, as `agentmap serve --auth` (the page sends "
                "the Authorization value entered in it).",
                show_default=False,
            ),
        ] = None,
        config: ConfigOption = None,
        debug: DebugOption = False,
    ) -> None:
        """Edit a workflow in the browser as a spreadsheet: findings on their cells, the graph drawn, saved in place."""
        studio_command(
            target,
            host=host,
            port=port,
            api_key_env=api_key_env,
            token_env=token_env,
            allowed_hosts=allow_host,
            max_body=max_body,
            config=config,
            debug=debug,
            auth=auth,
        )
