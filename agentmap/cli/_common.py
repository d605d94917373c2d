"""What several commands share: option types, settings and logging, the workflow target."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentmap.errors import ConfigError, ErrorCode

if TYPE_CHECKING:
    from agentmap._cli_api import MissingInputs, Problem, Settings

__all__ = [
    "AllowHostOption",
    "AllowRootOption",
    "ApiKeyEnvOption",
    "ConfigOption",
    "DebugOption",
    "HostOption",
    "JsonOption",
    "MissingInputsOption",
    "PortOption",
    "RecursionLimitOption",
    "StreamOption",
    "StrictOption",
    "WorkflowArgument",
    "api_key_from",
    "cannot_write",
    "configure_logging",
    "ensure_writable",
    "json_object",
    "json_value",
    "load",
    "missing_inputs_mode",
    "split_target",
    "value_error",
]

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="Config file (default: agentmap.yaml or agentmap.toml in the working directory, or $AGENTMAP_CONFIG).",
        show_default=False,
        dir_okay=False,
    ),
]
DebugOption = Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")]
AllowRootOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--allow-root",
        metavar="DIR",
        help="A folder, besides the workflow's own, that the workflow's paths may reach (repeatable; "
        "see csv_specs/security.md).",
        show_default=False,
        file_okay=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Write one JSON document on stdout.")]
StreamOption = Annotated[
    bool | None,
    typer.Option(
        "--stream/--no-stream",
        help="Show each LLM node's text as the model writes it (default: on when stdout is a terminal and "
        "--json is not given; with --json the text goes to stderr).",
        show_default=False,
    ),
]
BudgetOption = Annotated[
    float | None,
    typer.Option(
        "--budget",
        metavar="USD",
        help="Stop before a model call that would take the run past this many US dollars (csv_specs/llm.md).",
        show_default=False,
    ),
]
NoCacheOption = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Call the model for every request, even where an LLM node's cache holds the reply (csv_specs/llm.md).",
    ),
]


MissingInputsOption = Annotated[
    str | None,
    typer.Option(
        "--missing-inputs",
        metavar="[error|warn|ignore]",
        help="When the initial state lacks an input no node writes (and no node reading it has a Context "
        "default): error (refuse to run, exit 2; the default), warn (say so on stderr and run, the node reading "
        "None) or ignore.",
        show_default=False,
    ),
]
StrictOption = Annotated[
    bool, typer.Option("--strict", help="The same as --missing-inputs error (the default).", hidden=True)
]
_INPUT_MODES: tuple[MissingInputs, ...] = ("error", "warn", "ignore")


def missing_inputs_mode(value: str | None, strict: bool = False) -> MissingInputs:
    """`--missing-inputs`'s mode: `error` when not given (or `--strict`, the older spelling); another value than
    error, warn or ignore is a usage error."""
    if strict or value is None:
        return "error"
    for mode in _INPUT_MODES:
        if value.lower() == mode:
            return mode
    raise ConfigError(
        f"--missing-inputs must be error, warn or ignore, not {value!r}",
        code=ErrorCode.USAGE,
        hint="--missing-inputs warn runs with a warning when the initial state lacks an input",
    )


RecursionLimitOption = Annotated[
    int | None,
    typer.Option(
        "--recursion-limit",
        min=1,
        metavar="STEPS",
        help="Stop a run after this many steps (LangGraph's recursion_limit), a bound on loops. Default: ten per "
        "node of the graph, at least 50.",
        show_default=False,
    ),
]
HostOption = Annotated[str, typer.Option("--host", help="Address to listen on.")]
PortOption = Annotated[
    int, typer.Option("--port", "-p", min=0, max=65535, help="Port to listen on (0: a free one, printed at start).")
]
ApiKeyEnvOption = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        metavar="VAR",
        help="Environment variable holding the API key every request must send (needed off loopback).",
        show_default=False,
    ),
]
AllowHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-host",
        metavar="NAME",
        help="A host name requests may name besides this machine's (repeatable; *.example.com for its subdomains, "
        "* for any). Others are refused: a web page whose domain was made to point here names its own.",
        show_default=False,
    ),
]
WorkflowArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="FILE[::GRAPH]",
        help="Workflow file, with ::GRAPH when it holds several graphs (default: `workflow` from the config file).",
        show_default=False,
    ),
]

_LEVELS = {
    "TRACE": 5,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "CRITICAL": logging.CRITICAL,
}


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is now, so the live view can show log lines above itself."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


class _TraceFilter(logging.Filter):
    """Leaves agents' `log_trace` lines (written through `logger.info`) out unless the level is TRACE."""

    def __init__(self) -> None:
        super().__init__()
        self.show = False

    def filter(self, record: logging.LogRecord) -> bool:
        from agentmap import _cli_api  # imported when a line is written, not when a command starts

        return self.show or not _cli_api.is_trace(record)


def configure_logging(level: str) -> None:
    """Send the `agentmap` loggers to stderr at `level` (a name from the settings); trace lines only at TRACE.

    They go there only: not also up to the root logger, where a library's `logging.basicConfig()` would print each
    line a second time (the MCP SDK calls `logging.debug` when a client's stream closes, which installs one).
    """
    logger = logging.getLogger("agentmap")
    number = _LEVELS.get(level.upper(), logging.WARNING)
    logger.setLevel(number)
    logger.propagate = False
    handler = next((h for h in logger.handlers if isinstance(h, _StderrHandler)), None)
    if handler is None:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler.addFilter(_TraceFilter())
        logger.addHandler(handler)
    for found in handler.filters:
        if isinstance(found, _TraceFilter):
            found.show = number <= _LEVELS["TRACE"]


def load(config: Path | None, debug: bool, allow_roots: Sequence[Path] | None = None) -> Settings:
    """Read the settings (config file and environment) and configure logging from them.

    Args:
        config: The `--config` file, if given.
        debug: `--debug`.
        allow_roots: `--allow-root` folders (relative to the working directory), added to `paths.allowed_roots`.
    """
    from agentmap._cli_api import load_settings

    settings = load_settings(config)
    settings.paths.allowed_roots += [Path(r).expanduser().resolve() for r in allow_roots or ()]
    configure_logging("DEBUG" if debug else settings.logging.level)
    return settings


def split_target(target: str | None, settings: Settings) -> tuple[Path, str | None]:
    """`FILE[::GRAPH]` (or the configured `workflow`) as a path and an optional graph name.

    Raises:
        ConfigError: No FILE given and no `workflow` configured, or `::GRAPH` with no FILE before it (`usage`).
    """
    text = target or settings.workflow
    if not text:
        raise ConfigError(
            "no workflow file given",
            code=ErrorCode.NO_WORKFLOW,
            hint="name one, e.g. `agentmap run graphs/hello_world.csv`, or set `workflow:` in agentmap.yaml",
        )
    path, sep, graph = text.partition("::")
    if not path.strip():
        raise ConfigError(
            f"{text!r} names no workflow file before '::'",
            code=ErrorCode.USAGE,
            hint=f"write FILE::GRAPH, e.g. `graphs/hello_world.csv{sep}{graph.strip() or 'HelloWorld'}`",
        )
    return Path(path), (graph.strip() or None) if sep else None


def json_value(text: str, where: str, *, code: ErrorCode, hint: str) -> Any:
    """A JSON value the user gave, read by the one reader every entry point shares (`agentmap._cli_api`'s).

    Args:
        text: The option's or file's text.
        where: What it came from, for the message (`--state`, `state file x.json`).
        code: The error code.
        hint: What to write instead when the text is not JSON at all (an example).

    Raises:
        ConfigError: The text is not JSON, or its value is one a run cannot keep (a lone surrogate, nested deeper
            than 100 levels, an integer beyond 64 bits, NaN): the message names where in it.
    """
    from agentmap._cli_api import read_json_value

    value, problem = read_json_value(text)
    if problem is not None:
        raise value_error(problem, where, code=code, hint=hint)
    return value


def value_error(problem: Problem, where: str, *, code: ErrorCode, hint: str = "") -> ConfigError:
    """The error for a value the user gave that a run cannot take (`problem`), naming the option it came from.

    `hint` replaces the problem's own when the text was not JSON at all (an example of the option helps more).
    """
    message = f"{where}: {problem.message()}" if problem.path else problem.message(whole=where)
    return ConfigError(message, code=code, hint=hint if problem.syntax and hint else problem.hint)


def json_object(
    text: str, where: str, *, code: ErrorCode, example: str, what: str = "", hint: str = ""
) -> dict[str, Any]:
    """Parse an option's or file's text as a JSON object (read by `json_value`).

    Args:
        text: The text.
        where: What it came from, for the message (`--state`, `state file x.json`).
        code: The error code.
        example: A JSON object to show in the hint.
        what: What the object holds, for the message (` of state keys`).
        hint: Extra words for the hint of invalid JSON.

    Raises:
        ConfigError: The text is not valid JSON, not an object, or holds a value `json_value` refuses.
    """
    value = json_value(text, where, code=code, hint=f"write a JSON object, e.g. {example}{hint}")
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where} must be a JSON object{what}, not {type(value).__name__}", code=code, hint=f"e.g. {example}"
        )
    return value


def cannot_write(path: Path, what: str, exc: OSError) -> ConfigError:
    """The error for an output the command could not write (exit 2: the user named the path)."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileExistsError | NotADirectoryError):
        reason = "a file stands where a folder is needed"
    return ConfigError(
        f"cannot write {what} {path}: {reason}",
        code=ErrorCode.CANNOT_WRITE,
        hint="name a path in a folder you can write to",
    )


def ensure_writable(path: Path, what: str, *, folder: bool = False) -> None:
    """Make the folder of `path` (or `path` itself when `folder`) and check it can be written, before any work.

    Raises:
        ConfigError: The folder cannot be made or written to.
    """
    target = path if folder else path.parent
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(path, what, exc) from None
    if not os.access(target, os.W_OK | os.X_OK):
        raise cannot_write(path, what, PermissionError(13, "permission denied"))


def api_key_from(api_key_env: str | None, starting: str) -> str | None:
    """The API key `--api-key-env` names (None without the option), for `serve` and `studio`.

    Raises:
        ConfigError: The variable is unset or empty (`api-key-required`); `starting` names what would start.
    """
    if api_key_env is None:
        return None
    api_key = os.environ.get(api_key_env, "").strip()
    if not api_key:
        raise ConfigError(
            f"--api-key-env names {api_key_env}, which is not set (or empty)",
            code=ErrorCode.API_KEY_REQUIRED,
            hint=f"export {api_key_env}=<a long random key> before starting {starting}",
        )
    return api_key
