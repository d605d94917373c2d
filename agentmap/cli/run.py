"""`agentmap run FILE[::GRAPH]`: run a workflow and show what happened.

In a terminal: a live table of the nodes as they run (on stderr), then the execution summary, the
final state and the verdict. With `--json`, or when stdout is not a terminal: one JSON document on
stdout. Exit code 0 when the success policy passed, 1 when it failed, 130 on Ctrl-C.

The initial state is `--state JSON`, `--state-file PATH`, or else `<stem>.state.json` beside the
workflow file when there is one (so `graphs/hello_world.csv` runs with `graphs/hello_world.state.json`).

`--checkpoint runs.db` saves the run in a SQLite file under `--thread ID` (a new id when not given). A run
that pauses on an `interrupt()` (an `input` node with Context `{"interrupt": true}`) exits 0 and prints the
question and the command that resumes it: `--resume JSON` on the same file and thread.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentmap.cli import _resume
from agentmap.cli._common import (
    ConfigOption,
    DebugOption,
    JsonOption,
    WorkflowArgument,
    json_object,
    load,
    split_target,
)
from agentmap.cli.render import OutputMode
from agentmap.errors import ConfigError, WorkflowFileError

if TYPE_CHECKING:
    from agentmap.runtime.runner import CompiledWorkflow, RunResult
    from agentmap.runtime.tracking import ExecutionTracker

__all__ = ["read_state", "register", "run_workflow"]

_EXAMPLE = '--state \'{"name": "Ada"}\''


def read_state(state: str | None, state_file: Path | None, workflow: Path) -> tuple[dict[str, Any], Path | None]:
    """The initial state from `--state`, `--state-file` or `<stem>.state.json`, and the file it came from.

    Raises:
        ConfigError: Both options given, or the text is not UTF-8 or not a JSON object.
        WorkflowFileError: The state file does not exist.
    """
    if state is not None and state_file is not None:
        raise ConfigError("give the initial state once: --state or --state-file, not both", code="bad-state")
    if state is not None:
        return json_object(state, "--state", code="bad-state", example=_EXAMPLE, what=" of state keys"), None
    if state_file is not None and not state_file.is_file():
        what = "is a directory" if state_file.is_dir() else "does not exist"
        raise WorkflowFileError(
            f"state file {state_file} {what}",
            code="state-file-not-found",
            hint=f"write the initial state as a JSON object in a file, or pass {_EXAMPLE}",
        )
    source = state_file or workflow.with_name(f"{workflow.stem}.state.json")
    if not source.is_file():
        return {}, None
    where = f"state file {source}"
    try:
        text = source.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{where} is not UTF-8 text", code="bad-state", hint="save it as UTF-8 JSON") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {where}: {exc.strerror or exc}", code="bad-state") from None
    return json_object(text, where, code="bad-state", example=_EXAMPLE, what=" of state keys"), source


class _Interrupted(Exception):
    """Ctrl-C arrived while the graph was running."""


def _invoke(app: CompiledWorkflow, state: Any, tracker: ExecutionTracker, config: dict[str, Any] | None) -> RunResult:
    """Run in a worker thread so Ctrl-C reaches this (main) thread even while a node blocks."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = app.invoke(state, config, tracker=tracker)  # type: ignore[arg-type]
        except BaseException as exc:  # handed to the main thread, raised there
            box["error"] = exc

    worker = threading.Thread(target=work, name="agentmap-run", daemon=True)
    worker.start()
    try:
        worker.join()
    except KeyboardInterrupt:
        raise _Interrupted from None
    if "error" in box:
        raise box["error"]
    result: RunResult = box["result"]
    return result


def _verdict(result: RunResult, policy: str) -> str:
    nodes = sum(1 for _ in result.summary)
    if result.interrupts:
        return "[bold yellow]paused[/] for input"
    if result.success:
        return f"[bold green]succeeded[/] ({nodes} node{'s' if nodes != 1 else ''} ran)"
    failed = ", ".join(result.failed_nodes) or "no node"
    return f"[bold red]failed[/] under the {policy} success policy (failed: {failed})"


def _title(app: CompiledWorkflow) -> str:
    from rich.markup import escape

    return f"{escape(app.name)} ({escape(str(app.spec.file))})"


def _print_human(
    app: CompiledWorkflow, result: RunResult, policy: str, state_source: Path | None, *, table_shown: bool
) -> None:
    from rich.markup import escape

    from agentmap.cli.render import console, state_view, summary_table

    out = console()
    if not table_shown:  # the live view's last frame is the summary table already
        out.print(summary_table(result.summary, title=_title(app)))
    out.print(
        "[bold]Final state[/]" + (f" [dim](initial state from {escape(str(state_source))})[/]" if state_source else "")
    )
    out.print(state_view(result.state))
    out.print(f"{escape(app.name)} {_verdict(result, policy)}")


def _report_interrupt(app: CompiledWorkflow, tracker: ExecutionTracker, json_mode: bool) -> None:
    from agentmap.cli.render import dump_json

    summary = tracker.summary
    running = [e.name for e in summary if e.success is None]
    done = [e.name for e in summary if e.success is not None]
    where = (
        f"while node{'s' if len(running) > 1 else ''} {', '.join(repr(n) for n in running)} "
        f"{'were' if len(running) > 1 else 'was'} running"
        if running
        else "between nodes"
    )
    finished = f"; finished before: {', '.join(done)}" if done else "; no node had finished"
    sys.stderr.write(f"interrupted: Ctrl-C stopped graph {app.name!r} {where}{finished}\n")
    if json_mode:
        dump_json(
            {
                "graph": app.name,
                "file": app.spec.file,
                "success": False,
                "interrupted": True,
                "exit_code": 130,
                "running": running,
                "summary": [e.to_dict() for e in summary],
            }
        )
    sys.stderr.flush()


def run_workflow(
    target: str | None,
    *,
    state: str | None = None,
    state_file: Path | None = None,
    json_output: bool = False,
    config: Path | None = None,
    debug: bool = False,
    checkpoint: Path | None = None,
    thread: str | None = None,
    resume: str | None = None,
    trace: str | None = None,
    trace_content: bool = False,
    draw: Path | None = None,
) -> int:
    """The `run` command: returns the exit code (0 success or paused, 1 the success policy failed)."""
    json_mode = json_output or not sys.stdout.isatty()
    OutputMode.json = json_mode
    resume_value = _resume.check_persistence(checkpoint, thread, resume, state, state_file)
    settings = load(config, debug)
    path, graph = split_target(target, settings)
    initial, state_source = read_state(state, state_file, path) if resume is None else ({}, None)

    from agentmap.runtime.api import compile

    saver: Any = None
    run_config: dict[str, Any] | None = None
    keys = tuple(initial)
    if checkpoint is not None:
        from agentmap.runtime.checkpoint import resolve_checkpointer

        saver = resolve_checkpointer(f"sqlite:{checkpoint}")
        if thread is None:
            import uuid

            thread = uuid.uuid4().hex[:12]
        run_config = {"configurable": {"thread_id": thread}}
        if resume is not None:
            keys = _resume.saved_keys(saver, run_config)
    options = {**settings.compile_options(), **settings.policy_options()}
    if draw is not None:
        from agentmap.cli._common import ensure_writable
        from agentmap.cli._observe import check_picture

        check_picture(draw)
        ensure_writable(draw, "the picture")
    from agentmap.cli._observe import tracing_for

    tracing = tracing_for(settings, trace, trace_content)  # OpenTelemetry is imported only when tracing is on
    app = compile(path, graph, state_keys=keys, checkpointer=saver, tracing=tracing, **options)
    pausing = _resume.pausing_nodes(app)
    if pausing and saver is None:
        raise ConfigError(
            f"node{'s' if len(pausing) > 1 else ''} {', '.join(pausing)} "
            f"pause{'' if len(pausing) > 1 else 's'} the run for an answer "
            "(Context interrupt: true), which needs a checkpoint file to resume from",
            code="usage",
            hint=f"run with --checkpoint runs.db (e.g. agentmap run {target or path} --checkpoint runs.db)",
        )
    run_input: Any = initial
    if resume is not None:
        assert thread is not None and run_config is not None
        if not app.graph.get_state(run_config).interrupts:  # type: ignore[arg-type]
            raise ConfigError(
                f"thread {thread!r} in {checkpoint} has no paused run of graph {app.name!r} to resume",
                code="nothing-to-resume",
                hint="check the --thread id the paused run printed, and the --checkpoint file and graph it used",
            )
        from langgraph.types import Command

        run_input = Command(resume=resume_value)
    view = None
    interactive = any(
        n.agent_type.strip().lower() in ("input", "inputagent") and n.name not in pausing for n in app.spec.nodes
    )
    if sys.stderr.isatty() and not interactive:
        from agentmap.cli.render import LiveView

        view = LiveView(f"running {app.name}")
    listener: Any = view.update if view is not None else None
    tracker = app.new_tracker(listener=listener)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    if view is not None:
        view.start()
    gc.freeze()  # what start-up built lives until exit: keep it out of the collections the run triggers
    gc.enable()
    try:
        result = _invoke(app, run_input, tracker, run_config)
    except _Interrupted:
        if view is not None:
            view.stop()
        _report_interrupt(app, tracker, json_mode)
        sys.stdout.flush()
        # A node may still be blocked in its thread (a sleep, a socket); it cannot be stopped, and a normal
        # exit would wait for it. Leave now: everything worth saying has been written.
        os._exit(130)
    finally:
        if view is not None:
            view.stop(_title(app))
        for observer in app.observers:  # spans still buffered go out before the process ends
            flush = getattr(observer, "flush", None)
            if flush is not None:
                flush()
    if draw is not None:
        result.draw(draw)
        sys.stderr.write(f"wrote {draw}\n")
    code = 0 if result.success or result.interrupts else 1
    resume_with = _resume.resume_command(target or str(path), checkpoint, thread) if checkpoint and thread else ""
    if json_mode:
        from agentmap.cli.render import dump_json

        document: dict[str, Any] = {"graph": app.name, "file": app.spec.file, "exit_code": code, **result.to_dict()}
        if state_source is not None:
            document["state_file"] = str(state_source)
        if thread is not None:
            document["thread"] = thread
        if result.interrupts:
            document.update(paused=True, interrupts=_resume.questions(result), resume=resume_with)
        dump_json(document)
    else:
        _print_human(app, result, settings.execution.success_policy, state_source, table_shown=view is not None)
        _resume.print_pause(result, thread, resume_with)
    return code


def register(app: typer.Typer) -> None:
    """Add `agentmap run`."""

    @app.command("run")
    def run(
        target: WorkflowArgument = None,
        state: Annotated[
            str | None, typer.Option("--state", "-s", help="Initial state as a JSON object.", show_default=False)
        ] = None,
        state_file: Annotated[
            Path | None,
            typer.Option(
                "--state-file",
                help="Initial state from a JSON file (default: <stem>.state.json beside FILE, if any).",
                show_default=False,
            ),
        ] = None,
        checkpoint: Annotated[
            Path | None,
            typer.Option(
                "--checkpoint",
                help="Save the run in this SQLite file (e.g. runs.db), so a paused run can be resumed.",
                show_default=False,
            ),
        ] = None,
        thread: Annotated[
            str | None,
            typer.Option(
                "--thread", help="The run's thread id in the checkpoint file (default: a new one).", show_default=False
            ),
        ] = None,
        resume: Annotated[
            str | None,
            typer.Option(
                "--resume",
                help="Resume the paused run of --thread with this JSON value as the answer.",
                show_default=False,
            ),
        ] = None,
        trace: Annotated[
            str | None,
            typer.Option(
                "--trace",
                help="OpenTelemetry spans of the run: otlp (OTEL_EXPORTER_OTLP_ENDPOINT), console, or file:PATH.",
                show_default=False,
            ),
        ] = None,
        trace_content: Annotated[
            bool, typer.Option("--trace-content", help="Put state values, prompts and replies in the spans.")
        ] = False,
        draw: Annotated[
            Path | None,
            typer.Option(
                "--draw", help="Draw the graph with the path the run took to this .svg or .png file.", dir_okay=False
            ),
        ] = None,
        json_output: JsonOption = False,
        config: ConfigOption = None,
        debug: DebugOption = False,
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
            trace=trace,
            trace_content=trace_content,
            draw=draw,
        )
        raise typer.Exit(code)
