"""What the command line needs beyond the public API (`agentmap.__all__`), in one documented place.

`agentmap.cli` imports only `agentmap` (the public API), `agentmap.errors` and this module; the
import-linter contracts in pyproject.toml check it. Everything here is internal: it may change between
releases without notice, and other code should not import it. Names are imported on first use, like the
public API's, so `agentmap --help` imports no runtime.

To let a command use something new: add `name -> home module` to `_HOMES` (and the import under
`TYPE_CHECKING` for type checkers); prefer adding to the public API when a user could want it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmap._lazy import lazy_exports

if TYPE_CHECKING:
    from agentmap.agents._agent_log import is_trace
    from agentmap.agents.journal import journal_entries
    from agentmap.agents.questions import example_answer
    from agentmap.agents.registry import normalize_type
    from agentmap.batch.executors import executor_named, stop_worker_processes
    from agentmap.batch.results import BatchInterrupted, BatchOverBudget
    from agentmap.batch.resume import partial_path
    from agentmap.batch.rows import RowResult
    from agentmap.batch.tables import table_format
    from agentmap.config import Settings, load_settings
    from agentmap.interface.agent import ACTIVE_AGENT_ENV, active_agent_target, agent_for, load_active_agent
    from agentmap.interface.agent_config import resolve_agent_config
    from agentmap.interface.batch_scores import score_batch_output
    from agentmap.interface.chat import ask, chat_loop
    from agentmap.interface.compare import EvalDiff, describe, diff_reports, junit_xml
    from agentmap.interface.diff_report import diff_html
    from agentmap.interface.eval_runner import EvalRunSummary, run_eval
    from agentmap.interface.evaluate import score_logs
    from agentmap.interface.judge import load_rubric, make_llm_judge
    from agentmap.interface.report import render_table, report_html
    from agentmap.interface.scenarios import load_scenarios
    from agentmap.interface.scores import EvalReport
    from agentmap.llm.decision_log import SQLiteDecisionLog, configured_log_path, dumps
    from agentmap.observe.eject import eject
    from agentmap.observe.tracing import flush_traces
    from agentmap.protocols.mcp_stdio import serve_stdio
    from agentmap.runtime.api import select_graph
    from agentmap.runtime.checkpoint import checkpoint_exists, checkpoint_target, resolve_checkpointer
    from agentmap.runtime.durable import Durability, open_thread, saved_state_keys
    from agentmap.runtime.events import flush_observers
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.streaming import TokenWriter
    from agentmap.runtime.threads import thread_history
    from agentmap.server import ServeConfig, require_key, serve
    from agentmap.spec.models import FuncRef, Targets
    from agentmap.studio import StudioConfig, studio

__all__ = [  # noqa: RUF022 (grouped by command)
    # settings (every command), and the logging they configure
    "Settings",
    "Durability",
    "load_settings",
    "is_trace",
    # run, validate, inspect, export, scaffold
    "eject",
    "FuncRef",
    "Targets",
    "normalize_type",
    "resolve_checkpointer",
    "select_graph",
    "TokenWriter",
    # run --thread, resume, threads: durable runs and their checkpoints
    "checkpoint_exists",
    "checkpoint_target",
    "open_thread",
    "saved_state_keys",
    "thread_history",
    # threads show --calls: the call journal
    "journal_entries",
    # chat, ask, eval run, serve
    "ACTIVE_AGENT_ENV",
    "active_agent_target",
    "agent_for",
    "ask",
    "chat_loop",
    "load_active_agent",
    "resolve_agent_config",
    # eval run, eval score, eval diff
    "EvalDiff",
    "EvalReport",
    "EvalRunSummary",
    "load_rubric",
    "load_scenarios",
    "make_llm_judge",
    "render_table",
    "report_html",
    "run_eval",
    "score_logs",
    "score_batch_output",
    "describe",
    "diff_html",
    "diff_reports",
    "junit_xml",
    # logs
    "SQLiteDecisionLog",
    "configured_log_path",
    "dumps",
    # run, batch, serve: spans still buffered go out before the command ends
    "flush_observers",
    "flush_traces",
    # batch: no worker process outlives the command; the tables, a stopped batch and its partial results
    "stop_worker_processes",
    "executor_named",
    "BatchInterrupted",
    "BatchOverBudget",
    "RowResult",
    "partial_path",
    "table_format",
    # export --format svg|png|dot
    "picture",
    # serve, studio
    "ServeConfig",
    "StudioConfig",
    "require_key",
    "serve",
    "studio",
    # run, resume: the answer a paused node's hint shows
    "example_answer",
    # mcp: the graphs as MCP tools over stdio
    "serve_stdio",
]

_HOMES = {
    "Settings": "agentmap.config",
    "Durability": "agentmap.runtime.durable",
    "load_settings": "agentmap.config",
    "is_trace": "agentmap.agents._agent_log",
    "FuncRef": "agentmap.spec.models",
    "Targets": "agentmap.spec.models",
    "normalize_type": "agentmap.agents.registry",
    "resolve_checkpointer": "agentmap.runtime.checkpoint",
    "stop_worker_processes": "agentmap.batch.executors",
    "executor_named": "agentmap.batch.executors",
    "example_answer": "agentmap.agents.questions",
    "select_graph": "agentmap.runtime.api",
    "TokenWriter": "agentmap.runtime.streaming",
    "checkpoint_exists": "agentmap.runtime.checkpoint",
    "checkpoint_target": "agentmap.runtime.checkpoint",
    "open_thread": "agentmap.runtime.durable",
    "saved_state_keys": "agentmap.runtime.durable",
    "thread_history": "agentmap.runtime.threads",
    "journal_entries": "agentmap.agents.journal",
    "ACTIVE_AGENT_ENV": "agentmap.interface.agent",
    "active_agent_target": "agentmap.interface.agent",
    "agent_for": "agentmap.interface.agent",
    "ask": "agentmap.interface.chat",
    "chat_loop": "agentmap.interface.chat",
    "load_active_agent": "agentmap.interface.agent",
    "resolve_agent_config": "agentmap.interface.agent_config",
    "EvalDiff": "agentmap.interface.compare",
    "describe": "agentmap.interface.compare",
    "diff_html": "agentmap.interface.diff_report",
    "diff_reports": "agentmap.interface.compare",
    "junit_xml": "agentmap.interface.compare",
    "EvalReport": "agentmap.interface.scores",
    "EvalRunSummary": "agentmap.interface.eval_runner",
    "load_rubric": "agentmap.interface.judge",
    "load_scenarios": "agentmap.interface.scenarios",
    "make_llm_judge": "agentmap.interface.judge",
    "render_table": "agentmap.interface.report",
    "report_html": "agentmap.interface.report",
    "run_eval": "agentmap.interface.eval_runner",
    "score_logs": "agentmap.interface.evaluate",
    "score_batch_output": "agentmap.interface.batch_scores",
    "SQLiteDecisionLog": "agentmap.llm.decision_log",
    "configured_log_path": "agentmap.llm.decision_log",
    "dumps": "agentmap.llm.decision_log",
    "eject": "agentmap.observe.eject",
    "flush_traces": "agentmap.observe.tracing",
    "flush_observers": "agentmap.runtime.events",
    "serve_stdio": "agentmap.protocols.mcp_stdio",
    "BatchInterrupted": "agentmap.batch.results",
    "BatchOverBudget": "agentmap.batch.results",
    "RowResult": "agentmap.batch.rows",
    "partial_path": "agentmap.batch.resume",
    "table_format": "agentmap.batch.tables",
    "ServeConfig": "agentmap.server",
    "require_key": "agentmap.server",
    "serve": "agentmap.server",
    "StudioConfig": "agentmap.studio",
    "studio": "agentmap.studio",
}


def picture(app: CompiledWorkflow, fmt: str) -> str | bytes:
    """`agentmap export --format svg|png|dot`: the graph drawn offline (PNG needs the `draw` extra)."""
    from agentmap.observe.draw import draw_graph, to_png
    from agentmap.observe.outputs import to_dot

    if fmt == "dot":
        return to_dot(app)
    svg = draw_graph(app)
    return to_png(svg) if fmt == "png" else svg


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
