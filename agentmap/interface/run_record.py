"""The run records of `agentmap eval run`: what each run did beyond its words (final state, nodes, tool calls, a
simulated user's goal), read by `expected_state` and `expected_trajectory`.

They live in one append-only file beside the manifest, `runs.jsonl`: one JSON line per finished run, appended
once its log is whole on disk, so a line is also the mark that its run is done (the resume of a killed eval run
redoes a run without one). Folders written before this file existed keep `<log stem>.run.json` beside each log;
they are still read.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RUN_RECORDS_NAME", "RunRecord", "RunRecordWriter", "RunRecords"]

RUN_RECORDS_NAME = "runs.jsonl"
"""The run records' file in a logs folder, beside `manifest.json`."""

_LEGACY_SUFFIX = ".run.json"
"""Before `runs.jsonl`, each log's record was `<log stem>.run.json` beside it."""


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

    def line(self, log: str) -> str:
        """The record as one `runs.jsonl` line for the log file named `log`."""
        data: dict[str, Any] = {"log": log, "state": self.state, "nodes": self.nodes, "tool_calls": self.tool_calls}
        if self.goal is not None:
            data["goal"] = self.goal
        # compact: the C encoder (an indented dump takes the pure-Python one)
        return json.dumps(data, ensure_ascii=False, default=str) + "\n"


class RunRecords:
    """The run records of a logs folder, as read: `runs.jsonl` (the last line of a log wins; a torn or damaged
    line is ignored) or, in a folder without one, `<log stem>.run.json` beside each log."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.lines: dict[str, dict[str, Any]] | None = None
        """The lines of `runs.jsonl` by log name, or None when the folder has none."""
        try:
            with open(self.folder / RUN_RECORDS_NAME, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            return
        self.lines = {}
        for raw in text.split("\n"):
            try:
                line = json.loads(raw)
            except ValueError:  # the torn last line of a killed run, or a damaged one: that run is not done
                continue
            if isinstance(line, dict) and isinstance(line.get("log"), str):
                self.lines[line["log"]] = line

    def done(self, log: str) -> bool | None:
        """Whether the run of the log named `log` was marked done; None in a folder without `runs.jsonl` (its
        logs were written whole or not at all)."""
        return None if self.lines is None else log in self.lines

    def get(self, log: str) -> dict[str, Any] | None:
        """The record of the log named `log`, or None when there is none."""
        line = (self.lines or {}).get(log)
        if line is not None and "nodes" in line:
            return {key: value for key, value in line.items() if key != "log"}
        # a folder from before runs.jsonl, or a log adopted from one (a line with only `log`)
        stem = Path(log).stem
        try:
            record = json.loads((self.folder / f"{stem}{_LEGACY_SUFFIX}").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def where(self) -> str:
        """Where the records are looked for, for messages."""
        return RUN_RECORDS_NAME if self.lines is not None else f"{RUN_RECORDS_NAME} or <log>{_LEGACY_SUFFIX}"


class RunRecordWriter:
    """Appends the run records of one eval run to `runs.jsonl`, one line per finished run, from any thread.

    Opened, it rewrites the file with the lines of the folder's runs in `logs` except those in `redo`: a run
    redone counts as done again only once its new line is written. In a folder from before `runs.jsonl`, each
    existing log is kept as a line with only its `log` (its record stays in `<log stem>.run.json`).
    """

    def __init__(self, old: RunRecords, logs: Collection[str], redo: Collection[str]) -> None:
        folder = old.folder
        kept = [log for log in logs if log not in redo]
        if old.lines is None:
            lines = [{"log": log} for log in kept if (folder / log).is_file()]
        else:
            lines = [old.lines[log] for log in kept if log in old.lines]
        target = folder / RUN_RECORDS_NAME
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".runs", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._file = open(target, "a", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed by close())
        self._lock = threading.Lock()

    def add(self, log: str, record: RunRecord) -> None:
        """Append the record of the run whose log, named `log`, is now whole on disk: the run is done (unless the
        eval run has ended: a run left in its thread then stays to be redone)."""
        line = record.line(log)
        with self._lock:
            if self._file.closed:
                return
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
