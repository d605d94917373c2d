"""The typer app: its commands, exit codes and error handling.

Each command lives in its own module with a `register(app)` function; `COMMANDS` lists them in help
order. To add `agentmap logs`, write `agentmap/cli/logs.py`:

```python
def register(app: typer.Typer) -> None:
    @app.command("logs")
    def logs(...) -> None: ...          # import what it needs inside the function
```

and add `"agentmap.cli.logs": ("logs",)` to `COMMANDS`. A command group (`agentmap eval run`) registers a
sub-app: `group = typer.Typer(); app.add_typer(group, name="eval")`. Modules must import nothing heavy
at module level (no runtime, LangGraph or pydantic-settings), so `--help` stays fast.

Errors: a command raises `AgentMapError` (or `typer.Exit(code)`); `run_cli` renders it as one
paragraph on stderr (a traceback only with `--debug`) and returns its class's `exit_code`.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from agentmap import __version__
from agentmap.errors import AgentMapError

__all__ = ["COMMANDS", "EXIT_CODES", "build_app", "run_cli"]

COMMANDS: dict[str, tuple[str, ...]] = {
    "agentmap.cli.run": ("run",),
    "agentmap.cli.check": ("validate",),
    "agentmap.cli.show": ("inspect", "export"),
    "agentmap.cli.project": ("init", "scaffold"),
    "agentmap.cli.logs": ("logs",),
    "agentmap.cli.chat": ("chat", "ask"),
    "agentmap.cli.evaluation": ("eval",),
    "agentmap.cli.resume": ("resume",),
    "agentmap.cli.threads": ("threads",),
    "agentmap.cli.diff": ("diff",),
    "agentmap.cli.serve": ("serve",),
    "agentmap.cli.mcp": ("mcp",),
    "agentmap.cli.studio": ("studio",),
    "agentmap.cli.batch": ("batch",),
}
"""The modules whose `register(app)` adds commands, in help order, and the names each adds (a group's name
for a group): a command imports only its own module."""

EXIT_CODES: dict[int, str] = {
    0: "success",
    1: (
        "the workflow ran and its success policy failed (batch: some rows failed; eval: a run failed or got worse; "
        "diff: a waiting thread needs a migration map)"
    ),
    2: "usage or configuration error",
    3: "workflow file, state file or graph not found (or not a workflow file)",
    4: "validation errors",
    5: "an agent or runtime error",
    6: "the run's budget (--budget) was reached",
    7: "agentmap diff: moving a waiting thread would be unsafe",
    130: "interrupted (Ctrl-C)",
    143: "stopped by SIGTERM (a run with a thread is saved: agentmap resume THREAD)",
}
"""Every exit code of the command line and what it means; `agentmap --help`, the README and csv_specs/cli.md list
them (tests/cli/test_cli_docs_agree.py checks), and each error class's `exit_code` is one of them."""

_HELP = "Turn a spreadsheet into a running agent workflow on LangGraph.\n\n\b\nExit codes:\n" + "\n".join(
    f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES.items()
)  # `\b`: click keeps the paragraph's lines as written


EXAMPLES: dict[str, tuple[str, ...]] = {
    "run": (
        'agentmap run graphs/hello_world.csv --state \'{"name": "Ada"}\'',
        "agentmap run graphs/branching.csv --state-file graphs/branching.state.json --json",
    ),
    "validate": ("agentmap validate graphs/branching.csv", "agentmap validate graphs/trip_planner.csv --json"),
    "inspect": ("agentmap inspect graphs/subgraph.csv",),
    "export": (
        "agentmap export graphs/branching.csv --format svg -o branching.svg",
        "agentmap export graphs/parallel.csv --format mermaid",
        "agentmap export graphs/branching.csv --format python -o branching.py",
    ),
    "init": ("agentmap init my_project",),
    "scaffold": ("agentmap scaffold graphs/custom_router.csv",),
    "logs": (
        "agentmap run graphs/task_assistant.csv --state-file graphs/task_assistant.state.json",
        "agentmap logs -n 5",
    ),
    "chat": ("agentmap chat graphs/llm_offline.csv",),
    "ask": ("agentmap ask 'please reverse the text hello world' graphs/llm_offline.csv",),
    "resume": (
        "agentmap run graphs/approval.csv --state-file graphs/approval.state.json --thread r1",
        "agentmap resume r1 yes",
    ),
    "threads": ("agentmap threads",),
    "threads show": ("agentmap threads show r1",),
    "diff": ("agentmap diff graphs/approval.csv graphs/approval.csv",),
    "serve": (
        "agentmap serve graphs/ --port 8123",
        "agentmap serve graphs/ --checkpoint postgresql://app:secret@db/agentmap   # needs that PostgreSQL server",
    ),
    "studio": ("agentmap studio graphs/branching.csv",),
    "mcp": ("agentmap mcp graphs/", "agentmap mcp graphs/approval.csv --checkpoint runs.db"),
    "batch": (
        "agentmap batch graphs/batch_example.csv --input graphs/data/refunds.csv --output results.csv"
        " --id-column ticket_id",
    ),
    "batch status": ("agentmap batch status results.csv",),
    "eval run": ("agentmap eval run graphs/data/scenarios.csv --workflow graphs/llm_offline.csv --out logs",),
    "eval score": ("agentmap eval score logs --report report.html",),
    "eval diff": ("agentmap eval diff logs logs --junit junit.xml",),
}
"""What each command's help ends with, run from the repository's root (a test runs every one, in this order); an
example that needs a server other than AgentMap's says so in a comment (`# needs that PostgreSQL server`)."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentmap {__version__}")
        raise typer.Exit()


def build_app(only: str | None = None) -> typer.Typer:
    """A new typer app with every command of `COMMANDS` registered (with `only`, a command's name: those of
    its module, when one adds it)."""
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

    modules = [module for module, names in COMMANDS.items() if only in names] or COMMANDS
    for module in modules:
        importlib.import_module(module).register(app)
    return app


def run_cli(args: Sequence[str]) -> int:
    """Run the typer app on `args`; render errors; return the exit code. AgentMap's loggers are as they were
    afterwards (a command gives them its handler, level and propagation)."""
    from agentmap.cli._process import loggers_kept
    from agentmap.cli.render import command_scope

    with command_scope(), loggers_kept():
        return _run_command(args)


def _run_command(args: Sequence[str]) -> int:
    from agentmap.cli.render import print_error

    debug = "--debug" in args or os.environ.get("AGENTMAP_DEBUG", "").lower() in ("1", "true", "yes")
    name = _invoked(args)
    command = typer.main.get_command(_only_invoked(build_app(name), name))
    _plain_placeholders(command)
    _coerce_on_use(command)
    _add_examples(command, ())
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


def _invoked(args: Sequence[str]) -> str | None:
    """The command `args` name, if any; None for the root's help (`agentmap -h run`) or no command."""
    name = next((arg for arg in args if not arg.startswith("-")), None)
    return None if any(arg in ("-h", "--help") for arg in args[:1]) else name


def _only_invoked(app: typer.Typer, name: str | None) -> typer.Typer:
    """`app` with only the command `name`, when it names one exactly.

    typer turns every registered function into a click command before parsing (reading each one's type
    hints): about a third of `agentmap run`'s own start-up for seventeen commands it will not run. The
    root's help, a mistyped name (whose "did you mean" needs every name) and no command keep them all.
    """
    commands = [info for info in app.registered_commands if info.name == name]
    groups = [info for info in app.registered_groups if info.name == name]
    if name is None or len(commands) + len(groups) != 1:
        return app
    app.registered_commands, app.registered_groups = commands, groups
    return app


def _plain_placeholders(command: Any) -> None:
    """Help written as commands are typed: `resume THREAD [ANSWER]`, `--durability [sync|async|exit]`.

    typer's own help shows Python types (`<str>`, `<list[Path]>`) and braces required arguments; each
    option shows its `metavar` instead (or its choices, or a word for its type), and an argument its name.
    """
    for sub in getattr(command, "commands", {}).values():
        _plain_placeholders(sub)
    for param in command.params:
        described = getattr(param, "type_descriptor", None)
        if described is None or not hasattr(param, "display_type_rich"):
            continue  # another typer version: its own help
        if param.param_type_name == "argument":
            param.display_type_rich = lambda ctx: ""
            param.get_usage_pieces = functools.partial(_usage_piece, param)
        else:
            param.display_type_rich = functools.partial(_placeholder, param.metavar or _type_word(described))


def _coerce_on_use(command: Any) -> None:
    """Build a parameter's converter only for a value given on the command line.

    typer builds one (a pydantic TypeAdapter, a few milliseconds each) for every parameter of the invoked
    command, even those left at `None`, which it passes through unconverted: most of `run`'s sixteen.
    """
    for sub in getattr(command, "commands", {}).values():
        _coerce_on_use(sub)
    for param in command.params:
        _on_use(param)
    help_option = getattr(command, "get_help_option", None)  # --help, made when the command line is parsed
    if help_option is not None:
        command.get_help_option = lambda ctx: _on_use(help_option(ctx))


def _on_use(param: Any) -> Any:
    if getattr(param, "_runtime_param", False) is None and hasattr(param, "get_runtime_param"):
        param._runtime_param = _OnUse(param)  # another typer version: converters as it builds them
    return param


class _OnUse:
    """Stands for a typer parameter's converter until a value other than `None` comes (see `_coerce_on_use`)."""

    def __init__(self, param: Any) -> None:
        self.param = param

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:  # what typer's converters return for a missing value
            return () if param.multiple or param.nargs == -1 else None
        self.param._runtime_param = None
        return self.param.get_runtime_param().coerce(value, param=param, ctx=ctx)


def _add_examples(command: Any, path: tuple[str, ...]) -> None:
    """End each command's help with its `EXAMPLES`, kept as written (click's `\\b` stops the rewrapping)."""
    examples = EXAMPLES.get(" ".join(path))
    if examples:
        command.epilog = "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in examples)
    for name, sub in getattr(command, "commands", {}).items():
        _add_examples(sub, (*path, name))


def _placeholder(word: str, ctx: object) -> str:
    return word


def _usage_piece(param: Any, ctx: object) -> list[str]:
    name = param.metavar or param.name.upper()
    if not param.required and not name.startswith("["):
        name = f"[{name}]"
    if param.nargs != 1 and not name.endswith("..."):
        name += "..."
    return [name]


def _type_word(described: Any) -> str:
    if described.is_choice:
        return "[" + "|".join(str(getattr(choice, "value", choice)) for choice in described.choices or ()) + "]"
    if described.is_path:
        return {"file": "FILE", "dir": "DIR"}.get(described.path_type, "PATH")
    annotation = described.annotation
    element = getattr(annotation, "__args__", (annotation,))[0] if described.is_list else annotation
    return {int: "N", float: "NUMBER", Path: "PATH"}.get(element, "TEXT")


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 2
