"""What the command line needs beyond the public API (`agentmap.__all__`): a short list of named operations.

`agentmap.cli` imports only `agentmap` (the public API), `agentmap.errors` and this package; the import-linter
contracts in pyproject.toml check it. Each submodule holds the operations of one command group (`settings`,
`graphs`, `threads`, `values`, `versions`, `conversation`, `evaluation`, `logs`, `batch`, `servers`), re-exported
here in `__all__`, grouped the same way. Each function says which command needs it and for what; it imports its room
when called, so `agentmap --help` imports no runtime. The few classes a command builds or catches are lazily
re-exported at the end (`_NAMES`, with the variable naming the active agent); types a command only annotates with
are under `TYPE_CHECKING`. Everything here is internal: it may change between releases without notice, and other
code should not import it. Prefer adding to the public API when a user could want it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmap._cli_api.batch import (
    batch_status,
    executor_named,
    flush_traces,
    partial_path,
    status_command,
    stop_worker_processes,
    table_format,
)
from agentmap._cli_api.conversation import (
    active_agent_target,
    agent_for,
    ask,
    chat_loop,
    load_active_agent,
    resolve_agent_config,
)
from agentmap._cli_api.evaluation import (
    describe,
    diff_html,
    diff_reports,
    junit_xml,
    load_rubric,
    load_scenarios,
    make_llm_judge,
    render_table,
    report_html,
    run_eval,
    score_batch_output,
    score_logs,
)
from agentmap._cli_api.graphs import eject, normalize_type, picture, select_graph
from agentmap._cli_api.logs import configured_log_path, dumps
from agentmap._cli_api.servers import quota, require_key, serve, serve_stdio, studio
from agentmap._cli_api.settings import is_trace, load_settings
from agentmap._cli_api.threads import (
    checkpoint_exists,
    checkpoint_target,
    example_answer,
    journal_entries,
    open_thread,
    saved_state_keys,
    thread_history,
    typed_answer,
)
from agentmap._cli_api.values import read_json_value, state_key_problem, value_problem
from agentmap._cli_api.versions import diff_workflows, read_migration
from agentmap._lazy import lazy_exports

if TYPE_CHECKING:
    from agentmap.batch.results import BatchInterrupted, BatchOverBudget
    from agentmap.batch.rows import RowResult
    from agentmap.config import Settings
    from agentmap.interface.agent import ACTIVE_AGENT_ENV
    from agentmap.interface.compare import EvalDiff
    from agentmap.interface.eval_runner import EvalRunSummary
    from agentmap.interface.scores import EvalReport
    from agentmap.llm.decision_log import SQLiteDecisionLog
    from agentmap.runtime.durable import Durability, Thread
    from agentmap.runtime.options import MissingInputs
    from agentmap.runtime.streaming import TokenWriter
    from agentmap.runtime.values import Problem
    from agentmap.server import ServeConfig
    from agentmap.spec.models import FuncRef, Targets
    from agentmap.studio import StudioConfig

__all__ = [  # noqa: RUF022 (grouped by command)
    # every command: the settings, and the log lines they let through (`settings`)
    "load_settings",
    "is_trace",
    # run, validate, inspect, export, scaffold (`graphs`)
    "select_graph",
    "normalize_type",
    "eject",
    "picture",
    # run --thread, resume, threads: durable runs and their checkpoints (`threads`)
    "checkpoint_exists",
    "checkpoint_target",
    "open_thread",
    "saved_state_keys",
    "thread_history",
    "journal_entries",
    "example_answer",
    "typed_answer",
    # run --state, resume --data, chat --agent-config: a JSON value given on the command line (`values`)
    "read_json_value",
    "value_problem",
    "state_key_problem",
    # diff, resume --migrate: what an edit does to waiting threads, migration maps (`versions`)
    "diff_workflows",
    "read_migration",
    # chat, ask, eval run, serve: a workflow as a conversational agent (`conversation`)
    "active_agent_target",
    "load_active_agent",
    "agent_for",
    "resolve_agent_config",
    "ask",
    "chat_loop",
    # eval run, eval score, eval diff (`evaluation`)
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
    # logs (`logs`)
    "configured_log_path",
    "dumps",
    # batch (`batch`)
    "table_format",
    "executor_named",
    "partial_path",
    "stop_worker_processes",
    "batch_status",
    "status_command",
    # batch, serve: spans still buffered go out before the command ends (`batch`)
    "flush_traces",
    # serve, studio, mcp (`servers`)
    "require_key",
    "quota",
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
    "MissingInputs",
    "Problem",
    "RowResult",
    "Settings",
    "Targets",
    "Thread",
]

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
    "MissingInputs": "agentmap.runtime.options",
    "Problem": "agentmap.runtime.values",
    "RowResult": "agentmap.batch.rows",
    "Settings": "agentmap.config",
    "Targets": "agentmap.spec.models",
    "Thread": "agentmap.runtime.durable",
}

__getattr__, __dir__ = lazy_exports(__name__, _NAMES)
