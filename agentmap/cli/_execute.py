"""Running a compiled workflow for the command line and showing the outcome (`agentmap run` and `agentmap resume`).

The live table, the summary or JSON document, the verdict, and SIGTERM / Ctrl-C handling with the resume hint.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.cli import _durable, _resume
from agentmap.cli._process import collect_from_here, signal_handlers
from agentmap.cli.render import console, dump_json, shown_path, state_view, summary_table, usage_line
from agentmap.errors import AgentMapError

if TYPE_CHECKING:
    from agentmap import CompiledWorkflow, ExecutionTracker, RunResult

__all__ = ["execute"]


def execute(
    app: CompiledWorkflow,
    run_input: Any,
    run_config: dict[str, Any] | None,
    *,
    json_mode: bool,
    policy: str,
    checkpoint: str | None = None,
    state_source: Path | None = None,
    live: bool = True,
    full: bool = False,
    draw: Path | None = None,
    stream: bool | None = None,
    budget: float | None = None,
    no_cache: bool = False,
    **invoke_options: Any,
) -> int:
    """Run (or continue) `app` and show the outcome; shared by `agentmap run` and `agentmap resume`.

    `stream`: show each LLM node's text as it comes (None: when the outcome is not JSON, i.e. stdout is a
    terminal and --json was not given): under the live table when there is one, else on stdout, or on stderr
    when stdout carries the JSON document.
    """
    thread = (run_config or {}).get("configurable", {}).get("thread_id")
    hint = _durable.resume_hint(thread, checkpoint) if thread is not None else ""
    run_config = _with_budget(run_config, budget, no_cache)
    view, run_config = _views(app, run_config, json_mode=json_mode, live=live, stream=stream)
    tracker = app.new_tracker()
    # SIGINT even when started with it ignored
    with signal_handlers({signal.SIGINT: signal.default_int_handler, signal.SIGTERM: _on_sigterm}):
        if view is not None:
            view.start()
        collect_from_here()  # what start-up built lives until exit: keep it out of the collections the run triggers
        try:
            more = f"raise the budget and continue: {hint} --budget MORE" if thread is not None else _BUDGET_HINT
            hooks = [view] if view is not None else []
            result = _invoke(app, run_input, tracker, run_config, more, hooks=hooks, **invoke_options)
        except _Interrupted as stop:
            if view is not None:
                view.stop()
            _report_interrupt(app, tracker, json_mode, stop, thread, hint)
            sys.stdout.flush()
            # A node may still be blocked in its thread (a sleep, a socket); it cannot be stopped, and a normal
            # exit would wait for it. Leave now: every completed step is saved already.
            os._exit(stop.code)
        finally:
            if view is not None:
                view.stop(_title(app))
            app.flush()  # spans still buffered go out before the process ends
    if draw is not None:
        result.draw(draw)
        sys.stderr.write(f"wrote {draw}\n")
    code = 0 if result.success or result.interrupts else 1
    resume_with = f"{hint} {_resume.example_answer(result)}" if result.interrupts else ""
    if json_mode:
        status = "paused" if result.interrupts else "done" if result.success else "failed"
        document: dict[str, Any] = {
            "graph": app.name,
            "file": app.spec.file and shown_path(app.spec.file),
            "status": status,
            "exit_code": code,
            **result.to_dict(),
        }
        if state_source is not None:
            document["state_file"] = str(state_source)
        if thread is not None:
            document["thread"] = thread
        if result.interrupts:
            document.update(paused=True, interrupts=_resume.questions(result), resume=resume_with)
        dump_json(document)
    else:
        _print_human(app, result, policy, state_source, table_shown=view is not None, full=full)
        _resume.print_pause(result, thread, resume_with)
    return code


def _views(
    app: CompiledWorkflow, run_config: dict[str, Any] | None, *, json_mode: bool, live: bool, stream: bool | None
) -> tuple[Any, dict[str, Any] | None]:
    """The live view (when stderr is a terminal and `live`), and the run config with the LLM nodes' text
    streamed (see `execute`) to the view, else to stdout, or stderr when stdout carries the JSON document."""
    view = None
    if sys.stderr.isatty() and live:
        from agentmap.cli._live import LiveView

        view = LiveView(f"running {app.name}")
    if not (not json_mode if stream is None else stream):
        return view, run_config
    from agentmap._cli_api import TokenWriter

    out = sys.stderr if json_mode else sys.stdout

    def write(text: str) -> None:
        out.write(text)
        out.flush()

    config = dict(run_config or {})
    config["callbacks"] = [*(config.get("callbacks") or []), TokenWriter(view.write if view is not None else write)]
    return view, config


_BUDGET_HINT = "run again with a higher --budget (with --thread ID, a run stopped by its budget can be resumed)"


def _with_budget(run_config: dict[str, Any] | None, budget: float | None, no_cache: bool) -> dict[str, Any] | None:
    """The run config with `--budget` as `configurable["budget"]`, which the runner's meter reads, and
    `--no-cache` as `configurable["no_cache"]`, which the LLM response cache reads."""
    chosen = {**({"budget": budget} if budget is not None else {}), **({"no_cache": True} if no_cache else {})}
    if not chosen:
        return run_config
    config = {**(run_config or {})}
    config["configurable"] = {**config.get("configurable", {}), **chosen}
    return config


class _Interrupted(Exception):
    """Ctrl-C (exit 130) or SIGTERM (exit 143) arrived while the graph was running."""

    def __init__(self, code: int = 130) -> None:
        super().__init__(code)
        self.code = code
        self.signal = "SIGTERM" if code == 143 else "Ctrl-C"


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Interrupted(143)


def _invoke(
    app: CompiledWorkflow,
    state: Any,
    tracker: ExecutionTracker,
    config: dict[str, Any] | None,
    budget_hint: str,
    **kwargs: Any,
) -> RunResult:
    """Run in a worker thread so Ctrl-C and SIGTERM reach this (main) thread even while a node blocks.

    A run stopped by its budget is told how this very run continues (`budget_hint`).

    On a thread, the first signal lets the running step finish and be saved, then stops (a second one stops at
    once); without a thread there is nothing to save, so the first one stops at once.
    """
    box: dict[str, Any] = {}
    stop = threading.Event() if (config or {}).get("configurable", {}).get("thread_id") is not None else None
    done = threading.Event()  # waited on rather than Thread.join, which a signal can leave believing it ended

    def work() -> None:
        try:
            box["result"] = app.invoke(state, config, tracker=tracker, stop=stop, **kwargs)  # type: ignore[arg-type]
        except BaseException as exc:  # handed to the main thread, raised there
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="agentmap-run", daemon=True)
    worker.start()
    try:
        done.wait()
    except (KeyboardInterrupt, _Interrupted) as first:
        code = first.code if isinstance(first, _Interrupted) else 130
        if stop is None:
            raise _Interrupted(code) from None
        stop.set()
        name = _Interrupted(code).signal
        sys.stderr.write(f"stopping once the running step is saved ({name} again stops at once)\n")
        sys.stderr.flush()
        try:
            done.wait()
        except (KeyboardInterrupt, _Interrupted):
            raise _Interrupted(code) from None
        if "result" in box and box["result"].stopped:
            raise _Interrupted(code) from None
    if "error" in box:
        if isinstance(box["error"], AgentMapError) and box["error"].code == "budget-exceeded":
            box["error"].hint = budget_hint
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

    return f"{escape(app.name)} ({escape(shown_path(str(app.spec.file)))})"


def _print_human(
    app: CompiledWorkflow,
    result: RunResult,
    policy: str,
    state_source: Path | None,
    *,
    table_shown: bool,
    full: bool = False,
) -> None:
    from rich.markup import escape

    out = console()
    if not table_shown:  # the live view's last frame is the summary table already
        out.print(summary_table(result.summary, title=_title(app)))
    if result.usage:
        out.print(escape(usage_line(result.usage)))
    out.print(
        "[bold]Final state[/]" + (f" [dim](initial state from {escape(str(state_source))})[/]" if state_source else "")
    )
    out.print(state_view(result.state, full=full))
    out.print(f"{escape(app.name)} {_verdict(result, policy)}")


def _report_interrupt(
    app: CompiledWorkflow, tracker: ExecutionTracker, json_mode: bool, stop: _Interrupted, thread: str | None, hint: str
) -> None:
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
    sys.stderr.write(f"interrupted: {stop.signal} stopped graph {app.name!r} {where}{finished}\n")
    if thread is not None:
        sys.stderr.write(f"thread {thread} keeps every completed step; continue it with: {hint}\n")
    if json_mode:
        dump_json(
            {
                "graph": app.name,
                "file": app.spec.file and shown_path(app.spec.file),
                "status": "interrupted",
                "success": False,
                "interrupted": True,
                "exit_code": stop.code,
                "running": running,
                "summary": [e.to_dict() for e in summary],
                **({"thread": thread, "resume": hint} if thread is not None else {}),
            }
        )
    sys.stderr.flush()
