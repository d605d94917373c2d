"""An error's paragraph ends with the link to its code's section of csv_specs/errors.md."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import agentmap


def test_the_error_paragraph_links_the_codes_section() -> None:
    result = agentmap("run", "graphs/helo_world.csv")
    assert result.code == 3
    assert result.err.startswith("error[file-not-found]")
    assert result.err.rstrip().endswith("  see: csv_specs/errors.md#file-not-found")
    assert "\n\n" not in result.err.strip()  # still one paragraph


def test_the_json_error_document_carries_the_link() -> None:
    result = agentmap("validate", "graphs/hello_world.csv::Nope", "--json")
    assert result.code == 3
    assert json.loads(result.out)["error"]["docs"] == "csv_specs/errors.md#graph-not-found"


def _router_flow(folder: Path, router: str) -> Path:
    (folder / "functions").mkdir()
    (folder / "functions" / "pick.py").write_text(router, encoding="utf-8")
    path = folder / "flow.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        "G,Start,template,Hi {name},name,greeting,func:pick\n"
        "G,End,echo,,greeting,final,\n",
        encoding="utf-8",
    )
    return path


def test_a_router_that_raises_is_the_workflows_error_naming_router_node_and_cell(tmp_path: Path) -> None:
    flow = _router_flow(tmp_path, "def pick(state, success, failure):\n    return state['missing']\n")
    result = agentmap("run", flow, "--state", '{"name": "Ada"}', "--json")
    assert result.code == 5
    assert result.err.startswith(f"error[router-error]: {flow}:2:Edge: router func:pick of node 'Start' raised")
    assert "KeyError" in result.err and "Traceback" not in result.err
    error = json.loads(result.out)["error"]
    assert error["code"] == "router-error"
    assert error["location"] == {"file": str(flow), "row": 2, "column": "Edge"}


def test_validate_reads_a_routers_signature_and_reports_it_at_the_cell(tmp_path: Path) -> None:
    flow = _router_flow(tmp_path, "def pick(state):\n    return 'End'\n")
    result = agentmap("validate", flow)
    assert result.code == 4
    assert f"{flow}:2:Edge: error[bad-router]" in result.out
    assert "def pick(state, success_target=None, failure_target=None)" in result.out


def test_an_unexpected_exception_is_error_internal_with_a_json_document(tmp_path: Path) -> None:
    (tmp_path / "custom_agents").mkdir()
    (tmp_path / "custom_agents" / "boom.py").write_text(
        "from agentmap import BaseAgent\n\n"
        "class BoomAgent(BaseAgent):\n"
        "    def process(self, inputs):\n"
        "        return 1\n\n"
        "    def run(self, state):\n"
        "        raise RuntimeError('not an agent error')\n",
        encoding="utf-8",
    )
    flow = tmp_path / "flow.csv"
    flow.write_text("GraphName,Node,AgentType\nG,Only,boom\n", encoding="utf-8")
    result = agentmap("run", flow, "--json")
    assert result.code == 5
    assert result.err.startswith("error[internal]: RuntimeError: not an agent error")
    document = json.loads(result.out)
    assert document["error"]["code"] == "internal" and document["exit_code"] == 5
    assert document["error"]["docs"] == "csv_specs/errors.md#internal"


def test_a_validation_errors_json_document_is_located_at_its_first_finding(tmp_path: Path) -> None:
    flow = tmp_path / "flow.csv"
    flow.write_text("GraphName,Node,AgentType,Edge\nG,A,echo,Nowhere\n", encoding="utf-8")
    result = agentmap("run", flow, "--json")
    assert result.code == 4
    assert json.loads(result.out)["error"]["location"] == {"file": str(flow), "row": 2, "column": "Edge"}


def test_recursion_limit_bounds_a_loop_from_the_command_line(tmp_path: Path) -> None:
    flow = tmp_path / "loop.csv"
    flow.write_text("GraphName,Node,AgentType,Edge\nG,A,echo,B\nG,B,echo,A\n", encoding="utf-8")
    result = agentmap("run", flow, "--recursion-limit", "7", "--json")
    assert result.code == 5
    assert result.err.startswith("error[recursion-limit]: the run stopped after reaching the recursion limit (7 ")
    assert "--recursion-limit 28" in result.err  # a value above the one met, not below it
    assert agentmap("run", flow, "--recursion-limit", "0").code == 2  # at least one step


def test_a_loop_without_an_exit_fails_at_the_graphs_own_limit_and_resume_takes_the_option(tmp_path: Path) -> None:
    flow = tmp_path / "loop.csv"
    flow.write_text("GraphName,Node,AgentType,Edge\nG,A,echo,B\nG,B,echo,A\n", encoding="utf-8")
    result = agentmap("run", flow, "--thread", "t1", "--checkpoint", tmp_path / "runs.db", cwd=tmp_path)
    assert result.code == 5
    # ten steps per node, at least 50 (csv_specs/cli.md): LangGraph's own 10,007 took 13-22 s to fail
    assert "recursion limit (50 steps)" in result.err and "--recursion-limit 200" in result.err
    again = agentmap("resume", "t1", "--checkpoint", tmp_path / "runs.db", "--recursion-limit", "9", cwd=tmp_path)
    assert again.code == 5 and "recursion limit (9 steps)" in again.err
    warned = agentmap("validate", flow, cwd=tmp_path)
    assert "endless-loop" in warned.text and "(50 steps for this graph; `--recursion-limit STEPS` sets it)" in (
        " ".join(warned.text.split())
    )
