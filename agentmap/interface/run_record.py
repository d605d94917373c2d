"""The run record: beside each log of `agentmap eval run`, `<log stem>.run.json` keeps what the run did beyond
its words (final state, nodes, tool calls, a simulated user's goal), read by `expected_state` and
`expected_trajectory`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RUN_RECORD_SUFFIX", "RunRecord", "run_record_path"]

RUN_RECORD_SUFFIX = ".run.json"
"""Beside each log, `<log stem>.run.json` keeps the run's final state, nodes and tool calls (from a workflow
agent's `state`, `nodes` and `traces`), for `expected_state` and `expected_trajectory`; the log stays as is."""


def run_record_path(log: str | os.PathLike[str]) -> Path:
    """The file beside a log that keeps what the run did: `<log stem>.run.json`."""
    path = Path(log)
    return path.with_name(f"{path.stem}{RUN_RECORD_SUFFIX}")


@dataclass
class RunRecord:
    """What a run did beyond its words, from the agent's output extras: the final state, nodes, tool calls."""

    state: dict[str, Any] | None = None
    nodes: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    goal: dict[str, Any] | None = None

    def add(self, result: Any) -> None:
        if not isinstance(result, Mapping):
            return
        if isinstance(result.get("state"), Mapping):
            self.state = dict(result["state"])
        self.nodes += [str(n) for n in result.get("nodes") or () if isinstance(n, str)]
        for trace in result.get("traces") or ():
            if isinstance(trace, Mapping) and isinstance(trace.get("tool"), str):
                args = trace.get("args")
                self.tool_calls.append({"tool": trace["tool"], "args": dict(args) if isinstance(args, Mapping) else {}})

    def write(self, path: Path) -> None:
        data: dict[str, Any] = {"state": self.state, "nodes": self.nodes, "tool_calls": self.tool_calls}
        if self.goal is not None:
            data["goal"] = self.goal
        # one line: the C encoder (an indented dump takes the pure-Python one, 800 runs cost 1/3 s more)
        path.write_text(json.dumps(data, ensure_ascii=False, default=str), encoding="utf-8")
