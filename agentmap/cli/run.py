"""`agentmap run FILE[::GRAPH]`: run a workflow and show what happened.

In a terminal: a live table of the nodes as they run (on stderr), then the execution summary, the
final state and the verdict. With `--json`, or when stdout is not a terminal: one JSON document on
stdout. Exit code 0 when the success policy passed, 1 when it failed, 130 on Ctrl-C.

The initial state is `--state JSON`, `--state-file PATH`, or else `<stem>.state.json` beside the
workflow file when there is one (so `graphs/hello_world.csv` runs with `graphs/hello_world.state.json`).

`--thread ID` saves the run under that id in `.agentmap/runs.db` (or `--checkpoint runs.db`,
`--checkpoint postgresql://...`, `AGENTMAP_CHECKPOINT`); `--checkpoint` alone picks a new id. A run that
pauses on an `interrupt()` exits 0 and prints the question and the `agentmap resume` command; SIGTERM
and Ctrl-C stop it (exit 143 / 130), print the same command, and keep every completed step.
"""

# No `from __future__ import annotations`: typer reads the options' annotations at every start, and each one
# written as a string costs it a compile (about 4 ms of CPU of every `agentmap run`).
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentmap.cli import _durable, _resume
from agentmap.cli._common import (
    AllowRootOption,
    BudgetOption,
    ConfigOption,
    DebugOption,
    JsonOption,
    MissingInputsOption,
    NoCacheOption,
    RecursionLimitOption,
    StreamOption,
    StrictOption,
    WorkflowArgument,
    ensure_writable,
    json_object,
    load,
    missing_inputs_mode,
    split_target,
    value_error,
)
from agentmap.cli._execute import execute
from agentmap.cli._observe import TraceContentOption, TraceOption, check_picture, tracing_for
from agentmap.cli.render import set_json_output
from agentmap.errors import ConfigError, ErrorCode, WorkflowFileError

if TYPE_CHECKING:
    from agentmap._cli_api import MissingInputs

__all__ = ["read_state", "register", "run_workflow"]

_EXAMPLE = '--state \'{"name": "Ada"}\''


def read_state(state: str | None, state_file: Path | None, workflow: Path) -> tuple[dict[str, Any], Path | None]:
    """The initial state from `--state`, `--state-file` or `<stem>.state.json`, and the file it came from.

    Raises:
        ConfigError: Both options given, or the text is not UTF-8 or not a JSON object, holds a value a run cannot
            keep, or a key the run cannot start with (`bad-state`).
        WorkflowFileError: The state file does not exist.
    """
    if state is not None and state_file is not None:
        raise ConfigError("give the initial state once: --state or --state-file, not both", code=ErrorCode.BAD_STATE)
    if state is not None:
        return _state_object(state, "--state"), None
    if state_file is not None and not state_file.is_file():
        what = "is a directory" if state_file.is_dir() else "does not exist"
        raise WorkflowFileError(
            f"state file {state_file} {what}",
            code=ErrorCode.STATE_FILE_NOT_FOUND,
            hint=f"write the initial state as a JSON object in a file, or pass {_EXAMPLE}",
        )
    source = state_file or workflow.with_name(f"{workflow.stem}.state.json")
    if not source.is_file():
        return {}, None
    where = f"state file {source}"
    try:
        text = source.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{where} is not UTF-8 text", code=ErrorCode.BAD_STATE, hint="save it as UTF-8 JSON"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {where}: {exc.strerror or exc}", code=ErrorCode.BAD_STATE) from None
    return _state_object(text, where), source


def _state_object(text: str, where: str) -> dict[str, Any]:
    """The initial state in `text`: a JSON object whose keys a run can start with (see `runtime.values`)."""
    from agentmap._cli_api import state_key_problem

    state = json_object(text, where, code=ErrorCode.BAD_STATE, example=_EXAMPLE, what=" of state keys")
    problem = state_key_problem(state)
    if problem is not None:
        raise value_error(problem, where, code=ErrorCode.BAD_STATE)
    return state


def run_workflow(
    target: str | None,
    *,
    state: str | None = None,
    state_file: Path | None = None,
    json_output: bool = False,
    config: Path | None = None,
    debug: bool = False,
    checkpoint: str | None = None,
    thread: str | None = None,
    resume: str | None = None,
    restart: bool = False,
    durability: str | None = None,
    allow_roots: list[Path] | None = None,
    missing_inputs: "MissingInputs" = "error",
    full: bool = False,
    fuse: bool = False,
    trace: str | None = None,
    trace_content: bool = False,
    draw: Path | None = None,
    recursion_limit: int | None = None,
    stream: bool | None = None,
    budget: float | None = None,
    no_cache: bool = False,
) -> int:
    """The `run` command: returns the exit code (0 success or paused, 1 the success policy failed)."""
    json_mode = json_output or not sys.stdout.isatty()
    set_json_output(json_mode)
    resume_value = _resume.check_persistence(thread, resume, state, state_file)
    invoke_options = _durable.check_durability(durability)
    settings = load(config, debug, allow_roots)
    path, graph = split_target(target, settings)
    initial, state_source = read_state(state, state_file, path) if resume is None else ({}, None)

    from agentmap import compile

    saver, thread, run_config = _open_thread(checkpoint, thread)
    keys = tuple(initial)
    if saver is not None and thread is not None and resume is not None:
        from agentmap._cli_api import saved_state_keys

        keys = saved_state_keys(saver, thread)
    from agentmap import CompileOptions, item_store

    options = CompileOptions.from_settings(settings).but(
        state_keys=keys,
        fuse=fuse,
        store=item_store(checkpoint, lazy=True),  # opened only if a node uses it (store_reader, ...)
        missing_inputs="ignore",  # checked below, in the command's words (check_initial_state)
    )
    if draw is not None:
        _check_draw(draw)
    tracing = tracing_for(settings, trace, trace_content)  # OpenTelemetry is imported only when tracing is on
    app = compile(path, graph, options=options.but(checkpointer=saver, tracing=tracing))
    if saver is None and app.pausing_nodes():
        # A run that can pause for an answer is saved without being asked, under a new thread id, in the default
        # checkpoint file: the pause prints the `agentmap resume ID ANSWER` that continues it.
        saver, thread, run_config = _open_thread(None, None, new=True)
        app = compile(path, graph, options=options.but(checkpointer=saver, tracing=tracing))
    if recursion_limit is not None:
        run_config = {**(run_config or {}), "recursion_limit": recursion_limit}
    if resume is None:
        from agentmap.cli._state_check import check_initial_state

        check_initial_state(app, initial, mode=missing_inputs, thread=None if restart else thread)
    run_input: Any = initial
    if thread is not None:
        found = app.thread(thread)
        if resume is not None:  # the thread goes on at the revision it runs, whatever the file holds now
            run_input = found.run_input(resume_value)
            app = found.app
        else:
            found.make_way(restart=restart, resume_hint=_durable.resume_hint(thread, checkpoint))
    interactive = bool(app.prompting_nodes())
    return execute(
        app,
        run_input,
        run_config,
        json_mode=json_mode,
        policy=settings.execution.success_policy,
        checkpoint=checkpoint,
        state_source=state_source,
        live=not interactive,
        full=full,
        draw=draw,
        stream=stream,
        budget=budget,
        no_cache=no_cache,
        **invoke_options,
    )


def _open_thread(
    checkpoint: str | None, thread: str | None, *, new: bool = False
) -> tuple[Any, str | None, dict[str, Any] | None]:
    """The checkpointer, thread id (a new one when only --checkpoint is given, or `new`) and run config of a
    durable run.

    All three are None for a run with neither --checkpoint nor --thread (and not `new`).
    """
    if checkpoint is None and thread is None and not new:
        return None, None, None
    from agentmap import checkpointer

    saver = checkpointer(checkpoint)
    if thread is None:
        thread = uuid.uuid4().hex[:12]
    return saver, thread, {"configurable": {"thread_id": thread}}


def _check_draw(draw: Path) -> None:
    """Refuse a --draw picture that cannot be made or written, before the run starts."""

    check_picture(draw)
    ensure_writable(draw, "the picture")


def register(app: typer.Typer) -> None:
    """Add `agentmap run`."""

    @app.command("run")
    def run(
        target: WorkflowArgument = None,
        state: Annotated[
            str | None,
            typer.Option("--state", "-s", metavar="JSON", help="Initial state as a JSON object.", show_default=False),
        ] = None,
        state_file: Annotated[
            Path | None,
            typer.Option(
                "--state-file",
                metavar="FILE",
                help="Initial state from a JSON file (default: <stem>.state.json beside FILE, if any).",
                show_default=False,
            ),
        ] = None,
        thread: Annotated[
            str | None,
            typer.Option(
                "--thread",
                metavar="ID",
                help="Save the run under this thread id, so it can be resumed (`agentmap resume ID`).",
                show_default=False,
            ),
        ] = None,
        checkpoint: _durable.CheckpointOption = None,
        restart: Annotated[
            bool, typer.Option("--restart", help="Start an unfinished --thread over, dropping what it saved.")
        ] = False,
        durability: _durable.DurabilityOption = None,
        resume: Annotated[
            str | None,
            typer.Option(
                "--resume",
                metavar="JSON",
                help="Resume the paused run of --thread with this JSON value as the answer (or: agentmap resume).",
                show_default=False,
            ),
        ] = None,
        trace: TraceOption = None,
        trace_content: TraceContentOption = False,
        draw: Annotated[
            Path | None,
            typer.Option(
                "--draw", help="Draw the graph with the path the run took to this .svg or .png file.", dir_okay=False
            ),
        ] = None,
        json_output: JsonOption = False,
        stream: StreamOption = None,
        config: ConfigOption = None,
        debug: DebugOption = False,
        allow_root: AllowRootOption = None,
        missing_inputs: MissingInputsOption = None,
        strict: StrictOption = False,
        full: Annotated[
            bool, typer.Option("--full", help="Show the whole final state (long values are cut by default).")
        ] = False,
        fuse: Annotated[
            bool,
            typer.Option(
                "--fuse", help="Run each straight chain of nodes as one LangGraph step (same results, faster)."
            ),
        ] = False,
        recursion_limit: RecursionLimitOption = None,
        budget: BudgetOption = None,
        no_cache: NoCacheOption = False,
    ) -> None:
        """Run a workflow: a live view of its nodes, then the execution summary and the final state."""
        code = run_workflow(
            target,
            state=state,
            state_file=state_file,
            json_output=json_output,
            config=config,
            debug=debug,
            checkpoint=checkpoint,
            thread=thread,
            resume=resume,
            restart=restart,
            durability=durability,
            allow_roots=allow_root,
            missing_inputs=missing_inputs_mode(missing_inputs, strict),
            full=full,
            fuse=fuse,
            trace=trace,
            trace_content=trace_content,
            draw=draw,
            recursion_limit=recursion_limit,
            stream=stream,
            budget=budget,
            no_cache=no_cache,
        )
        raise typer.Exit(code)
