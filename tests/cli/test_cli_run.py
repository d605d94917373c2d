"""`agentmap run` through the real command: output, initial state, exit codes, bad input and Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import COMMAND, GRAPHS, ROOT, agentmap, agentmap_tty, write
from components import clean_env
from timing import deadline, scaled

_RAISING_AGENT = '''\
import agentmap


class FlakyAgent(agentmap.BaseAgent):
    """Raises for the amount 13, succeeds otherwise."""

    def process(self, inputs):
        if inputs.get("amount") == 13:
            raise ValueError("amount 13 is unlucky")
        return f"charged {inputs.get('amount')}"
'''

_BLOCKING_AGENT = '''\
import pathlib
import time

import agentmap


class BlockAgent(agentmap.BaseAgent):
    """Writes a marker file, then blocks for a minute."""

    def process(self, inputs):
        pathlib.Path(self.context["marker"]).write_text("started")
        time.sleep(60)
        return "never"
'''


def _project(tmp_path: Path, csv: str, agents: dict[str, str] | None = None) -> Path:
    for name, code in (agents or {}).items():
        write(tmp_path / "custom_agents" / f"{name}.py", code)
    return write(tmp_path / "flow.csv", csv)


def test_json_document_holds_final_state_and_summary() -> None:
    result = agentmap("run", "graphs/hello_world.csv", "--state", '{"name": "Ada"}', "--json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert document["success"] is True and document["exit_code"] == 0
    assert document["graph"] == "HelloWorld"
    assert document["state"]["greeting"] == "Hello, Ada!"
    assert [entry["name"] for entry in document["summary"]] == ["Greet", "Finish"]
    assert all(entry["success"] for entry in document["summary"])
    assert "Traceback" not in result.err


def test_stdout_not_a_terminal_means_json_without_the_flag() -> None:
    result = agentmap("run", "graphs/hello_world.csv", "--state", '{"name": "Grace"}')
    assert json.loads(result.out)["state"]["greeting"] == "Hello, Grace!"
    assert result.err == ""  # no progress on stderr when it is not a terminal


def test_default_state_file_beside_the_workflow(tmp_path: Path) -> None:
    result = agentmap("run", "graphs/hello_world.csv")
    expected = json.loads((GRAPHS / "hello_world.state.json").read_text())["name"]
    document = json.loads(result.out)
    assert document["state"]["greeting"] == f"Hello, {expected}!"
    assert document["state_file"].endswith("hello_world.state.json")


def test_state_file_option(tmp_path: Path) -> None:
    state = write(tmp_path / "ada.json", '{"name": "Lovelace"}')
    result = agentmap("run", "graphs/hello_world.csv", "--state-file", state)
    assert json.loads(result.out)["state"]["greeting"] == "Hello, Lovelace!"


def test_values_json_cannot_hold_are_written_as_text(tmp_path: Path) -> None:
    agent = """\
import datetime
import agentmap


class ClockAgent(agentmap.BaseAgent):
    def process(self, inputs):
        return datetime.date(2024, 2, 29)
"""
    csv = _project(tmp_path, "GraphName,Node,AgentType,Output_Field\nG,Tick,clock,when\n", {"clock": agent})
    result = agentmap("run", csv, "--json", cwd=tmp_path)
    assert result.code == 0, result.err
    assert json.loads(result.out)["state"]["when"] == "2024-02-29"


@pytest.mark.slow
def test_terminal_shows_summary_table_final_state_and_verdict() -> None:
    result = agentmap_tty("run", "graphs/parallel.csv", "--state", '{"city": "Porto"}')
    assert result.code == 0, result.out
    tail = result.out[result.out.rfind("Briefing (") :]  # after the live view: the summary printed once
    for node in ("Start", "Weather", "News", "Agenda", "Join"):
        assert node in tail
    assert "Final state" in tail and "Weather in Porto: sunny" in tail
    assert "succeeded" in tail
    assert "\x1b[32m" in result.out  # coloured in a terminal


@pytest.mark.slow
def test_no_color_is_honoured_in_a_terminal() -> None:
    result = agentmap_tty("run", "graphs/hello_world.csv", env={"NO_COLOR": "1"})
    assert result.code == 0, result.out
    assert "Hello, " in result.out
    for colour in ("\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[1;32m", "\x1b[38;"):
        assert colour not in result.out


@pytest.mark.slow
def test_json_flag_in_a_terminal_prints_only_json_on_stdout(tmp_path: Path) -> None:
    result = agentmap_tty("run", "graphs/hello_world.csv", "--json", env={"NO_COLOR": "1"})
    document = json.loads(result.out[result.out.index("{") : result.out.rindex("}") + 1])
    assert document["state"]["greeting"].startswith("Hello, ")


def test_agent_that_raises_takes_failure_next_and_exits_0(tmp_path: Path) -> None:
    csv = _project(
        tmp_path,
        (
            "GraphName,Node,AgentType,Input_Fields,Output_Field,Success_Next,Failure_Next,Prompt\n"
            "Pay,Charge,flaky,amount,receipt,Thanks,Refund,\n"
            "Pay,Thanks,template,receipt,message,,,Thanks: {receipt}\n"
            "Pay,Refund,template,amount,message,,,Refunded {amount}\n"
        ),
        {"flaky": _RAISING_AGENT},
    )
    failed = agentmap("run", csv, "--state", '{"amount": 13}', cwd=tmp_path)
    assert failed.code == 0  # the workflow handles Charge's failure: Refund is its Failure_Next
    document = json.loads(failed.out)
    assert document["state"]["message"] == "Refunded 13"
    assert [(e["name"], e["success"]) for e in document["summary"]] == [("Charge", False), ("Refund", True)]
    assert any("amount 13 is unlucky" in e for e in document["errors"])
    assert "Traceback" not in failed.err

    passed = agentmap("run", csv, "--state", '{"amount": 5}', cwd=tmp_path)
    assert passed.code == 0
    assert json.loads(passed.out)["state"]["message"] == "Thanks: charged 5"


@pytest.mark.slow
def test_failed_node_is_reported_in_the_terminal(tmp_path: Path) -> None:
    csv = _project(
        tmp_path,
        "GraphName,Node,AgentType,Input_Fields,Output_Field\nPay,Charge,flaky,amount,r\n",
        {"flaky": _RAISING_AGENT},
    )
    result = agentmap_tty("run", csv, "--state", '{"amount": 13}', cwd=tmp_path, env={"NO_COLOR": "1"})
    assert result.code == 1
    assert "amount 13 is unlucky" in result.plain
    assert "failed under the all_nodes success policy (failed: Charge)" in result.plain
    assert "Traceback" not in result.plain


def test_router_returning_an_unknown_node_is_a_runtime_error(tmp_path: Path) -> None:
    write(tmp_path / "functions" / "lost.py", "def lost(state, success, failure):\n    return 'Nowhere'\n")
    csv = write(tmp_path / "flow.csv", "GraphName,Node,AgentType,Edge\nG,A,echo,func:lost\nG,B,echo,\n")
    result = agentmap("run", csv, cwd=tmp_path)
    assert result.code == 5
    assert "error[bad-route]" in result.err and "'Nowhere'" in result.err
    assert "Traceback" not in result.err
    assert json.loads(result.out)["error"]["code"] == "bad-route"


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    write(tmp_path / "functions" / "lost.py", "def lost(state, success, failure):\n    return 'Nowhere'\n")
    csv = write(tmp_path / "flow.csv", "GraphName,Node,AgentType,Edge\nG,A,echo,func:lost\nG,B,echo,\n")
    result = agentmap("run", csv, "--debug", cwd=tmp_path)
    assert result.code == 5
    assert "Traceback" in result.err and "error[bad-route]" in result.err


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["graphs/helo_world.csv"], 3, ["does not exist", "hello_world.csv"]),
        (["graphs"], 3, ["is a directory", "hello_world.csv"]),
        (["pyproject.toml"], 3, ["is not a workflow file", "save the spreadsheet as CSV"]),
        (["graphs/hello_world.csv::Nope"], 3, ["has no graph 'Nope'", "HelloWorld"]),
        (["graphs/subgraph.csv::Mian"], 3, ["has no graph 'Mian'", "did you mean 'Main'?"]),
        (["graphs/hello_world.csv", "--state", "[1, 2]"], 2, ["must be a JSON object", "--state '{"]),
        (["graphs/hello_world.csv", "--state", "{name: Ada}"], 2, ["not valid JSON", "line 1"]),
        (["graphs/hello_world.csv", "--state-file", "no_state.json"], 3, ["state file no_state.json does not exist"]),
        (["graphs/hello_world.csv", "--state", "{}", "--state-file", "x.json"], 2, ["not both"]),
        ([], 2, ["no workflow file given", "workflow:"]),
    ],
)
def test_bad_input_gets_one_paragraph_and_its_exit_code(args: list[str], code: int, words: list[str]) -> None:
    result = agentmap("run", *args)
    assert result.code == code, result.err
    for word in words:
        assert word in result.err
    assert result.err.startswith("error[")
    assert "\n\n" not in result.err.strip()  # one paragraph
    assert "Traceback" not in result.err


def test_state_file_that_is_not_utf8_text(tmp_path: Path) -> None:
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"name": "\u00e9"}'.encode("latin-1"))
    csv = write(tmp_path / "hello.csv", (GRAPHS / "hello_world.csv").read_text())
    csv.with_name("hello.state.json").write_bytes(latin.read_bytes())
    for args in (["--state-file", str(latin)], []):
        result = agentmap("run", csv, *args)
        assert result.code == 2, result.err
        assert result.err.startswith("error[bad-state]") and "not UTF-8 text" in result.err
        assert "Traceback" not in result.err and "internal" not in result.err


def test_csv_without_graph_rows_is_a_validation_error(tmp_path: Path) -> None:
    csv = write(tmp_path / "empty.csv", "GraphName,Node,AgentType\n# nothing yet\n")
    result = agentmap("run", csv)
    assert result.code == 4
    assert "no graph rows" in result.err and "add one row per node" in result.err
    assert "Traceback" not in result.err


def test_binary_file_named_csv(tmp_path: Path) -> None:
    csv = tmp_path / "image.csv"
    csv.write_bytes(b"\x89PNG\x00\x00\x01binary")
    result = agentmap("run", csv)
    assert result.code == 3
    assert "not CSV text" in result.err and "Traceback" not in result.err


def test_validation_errors_name_row_and_column(tmp_path: Path) -> None:
    csv = write(tmp_path / "flow.csv", "GraphName,Node,AgentType,Edge\nG,A,ecko,B\nG,B,echo,Missing\n")
    result = agentmap("run", csv)
    assert result.code == 4
    assert f"{csv}:2:AgentType" in result.err and "did you mean 'echo'" in result.err
    assert f"{csv}:3:Edge" in result.err and "Missing" in result.err
    assert "Traceback" not in result.err


def test_workflow_from_the_config_file(tmp_path: Path) -> None:
    write(
        tmp_path / "flow.csv",
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nG,Hi,template,Hi {who},who,line\n",
    )
    write(tmp_path / "agentmap.yaml", "workflow: flow.csv\n")
    result = agentmap("run", "--state", '{"who": "there"}', cwd=tmp_path)
    assert result.code == 0, result.err
    assert json.loads(result.out)["state"]["line"] == "Hi there"


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_names_the_running_node(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    csv = _project(
        tmp_path,
        (
            "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Context\n"
            "Slow,First,echo,x,y,Wait,\n"
            f'Slow,Wait,block,y,z,,"{{""marker"": ""{marker}""}}"\n'
        ),
        {"block": _BLOCKING_AGENT},
    )
    env = clean_env()
    proc = subprocess.Popen(
        [*COMMAND, "run", str(csv), "--state", '{"x": 1}', "--json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        give_up = deadline(60)
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < give_up, "the blocking node never started"
            time.sleep(0.05)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=scaled(30))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert time.monotonic() - started < 20  # it did not wait for the node's minute-long sleep
    assert "interrupted" in err and "'Wait' was running" in err and "finished before: First" in err
    assert "Traceback" not in err
    document = json.loads(out)
    assert document["interrupted"] is True and document["running"] == ["Wait"]


@pytest.mark.slow
def test_python_dash_m_and_console_script_agree() -> None:
    script = Path(sys.executable).with_name("agentmap")
    if not script.exists():
        pytest.skip("the agentmap console script is not installed beside this interpreter")
    proc = subprocess.run(
        [str(script), "run", "graphs/hello_world.csv", "--state", '{"name": "X"}'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["state"]["greeting"] == "Hello, X!"


def test_store_nodes_keep_items_between_runs_in_the_default_checkpoint_file(tmp_path: Path) -> None:
    flows = (
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge\n"
        'Save,Put,store_writer,"{""namespace"": [""users"", ""{user}""], ""key"": ""profile""}",user|lang,saved,\n'
        'Load,Get,store_reader,"{""namespace"": ""users.{user}"", ""key"": ""profile""}",user,profile,\n'
    )
    (tmp_path / "memory.csv").write_text(flows, encoding="utf-8")
    plain = agentmap("run", "memory.csv::Load", "--state", '{"user": "ada"}', cwd=tmp_path)
    assert plain.code == 0 and json.loads(plain.out)["state"].get("profile") is None  # nothing kept yet
    assert agentmap("run", "memory.csv::Save", "--state", '{"user": "ada", "lang": "pt"}', cwd=tmp_path).code == 0
    loaded = agentmap("run", "memory.csv::Load", "--state", '{"user": "ada"}', cwd=tmp_path)  # another run
    assert json.loads(loaded.out)["state"]["profile"] == {"user": "ada", "lang": "pt"}
    assert (tmp_path / ".agentmap" / "runs.db").is_file()
