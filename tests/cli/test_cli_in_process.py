"""Commands run in-process by the tests leave the process as they found it (as a separate process would)."""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import sys
from pathlib import Path

import forked
from cli_helpers import agentmap, write
from timing import scaled

from agentmap.agents.registry import registry
from agentmap.cli.render import json_output

_AGENT = """\
import agentmap


class InProcessProbeAgent(agentmap.BaseAgent):
    def process(self, inputs):
        return "HI"
"""


def test_a_run_restores_gc_cwd_output_mode_logging_sigint_and_custom_agents(tmp_path: Path) -> None:
    write(tmp_path / "custom_agents" / "in_process_probe.py", _AGENT)
    csv = write(tmp_path / "flow.csv", "GraphName,Node,AgentType,Output_Field\nG,S,InProcessProbe,said\n")
    gc.unfreeze()  # as in a process that froze nothing (another test may have run a command without main())
    before = (gc.isenabled(), os.getcwd(), logging.getLogger("agentmap").handlers[:], signal.getsignal(signal.SIGINT))
    result = agentmap("run", csv, "--json", "--debug", cwd=tmp_path)
    assert result.code == 0, result.err
    after = (gc.isenabled(), os.getcwd(), logging.getLogger("agentmap").handlers[:], signal.getsignal(signal.SIGINT))
    assert after == before
    assert not json_output()
    assert registry.get("inprocessprobe") is None  # the folder's types belonged to that command's compile
    assert not any(name.endswith("_in_process_probe") for name in sys.modules)
    assert gc.get_freeze_count() == 0


def test_a_json_command_leaves_the_next_command_plain(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    assert agentmap("validate", missing, "--json", cwd=tmp_path).out.startswith("{")
    after = agentmap("inspect", missing, cwd=tmp_path)
    assert after.code != 0
    assert "error[" in after.err
    assert after.out == ""  # no {"error": ...} document: `inspect` promised none


def test_a_batch_puts_back_the_collector_the_sigint_handler_and_the_log_level(tmp_path: Path) -> None:
    csv = write(tmp_path / "flow.csv", "GraphName,Node,AgentType,Input_Fields,Output_Field\nG,S,Echo,text,said\n")
    rows = write(tmp_path / "rows.csv", "text\nhello\nworld\n")

    def ignore(signum: int, frame: object) -> None: ...

    level = logging.getLogger("agentmap").level
    gc.unfreeze()  # as in a process that froze nothing (another test may have run a command without main())
    previous = signal.signal(signal.SIGINT, ignore)
    try:
        result = agentmap("batch", csv, "--input", rows, "--output", tmp_path / "out.csv", cwd=tmp_path)
        assert result.code == 0, result.err
        assert signal.getsignal(signal.SIGINT) is ignore
    finally:
        signal.signal(signal.SIGINT, previous)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert logging.getLogger("agentmap").level == level  # batch silences its per-row log lines meanwhile


def test_a_batch_on_threads_leaves_the_processes_the_host_forked_running(tmp_path: Path) -> None:
    """A program that runs `agentmap batch` in its own process keeps its fork server and the workers it forked
    (before: the command stopped every fork server child of the process, as if its own process batch had started
    them)."""
    csv = write(tmp_path / "flow.csv", "GraphName,Node,AgentType,Input_Fields,Output_Field\nG,S,Echo,text,said\n")
    rows = write(tmp_path / "rows.csv", "text\nhello\nworld\n")
    host_worker = forked.start_python(f"import time; time.sleep({scaled(60)})", cwd=tmp_path)
    try:
        result = agentmap("batch", csv, "--input", rows, "--output", tmp_path / "out.csv", cwd=tmp_path)
        assert result.code == 0, result.err
        assert host_worker.poll() is None
    finally:
        host_worker.send_signal(signal.SIGKILL)
        host_worker.wait(scaled(10))


def test_two_commands_with_different_folders_do_not_see_each_others_types(tmp_path: Path) -> None:
    for name in ("a", "b"):
        write(tmp_path / name / "custom_agents" / "in_process_probe.py", _AGENT.replace('"HI"', repr(name)))
        write(tmp_path / name / "flow.csv", "GraphName,Node,AgentType,Output_Field\nG,S,InProcessProbe,said\n")
    write(tmp_path / "none" / "flow.csv", "GraphName,Node,AgentType,Output_Field\nG,S,InProcessProbe,said\n")
    for name in ("a", "b"):
        result = agentmap("run", tmp_path / name / "flow.csv", "--json", cwd=tmp_path)
        assert result.code == 0, result.err
        assert json.loads(result.out)["state"]["said"] == name
    result = agentmap("validate", tmp_path / "none" / "flow.csv", cwd=tmp_path)
    assert result.code != 0
    assert "unknown-agent-type" in result.out
