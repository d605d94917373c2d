"""Any workflow as an agent (`run_agent`, csv_specs/run_agent.md) and the run -> conversation log -> evaluate pipeline
(csv_specs/evaluation.md). Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmap._lazy import lazy_exports

if TYPE_CHECKING:
    from agentmap.interface.agent import agent_for, load_active_agent, run_agent
    from agentmap.interface.chat import ask, chat_loop
    from agentmap.interface.eval_runner import run_eval
    from agentmap.interface.evaluate import score_logs
    from agentmap.interface.judge import load_rubric, make_llm_judge
    from agentmap.interface.logs import LogFormatError, parse_log, read_log, write_log
    from agentmap.interface.scenarios import load_scenarios

_HOMES = {
    "agent_for": "agentmap.interface.agent",
    "load_active_agent": "agentmap.interface.agent",
    "run_agent": "agentmap.interface.agent",
    "ask": "agentmap.interface.chat",
    "chat_loop": "agentmap.interface.chat",
    "run_eval": "agentmap.interface.eval_runner",
    "score_logs": "agentmap.interface.evaluate",
    "load_rubric": "agentmap.interface.judge",
    "make_llm_judge": "agentmap.interface.judge",
    "LogFormatError": "agentmap.interface.logs",
    "parse_log": "agentmap.interface.logs",
    "read_log": "agentmap.interface.logs",
    "write_log": "agentmap.interface.logs",
    "load_scenarios": "agentmap.interface.scenarios",
}
__all__ = [
    "LogFormatError",
    "agent_for",
    "ask",
    "chat_loop",
    "load_active_agent",
    "load_rubric",
    "load_scenarios",
    "make_llm_judge",
    "parse_log",
    "read_log",
    "run_agent",
    "run_eval",
    "score_logs",
    "write_log",
]
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
