"""Files the commands write (export -o, init, scaffold, chat --log, eval run --out): folders are made,
and a path that cannot be written is a usage error (exit 2) named before any work, never a traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_helpers import COMMAND, GRAPHS, ROOT, Result, agentmap, write
from timing import scaled


def _assert_cannot_write(result: Result, path: Path) -> None:
    assert result.code == 2, result.text
    assert "cannot write" in result.err and str(path) in result.err, result.err
    assert "error[internal]" not in result.err and "Traceback" not in result.text


def test_export_makes_the_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper" / "hello.mmd"
    result = agentmap("export", GRAPHS / "hello_world.csv", "-o", out)
    assert result.code == 0, result.text
    assert "graph TD" in out.read_text()


def test_export_into_a_file_that_is_not_a_folder(tmp_path: Path) -> None:
    blocker = write(tmp_path / "taken", "x")
    _assert_cannot_write(agentmap("export", GRAPHS / "hello_world.csv", "-o", blocker / "x.mmd"), blocker / "x.mmd")


def test_init_and_scaffold_below_a_file(tmp_path: Path) -> None:
    blocker = write(tmp_path / "taken", "x")
    _assert_cannot_write(agentmap("init", blocker / "project"), blocker / "project")
    csv = write(tmp_path / "flow.csv", "GraphName,Node,AgentType\nG,A,brand_new_type\n")
    write(tmp_path / "agentmap.yaml", "paths:\n  custom_agents: taken/agents\n")
    _assert_cannot_write(agentmap("scaffold", csv, cwd=tmp_path), blocker / "agents")


@pytest.mark.slow
def test_chat_log_that_cannot_be_written_stops_before_the_chat(tmp_path: Path) -> None:
    blocker = write(tmp_path / "taken", "x")
    proc = subprocess.run(
        [*COMMAND, "chat", str(GRAPHS / "llm_offline.csv"), "--log", str(blocker / "s.log")],
        input="hello\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=scaled(120),
    )
    result = Result(proc.returncode, proc.stdout, proc.stderr)
    _assert_cannot_write(result, blocker / "s.log")
    assert proc.stdout == ""  # the agent was never asked


def test_eval_out_that_cannot_be_written(tmp_path: Path) -> None:
    blocker = write(tmp_path / "taken", "x")
    scenarios = write(tmp_path / "s.csv", "scenario,turn,user_message\na,1,hello\n")
    result = agentmap("eval", "run", scenarios, "--workflow", GRAPHS / "llm_offline.csv", "--out", blocker / "out")
    _assert_cannot_write(result, blocker / "out")
