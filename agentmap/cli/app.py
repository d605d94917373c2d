"""The typer app: its commands, exit codes and error handling.

Each command lives in its own module with a `register(app)` function; `COMMANDS` lists them in help
order. To add `agentmap logs`, write `agentmap/cli/logs.py`:

```python
def register(app: typer.Typer) -> None:
    @app.command("logs")
    def logs(...) -> None: ...          # import what it needs inside the function
```

and add `"agentmap.cli.logs"` to `COMMANDS`. A command group (`agentmap eval run`) registers a
sub-app: `group = typer.Typer(); app.add_typer(group, name="eval")`. Modules must import nothing heavy
at module level (no runtime, LangGraph or pydantic-settings), so `--help` stays fast.

Errors: a command raises `AgentMapError` (or `typer.Exit(code)`); `run_cli` renders it as one
paragraph on stderr (a traceback only with `--debug`) and returns its class's `exit_code`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence

import typer

from agentmap.errors import AgentMapError

__all__ = ["COMMANDS", "EXIT_CODES", "build_app", "run_cli"]

COMMANDS: tuple[str, ...] = (
    "agentmap.cli.run",
    "agentmap.cli.check",
    "agentmap.cli.show",
    "agentmap.cli.project",
    "agentmap.cli.logs",
    "agentmap.cli.chat",
    "agentmap.cli.evaluation",
    "agentmap.cli.resume",
    "agentmap.cli.threads",
    "agentmap.cli.serve",
    "agentmap.cli.mcp",
    "agentmap.cli.studio",
    "agentmap.cli.batch",
)
"""The modules whose `register(app)` adds commands, in help order."""

EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "the workflow ran and its success policy failed",
    2: "usage or configuration error",
    3: "workflow file, state file or graph not found (or not a workflow file)",
    4: "validation errors",
    5: "an agent or runtime error",
    130: "interrupted (Ctrl-C)",
    143: "stopped by SIGTERM (the run is saved: agentmap resume THREAD)",
}

_HELP = """Turn a spreadsheet into a running agent workflow on LangGraph.

Exit codes: 0 ok, 1 the workflow ran and its success policy failed, 2 usage or configuration,
3 file or graph not found, 4 validation errors, 5 agent or runtime error, 130 interrupted (Ctrl-C),
143 stopped by SIGTERM.
"""


def _version(value: bool) -> None:
    if value:
        from agentmap import __version__

        typer.echo(f"agentmap {__version__}")
        raise typer.Exit()


def build_app() -> typer.Typer:
    """A new typer app with every command of `COMMANDS` registered."""
    app = typer.Typer(
        name="agentmap",
        help=_HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # click's plain help: importing rich's help formatter would double --help's time
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ) -> None:
        """Turn a spreadsheet into a running agent workflow on LangGraph."""

    for name in COMMANDS:
        importlib.import_module(name).register(app)
    return app


def run_cli(args: Sequence[str]) -> int:
    """Run the typer app on `args`; render errors; return the exit code."""
    from agentmap.cli.render import print_error

    debug = "--debug" in args or os.environ.get("AGENTMAP_DEBUG", "").lower() in ("1", "true", "yes")
    command = typer.main.get_command(build_app())
    try:
        command.main(args=list(args), prog_name="agentmap", standalone_mode=True)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except AgentMapError as err:
        print_error(err, debug=debug)
        return err.exit_code
    except Exception as exc:
        print_error(exc, debug=debug)
        return 5
    return 0


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 2
