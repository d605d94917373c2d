"""What the command line needs beyond the public API (`agentmap.__all__`): a short list of named operations.

`agentmap.cli` imports only `agentmap` (the public API), `agentmap.errors` and this module; the import-linter
contracts in pyproject.toml check it. Each function says which command needs it and for what; it imports its
room when called, so `agentmap --help` imports no runtime. The few classes a command builds or catches are
lazily re-exported at the end (`_NAMES`, with the
variable naming the active agent); types a command only annotates with are under `TYPE_CHECKING`.
Everything here is internal: it may change between releases without notice, and other code should not import
it. Prefer adding to the public API when a user could want it too.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap._lazy import lazy_exports

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from agentmap.agents.journal import Entry
    from agentmap.batch.executors import Executor
    from agentmap.batch.results import BatchInterrupted, BatchOverBudget
    from agentmap.batch.rows import RowResult
    from agentmap.config import Settings
    from agentmap.interface.agent import ACTIVE_AGENT_ENV
    from agentmap.interface.agent_config import AgentConfig
    from agentmap.interface.compare import EvalDiff, ScenarioChange
    from agentmap.interface.eval_runner import EvalRunSummary
    from agentmap.interface.scenarios import Scenario
    from agentmap.interface.scores import EvalReport, Judge
    from agentmap.llm.decision_log import SQLiteDecisionLog
    from agentmap.runtime.durable import Durability, Thread
    from agentmap.runtime.options import CompileOptions
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.streaming import TokenWriter
    from agentmap.runtime.threads import ThreadInfo
    from agentmap.server import ServeConfig
    from agentmap.spec.models import FuncRef, GraphSpec, Targets, Workflow
    from agentmap.studio import StudioConfig

__all__ = [  # noqa: RUF022 (grouped by command)
    # every command: the settings, and the log lines they let through
    "load_settings",
    "is_trace",
    # run, validate, inspect, export, scaffold
    "select_graph",
    "normalize_type",
    "eject",
    "picture",
    # run --thread, resume, threads: durable runs and their checkpoints
    "checkpoint_exists",
    "checkpoint_target",
    "open_thread",
    "saved_state_keys",
    "thread_history",
    "journal_entries",
    "example_answer",
    # chat, ask, eval run, serve: a workflow as a conversational agent
    "active_agent_target",
    "load_active_agent",
    "agent_for",
    "resolve_agent_config",
    "ask",
    "chat_loop",
    # eval run, eval score, eval diff
    "load_scenarios",
    "run_eval",
    "score_logs",
    "score_batch_output",
    "load_rubric",
    "make_llm_judge",
    "render_table",
    "report_html",
    "diff_reports",
    "describe",
    "diff_html",
    "junit_xml",
    # logs
    "configured_log_path",
    "dumps",
    # batch
    "table_format",
    "executor_named",
    "partial_path",
    "stop_worker_processes",
    # batch, serve: spans still buffered go out before the command ends
    "flush_traces",
    # serve, studio, mcp
    "require_key",
    "serve",
    "studio",
    "serve_stdio",
    # the classes a command builds or catches, and one name it prints (lazily re-exported, see `_NAMES`)
    "ACTIVE_AGENT_ENV",
    "TokenWriter",
    "FuncRef",
    "SQLiteDecisionLog",
    "BatchInterrupted",
    "BatchOverBudget",
    "ServeConfig",
    "StudioConfig",
    # types a command only annotates with (under TYPE_CHECKING)
    "Durability",
    "EvalDiff",
    "EvalReport",
    "EvalRunSummary",
    "RowResult",
    "Settings",
    "Targets",
]

# every command


def load_settings(config: str | Path | None = None) -> Settings:
    """Every command: the settings of `--config` (else `agentmap.yaml`/`.toml` found here) and `AGENTMAP_*`."""
    from agentmap.config import load_settings

    return load_settings(config)


def is_trace(record: logging.LogRecord) -> bool:
    """Every command: whether a log record is a node's trace line (shown only at the TRACE level)."""
    from agentmap.agents._agent_log import is_trace

    return is_trace(record)


# run, validate, inspect, export, scaffold


def select_graph(workflow: Workflow, name: str | None, *, source: str | None = None) -> GraphSpec:
    """inspect, export, scaffold: the graph `name` of a loaded workflow (the only one when None), or the error
    naming the graphs the file holds."""
    from agentmap.runtime.api import select_graph

    return select_graph(workflow, name, source=source)


def normalize_type(name: str) -> str:
    """scaffold: an AgentType cell as the registry spells it (`EchoAgent` -> `echo`), to find the unknown types."""
    from agentmap.agents.registry import normalize_type

    return normalize_type(name)


def eject(app: CompiledWorkflow, success_policy: str = "all_nodes") -> str:
    """export --format python: the compiled workflow as a plain LangGraph script."""
    from agentmap.observe.eject import eject

    return eject(app, success_policy)


def picture(app: CompiledWorkflow, fmt: str) -> str | bytes:
    """export --format svg|png|dot: the graph drawn offline (PNG needs the `draw` extra)."""
    from agentmap.observe.draw import draw_graph, to_png
    from agentmap.observe.outputs import to_dot

    if fmt == "dot":
        return to_dot(app)
    svg = draw_graph(app)
    return to_png(svg) if fmt == "png" else svg


# run --thread, resume, threads


def checkpoint_exists(checkpoint: str | None) -> bool:
    """threads, resume: whether `--checkpoint` (or the default) may hold threads, so a missing file is reported
    as such rather than created."""
    from agentmap.runtime.checkpoint import checkpoint_exists

    return checkpoint_exists(checkpoint)


def checkpoint_target(checkpoint: str | None, *, create: bool = True) -> str:
    """run --thread, resume: the checkpoint `--checkpoint` means (else `AGENTMAP_CHECKPOINT`, else the default
    file, its folder made unless `create` is false), to name it in messages."""
    from agentmap.runtime.checkpoint import checkpoint_target

    return checkpoint_target(checkpoint, create=create)


def open_thread(
    saver: Any, thread_id: str, *, checkpoint_id: str | None = None, force: bool = False, options: CompileOptions
) -> Thread:
    """resume: a saved thread from its checkpoint alone, the workflow recompiled from the file it names (at
    `checkpoint_id`, `--from-checkpoint`; `force` past a run still marked running)."""
    from agentmap.runtime.durable import open_thread

    return open_thread(saver, thread_id, checkpoint_id=checkpoint_id, force=force, options=options)


def saved_state_keys(saver: Any, thread_id: str, checkpoint_id: str | None = None) -> tuple[str, ...]:
    """run --thread: the state keys a thread already holds, so its inputs are not reported missing."""
    from agentmap.runtime.durable import saved_state_keys

    return saved_state_keys(saver, thread_id, checkpoint_id)


def thread_history(saver: Any, thread_id: str, *, options: CompileOptions) -> tuple[ThreadInfo, list[StateSnapshot]]:
    """threads show: a thread's status and its checkpoints, newest first."""
    from agentmap.runtime.threads import thread_history

    return thread_history(saver, thread_id, options=options)


def journal_entries(saver: Any, thread_id: str) -> list[Entry]:
    """threads show --calls: the model and tool calls a thread's runs recorded (replayed on resume)."""
    from agentmap.agents.journal import journal_entries

    return journal_entries(saver, thread_id)


def example_answer(payload: Any) -> str:
    """run, resume: the answer a paused node's hint shows (`agentmap resume ID --answer ...`)."""
    from agentmap.agents.questions import example_answer

    return example_answer(payload)


# chat, ask, eval run, serve


def active_agent_target() -> str:
    """chat, ask, serve: the active agent's `FILE[::GRAPH]` (`$AGENTMAP_AGENT`), empty when none is set."""
    from agentmap.interface.agent import active_agent_target

    return active_agent_target()


def load_active_agent(path: str | os.PathLike[str] | None = None) -> Callable[..., Any]:
    """chat, ask: the agent of a Python file exposing `run_agent` (the active agent when None), or the error
    saying none is set."""
    from agentmap.interface.agent import load_active_agent

    return load_active_agent(path)


def agent_for(workflow: str | os.PathLike[str] | CompiledWorkflow, *, options: CompileOptions) -> Callable[..., Any]:
    """chat, ask, eval run: a workflow as a `run_agent` agent (its state keys as `interface.agent.agent_for`
    finds them), compiled with the settings' `options`."""
    from agentmap.interface.agent import agent_for

    return agent_for(workflow, options=options)


def resolve_agent_config(config: Mapping[str, Any] | None = None) -> AgentConfig:
    """chat, ask: check `--agent-config` once, before the first turn."""
    from agentmap.interface.agent_config import resolve_agent_config

    return resolve_agent_config(config)


def ask(
    agent: Callable[..., Any],
    prompt: str,
    *,
    as_json: bool = False,
    memory: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> Coroutine[Any, Any, str]:
    """ask: one prompt to the agent, its reply as text (the whole output as JSON with `as_json`), awaited by the
    command."""
    from agentmap.interface.chat import ask

    return ask(agent, prompt, as_json=as_json, memory=memory, config=config)


if TYPE_CHECKING:  # the real signature, for the type checker; the call below forwards to it
    from agentmap.interface.chat import chat_loop
else:

    def chat_loop(*args: Any, **kwargs: Any) -> Any:
        """chat: the conversation on the terminal until /exit or Ctrl-D (its log written to `log_path`), awaited by
        the command."""
        from agentmap.interface.chat import chat_loop

        return chat_loop(*args, **kwargs)


# eval run, eval score, eval diff


def load_scenarios(path: str | os.PathLike[str]) -> list[Scenario]:
    """eval run: the scenarios file, checked."""
    from agentmap.interface.scenarios import load_scenarios

    return load_scenarios(path)


if TYPE_CHECKING:  # the real signature, for the type checker; the call below forwards to it
    from agentmap.interface.eval_runner import run_eval
else:

    def run_eval(*args: Any, **kwargs: Any) -> Any:
        """eval run: each scenario against the agent, the logs written to `out_dir`, awaited by the command."""
        from agentmap.interface.eval_runner import run_eval

        return run_eval(*args, **kwargs)


def score_logs(
    logs_dir: str | os.PathLike[str], *, expectations: str | os.PathLike[str] | None = None, judge: Judge | None = None
) -> EvalReport:
    """eval score, eval diff: the conversation logs of a folder scored (with their expectations and a judge)."""
    from agentmap.interface.evaluate import score_logs

    return score_logs(logs_dir, expectations=expectations, judge=judge)


def score_batch_output(path: str | os.PathLike[str]) -> EvalReport:
    """eval score --batch-output: a batch's output table scored."""
    from agentmap.interface.batch_scores import score_batch_output

    return score_batch_output(path)


def load_rubric(path: str | os.PathLike[str]) -> str:
    """eval score --rubric: the judge's criteria from a file."""
    from agentmap.interface.judge import load_rubric

    return load_rubric(path)


def make_llm_judge(
    model: str, *, rubric: str | None = None, threshold: int = 3, settings: Mapping[str, Any] | None = None
) -> Judge:
    """eval score --judge: a model judging each run against the rubric's criteria."""
    from agentmap.interface.judge import make_llm_judge

    return make_llm_judge(model, rubric=rubric, threshold=threshold, settings=settings)


def render_table(report: EvalReport, console: Any = None) -> None:
    """eval score: the report as a table on the terminal."""
    from agentmap.interface.report import render_table

    render_table(report, console)


def report_html(report: EvalReport) -> str:
    """eval score --report: the report as one HTML page."""
    from agentmap.interface.report import report_html

    return report_html(report)


def diff_reports(base: EvalReport, new: EvalReport) -> EvalDiff:
    """eval diff: what changed between two scored folders, regressions included."""
    from agentmap.interface.compare import diff_reports

    return diff_reports(base, new)


def describe(change: ScenarioChange) -> str:
    """eval diff: one scenario's change in words."""
    from agentmap.interface.compare import describe

    return describe(change)


def diff_html(diff: EvalDiff, base: EvalReport, new: EvalReport) -> str:
    """eval diff --html: the comparison as one HTML page."""
    from agentmap.interface.diff_report import diff_html

    return diff_html(diff, base, new)


def junit_xml(diff: EvalDiff) -> str:
    """eval diff --junit: the comparison as JUnit XML for CI."""
    from agentmap.interface.compare import junit_xml

    return junit_xml(diff)


# logs


def configured_log_path(settings: Mapping[str, Any] | None = None) -> Path | None:
    """logs: the decision log the settings name (None when decision logging is off)."""
    from agentmap.llm.decision_log import configured_log_path

    return configured_log_path(settings)


def dumps(value: Any) -> str:
    """logs, and JSON output: a value as JSON the way the decision log writes it (what JSON cannot hold as text)."""
    from agentmap.llm.decision_log import dumps

    return dumps(value)


# batch


def table_format(path: Path, what: str) -> str:
    """batch: the format of an input or output table from its suffix, or the error naming the ones read."""
    from agentmap.batch.tables import table_format

    return table_format(path, what)


def executor_named(name: str) -> Executor:
    """batch --executor: the executor of that name, or the error listing them."""
    from agentmap.batch.executors import executor_named

    return executor_named(name)


def partial_path(output: Path) -> Path:
    """batch: where a stopped batch keeps the rows it finished, for `--resume`."""
    from agentmap.batch.resume import partial_path

    return partial_path(output)


def stop_worker_processes(timeout: float = 5.0) -> None:
    """batch: no worker process outlives the command (bounded wait)."""
    from agentmap.batch.executors import stop_worker_processes

    stop_worker_processes(timeout)


def flush_traces() -> None:
    """batch, serve: the spans a tracer still holds go out before the command ends (also on Ctrl-C)."""
    from agentmap.observe.tracing import flush_traces

    flush_traces()


# serve, studio, mcp


def require_key(host: str, api_key: str | None) -> None:
    """serve, studio: refuse to listen beyond this machine without an API key (before anything starts)."""
    from agentmap.server import require_key

    require_key(host, api_key)


def serve(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8123, log_level: str = "info") -> None:
    """serve: the HTTP server until Ctrl-C."""
    from agentmap.server import serve

    serve(config, host=host, port=port, log_level=log_level)


if TYPE_CHECKING:  # the real signature, for the type checker; the call below forwards to it
    from agentmap.studio import studio
else:

    def studio(*args: Any, **kwargs: Any) -> Any:
        """studio: the editor's server until Ctrl-C (`started` hears its address once it listens)."""
        from agentmap.studio import studio

        return studio(*args, **kwargs)


def serve_stdio(targets: Sequence[str | Path], *, checkpoint: str = "memory", options: CompileOptions) -> None:
    """mcp: the graphs as MCP tools on stdin/stdout, compiled with the settings' `options`."""
    from agentmap.protocols.mcp_stdio import serve_stdio

    serve_stdio(targets, checkpoint=checkpoint, options=options)


_NAMES = {
    "ACTIVE_AGENT_ENV": "agentmap.interface.agent",  # chat, ask, serve: the variable naming the active agent
    "TokenWriter": "agentmap.runtime.streaming",  # run: the callback printing an LLM node's text as it streams
    "FuncRef": "agentmap.spec.models",  # scaffold: a `func:` router to write a stub for
    "SQLiteDecisionLog": "agentmap.llm.decision_log",  # logs: the decision log read
    "BatchInterrupted": "agentmap.batch.results",  # batch: Ctrl-C, the rows done kept
    "BatchOverBudget": "agentmap.batch.results",  # batch --budget: stopped by its budget
    "ServeConfig": "agentmap.server",  # serve: what the server serves, built from the options
    "StudioConfig": "agentmap.studio",  # studio: the file edited and its options
    # types a command only annotates with (imported under TYPE_CHECKING there; here so `import *` finds them)
    "Durability": "agentmap.runtime.durable",
    "EvalDiff": "agentmap.interface.compare",
    "EvalReport": "agentmap.interface.scores",
    "EvalRunSummary": "agentmap.interface.eval_runner",
    "RowResult": "agentmap.batch.rows",
    "Settings": "agentmap.config",
    "Targets": "agentmap.spec.models",
}

__getattr__, __dir__ = lazy_exports(__name__, _NAMES)
