"""Parallel branches of one run writing one file: every row arrives, the file is never torn."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from timing import scaled

import agentmap
from agentmap.storage import _files, tables

BRANCHES = 8


def _fanout(tmp_path: Path, agent_type: str, prompt: str) -> Path:
    names = [f"W{i}" for i in range(BRANCHES)]
    rows = [
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge",
        f"Fan,Start,default,go,,started,{'|'.join(names)}",
        *(f"Fan,{n},{agent_type},{prompt},value_{i}:value,out_{i},Join" for i, n in enumerate(names)),
        f"Fan,Join,{agent_type.replace('writer', 'reader')},{prompt},,everything,",
    ]
    path = tmp_path / "fan.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _slow_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Widen the read-then-write window so that unserialised writers would overlap."""

    def slowed(read: Any) -> Any:
        def slow(path: Path, encoding: str, *args: Any, **kwargs: Any) -> Any:
            found = read(path, encoding, *args, **kwargs)
            time.sleep(0.02)
            return found

        return slow

    monkeypatch.setattr(tables, "read_csv", slowed(_files.read_csv))
    monkeypatch.setattr(tables, "read_text", slowed(_files.read_text))


def _state() -> dict[str, Any]:
    return {f"value_{i}": f"v{i}" for i in range(BRANCHES)}


def test_parallel_csv_appends_keep_every_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "log.csv").write_text("value\nearlier\n", encoding="utf-8")
    _slow_reads(monkeypatch)
    result = agentmap.run(_fanout(tmp_path, "csv_writer", "log.csv"), _state())
    assert result.success, result.errors
    assert sorted(r["value"] for r in result.state["everything"]) == sorted(
        ["earlier", *(f"v{i}" for i in range(BRANCHES))]
    )
    assert not list((tmp_path / "data").glob("*.tmp"))


def test_without_the_lock_the_same_run_loses_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above can fail: with the per-file lock taken away, concurrent appends overwrite each other."""

    @contextlib.contextmanager
    def no_lock(path: Path) -> Iterator[None]:
        yield

    monkeypatch.setattr(tables, "file_lock", no_lock)
    _slow_reads(monkeypatch)
    result = agentmap.run(_fanout(tmp_path, "csv_writer", "log.csv"), _state())
    assert len(result.state["everything"]) < BRANCHES


def test_parallel_json_and_file_appends_keep_every_entry(tmp_path: Path) -> None:
    result = agentmap.run(_fanout(tmp_path, "json_writer", "log.json"), _state())
    assert sorted(result.state["everything"]) == sorted(f"v{i}" for i in range(BRANCHES))
    text = agentmap.run(_fanout(tmp_path, "file_writer", "log.txt"), _state()).state["everything"]
    assert sorted(text.splitlines()) == sorted(f"v{i}" for i in range(BRANCHES))
    assert json.loads((tmp_path / "data" / "log.json").read_text(encoding="utf-8"))  # whole, valid JSON


def test_a_crash_while_writing_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "data" / "keep.csv"
    target.parent.mkdir()
    target.write_text("a\n1\n", encoding="utf-8")

    def crash(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)  # the os module _files calls
    with pytest.raises(OSError, match="disk full"):
        _files.write_atomic(target, "a\n1\n2\n", "utf-8")
    assert target.read_text(encoding="utf-8") == "a\n1\n"
    assert [p.name for p in target.parent.iterdir()] == ["keep.csv"]


_APPENDER = """
import logging, sys
from pathlib import Path
from agentmap.agents.base import AgentEnvironment
from agentmap.runtime.tracking import ExecutionTracker
from agentmap.storage import CSVWriterAgent

agent = CSVWriterAgent("W", "shared.csv", {"input_fields": ["who", "n"]}, logging.getLogger("w"), ExecutionTracker())
agent.environment = AgentEnvironment(base_dir=Path(sys.argv[1]))
for n in range(int(sys.argv[3])):
    assert agent.run({"who": sys.argv[2], "n": n})["last_action_success"]
"""


@pytest.mark.slow
def test_separate_processes_appending_to_one_file_keep_every_row(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "append.py"
    script.write_text(_APPENDER, encoding="utf-8")
    workers = [
        subprocess.Popen([sys.executable, str(script), str(tmp_path), f"p{i}", "25"], stderr=subprocess.PIPE, text=True)
        for i in range(4)
    ]
    assert all(w.wait(timeout=scaled(120)) == 0 for w in workers), [w.stderr.read() for w in workers if w.stderr]
    lines = (tmp_path / "data" / "shared.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "who,n" and len(lines) == 1 + 4 * 25
    assert sorted(lines[1:]) == sorted(f"p{i},{n}" for i in range(4) for n in range(25))
