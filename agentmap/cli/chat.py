"""`agentmap chat` and `agentmap ask`: talk with a workflow, a Python agent or the active agent.

The agent is `FILE[::GRAPH]` (a workflow, or a `.py` file exposing csv_specs/run_agent.md's `run_agent`), else the one
`ACTIVE_AGENT_PATH` names. `chat` keeps the history across turns and ends on `/exit`, `exit`, end of
input (Ctrl-D) or Ctrl-C at the prompt (exit 0; `--log` then holds the session as a csv_specs/evaluation.md log).
Ctrl-C while the agent is replying stops at once (exit 130). `ask` asks once and prints the reply, or
with `--json` the agent's whole output (`content`, `response_time_secs`, `traces`, ...).

`eval run` (agentmap/cli/evaluation.py) loads its agent with `load_agent` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from agentmap.cli._common import AllowRootOption, ConfigOption, DebugOption, ensure_writable, json_object, load
from agentmap.cli._process import collect_from_here, signal_handlers
from agentmap.cli.render import set_json_output
from agentmap.errors import AgentMapError, ConfigError, ErrorCode, WorkflowFileError

if TYPE_CHECKING:
    from agentmap._cli_api import Settings

__all__ = [
    "AgentConfigOption",
    "MemoryOption",
    "ask_once",
    "chat_session",
    "load_agent",
    "read_agent_config",
    "register",
    "run_interruptible",
]

_T = TypeVar("_T")
_WORKFLOW_SUFFIXES = (".csv", ".xlsx", ".yaml", ".yml")
_CONFIG_EXAMPLE = '--agent-config \'{"only_domains": ["maths"], "domain_timeout_secs": 5}\''

AgentConfigOption = Annotated[
    str | None,
    typer.Option(
        "--agent-config",
        metavar="JSON|FILE",
        help="Per-call agent config (the run_agent interface's keys: tool_root, only_domains, execution_mode, "
        "domain_timeout_secs, "
        "model_overrides) as a JSON object, or the path of a JSON file holding one.",
        show_default=False,
    ),
]
MemoryOption = Annotated[
    str | None, typer.Option("--memory", help="Extra context passed to the agent on every call.", show_default=False)
]


def read_agent_config(value: str | None) -> dict[str, Any] | None:
    """The `--agent-config` value as a dict: JSON object text, or a JSON file's path; checked up front.

    Raises:
        ConfigError: The text is not a JSON object (or the file cannot be read), or a key has a wrong value.
    """
    if value is None:
        return None
    text, where = value, "--agent-config"
    file = Path(value)
    if not value.lstrip().startswith(("{", "[")) and file.is_file():
        where = f"--agent-config file {file}"
        try:
            text = file.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {where}: {exc}", code=ErrorCode.BAD_AGENT_CONFIG) from None
    data = json_object(
        text,
        where,
        code=ErrorCode.BAD_AGENT_CONFIG,
        example=_CONFIG_EXAMPLE,
        hint=", or the path of a .json file holding one",
    )
    from agentmap._cli_api import resolve_agent_config

    resolve_agent_config(data)  # a wrong value stops here, not on every turn
    return data


def load_agent(target: str | None, settings: Settings, *, source: str = "FILE") -> Callable[..., Any]:
    """The agent `target` names (default: `ACTIVE_AGENT_PATH`): a workflow, a `.py` file or a module.

    A workflow is compiled with the settings (custom agent and function folders, `llm`, `tools`), as
    `agentmap run` would compile it.

    Raises:
        WorkflowFileError: The file does not exist.
        ConfigError: No target and no `ACTIVE_AGENT_PATH`, or the module has no `run_agent`.
    """
    from agentmap._cli_api import ACTIVE_AGENT_ENV, active_agent_target, agent_for, load_active_agent

    text = target if target is not None else active_agent_target()  # the library's own resolution
    if target is None:
        source = f"${ACTIVE_AGENT_ENV}"
    if not text:
        return load_active_agent()  # raises the "no active agent" ConfigError
    file = Path(text.partition("::")[0])
    suffix = file.suffix.lower()
    if suffix in (*_WORKFLOW_SUFFIXES, ".py") and not file.exists():
        raise WorkflowFileError(
            f"{source} {file} does not exist" if target is not None else f"{source} names {file}, which does not exist",
            code=ErrorCode.AGENT_NOT_FOUND,
            hint="give a workflow (file.csv[::Graph]) or a Python file exposing run_agent, relative to the "
            + ("working directory" if target is not None else "repository root (.git or pyproject.toml) or here"),
        )
    if suffix in _WORKFLOW_SUFFIXES:
        from agentmap import CompileOptions

        return agent_for(text, options=CompileOptions.from_settings(settings))
    return load_active_agent(text)


def run_interruptible(
    coroutine: Coroutine[Any, Any, _T],
    on_interrupt: Callable[[], str],
    *,
    on_sigint: Callable[[int, FrameType | None], Any] = signal.default_int_handler,
) -> _T:
    """Run `coroutine` in a new event loop; on Ctrl-C write `on_interrupt()` to stderr and exit 130.

    The process leaves at once (`os._exit`): an agent blocked in a worker thread cannot be stopped, and a
    normal exit would wait for it. Long sessions run with the garbage collector on (the command line
    starts with it off). `on_sigint` is the SIGINT handler meanwhile; a KeyboardInterrupt it raises that
    the coroutine does not catch is the interrupt.
    """
    collect_from_here()
    loop = asyncio.new_event_loop()
    try:
        with signal_handlers({signal.SIGINT: on_sigint}):  # even when started with SIGINT ignored
            result = loop.run_until_complete(coroutine)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
    except KeyboardInterrupt:
        sys.stdout.flush()
        sys.stderr.write(f"\ninterrupted: {on_interrupt()}\n")
        sys.stderr.flush()
        os._exit(130)
    finally:
        if not loop.is_closed():
            loop.close()
    return result


class _Console:
    """The chat's input and output, and what Ctrl-C means at each moment.

    At the prompt Ctrl-C ends the chat (`chat_loop` takes the KeyboardInterrupt as the end of input);
    while the agent replies it stops the command. Once a reply is being shown, a Ctrl-C is kept for the
    next prompt, so one that lands just after the reply appeared still ends the chat cleanly.
    """

    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive
        self._phase = "reply"  # "read": at the prompt; "reply": the agent is working; "shown": showing a reply
        self._pending = False
        if interactive:
            with contextlib.suppress(ImportError):  # not on every platform
                import readline  # noqa: F401  (arrow keys and history at the prompt)

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        """The SIGINT handler while the chat runs."""
        if self._phase == "shown":
            self._pending = True
            return
        raise KeyboardInterrupt

    def read(self, prompt: str) -> str:
        """The user's next line (a prompt only on a terminal); EOFError at end of input."""
        self._phase = "read"
        if self._pending:
            raise KeyboardInterrupt
        if self.interactive:
            line = input(prompt)
        else:
            line = sys.stdin.readline()
            if not line:
                raise EOFError
        self._phase = "reply"
        return line.rstrip("\r\n")

    def write(self, text: str) -> None:
        """Show a reply (followed by a blank line on a terminal)."""
        self._phase = "shown"
        sys.stdout.write(text + ("\n\n" if self.interactive else "\n"))
        sys.stdout.flush()


def chat_session(
    target: str | None,
    *,
    memory: str | None = None,
    agent_config: str | None = None,
    max_turns: int = 100,
    log: Path | None = None,
    config: Path | None = None,
    debug: bool = False,
    allow_roots: list[Path] | None = None,
) -> int:
    """The `chat` command: talk until the user leaves; returns the exit code (0)."""
    settings = load(config, debug, allow_roots)
    call_config = read_agent_config(agent_config)
    if log is not None:
        ensure_writable(log, "the conversation log")
    agent = load_agent(target, settings)
    interactive = sys.stdin.isatty()
    if interactive:
        from agentmap._cli_api import ACTIVE_AGENT_ENV

        name = target or os.environ.get(ACTIVE_AGENT_ENV, "")
        sys.stderr.write(f"Chatting with {name}. Type /exit or press Ctrl-D to leave.\n")
        sys.stderr.flush()
    from agentmap._cli_api import chat_loop

    terminal = _Console(interactive)
    session = chat_loop(
        agent,
        terminal.read,
        terminal.write,
        memory=memory,
        config=call_config,
        max_turns=max_turns,
        log_path=log,
        prompt="you> ",
    )
    written = f"; the conversation log was not written to {log}" if log is not None else ""
    conversation = run_interruptible(
        session,
        lambda: f"Ctrl-C stopped the chat while the agent was replying{written}",
        on_sigint=terminal.on_sigint,
    )
    if log is not None:
        turns = sum(1 for t in conversation.turns if t.role == "user")
        sys.stderr.write(f"Conversation log ({turns} turn{'s' if turns != 1 else ''}) written to {log}\n")
    return 0


def ask_once(
    prompt: str,
    target: str | None = None,
    *,
    json_output: bool = False,
    memory: str | None = None,
    agent_config: str | None = None,
    config: Path | None = None,
    debug: bool = False,
    allow_roots: list[Path] | None = None,
) -> int:
    """The `ask` command: print one reply (or the whole output as JSON); returns the exit code (0).

    Raises:
        AgentMapError: The agent raised (`agent-error`) or gave no reply (`no-reply`); exit code 5.
    """
    set_json_output(json_output)
    settings = load(config, debug, allow_roots)
    call_config = read_agent_config(agent_config)
    agent = load_agent(target, settings)
    from agentmap._cli_api import ask

    try:
        text = run_interruptible(
            ask(agent, prompt, as_json=json_output, memory=memory, config=call_config),
            lambda: "Ctrl-C stopped the agent before it replied",
        )
    except AgentMapError:
        raise
    except Exception as exc:
        detail = (str(exc).strip().splitlines() or [""])[0]
        raise AgentMapError(
            f"the agent failed: {type(exc).__name__}{': ' + detail if detail else ''}",
            code=ErrorCode.AGENT_ERROR,
            hint="run again with --debug to see the traceback",
        ) from exc
    if not text.strip():
        raise AgentMapError(
            "the agent returned no reply",
            code=ErrorCode.NO_REPLY,
            hint="its run_agent must return a non-empty `content` (see csv_specs/run_agent.md)",
        )
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


_TARGET_HELP = "A workflow (file.csv[::GRAPH]) or a Python file exposing run_agent (default: $ACTIVE_AGENT_PATH)."


def register(app: typer.Typer) -> None:
    """Add `agentmap chat` and `agentmap ask` to `app`."""

    @app.command("chat")
    def chat(
        target: Annotated[
            str | None, typer.Argument(metavar="FILE[::GRAPH]", help=_TARGET_HELP, show_default=False)
        ] = None,
        memory: MemoryOption = None,
        agent_config: AgentConfigOption = None,
        max_turns: Annotated[
            int, typer.Option("--max-turns", min=1, help="End after this many user messages (the log's max_turns).")
        ] = 100,
        log: Annotated[
            Path | None,
            typer.Option("--log", help="Write the session here in the conversation log format.", dir_okay=False),
        ] = None,
        config: ConfigOption = None,
        debug: DebugOption = False,
        allow_root: AllowRootOption = None,
    ) -> None:
        """Talk with an agent, turn after turn, the history kept (/exit or Ctrl-D leaves)."""
        raise typer.Exit(
            chat_session(
                target,
                memory=memory,
                agent_config=agent_config,
                max_turns=max_turns,
                log=log,
                config=config,
                debug=debug,
                allow_roots=allow_root,
            )
        )

    @app.command("ask")
    def ask(
        prompt: Annotated[str, typer.Argument(metavar="MESSAGE", help="What to ask.", show_default=False)],
        target: Annotated[
            str | None, typer.Argument(metavar="FILE[::GRAPH]", help=_TARGET_HELP, show_default=False)
        ] = None,
        json_output: Annotated[
            bool,
            typer.Option(
                "--json", help="Print the agent's whole output (content, response_time_secs, traces) as JSON."
            ),
        ] = False,
        memory: MemoryOption = None,
        agent_config: AgentConfigOption = None,
        config: ConfigOption = None,
        debug: DebugOption = False,
        allow_root: AllowRootOption = None,
    ) -> None:
        """Ask an agent one question and print its reply."""
        raise typer.Exit(
            ask_once(
                prompt,
                target,
                json_output=json_output,
                memory=memory,
                agent_config=agent_config,
                config=config,
                debug=debug,
                allow_roots=allow_root,
            )
        )
