"""`agentmap export --format python`: a standalone LangGraph module that runs as the workflow does."""

from __future__ import annotations

import ast
import json
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ROOT, agentmap

GRAPHS = sorted((ROOT / "graphs").glob("*.csv"))
EJECTED = {"hello_world", "branching", "parallel", "custom_router", "batch_example"}
"""The workflows of graphs/ made only of agents the module writes out; the others are refused by name."""


def _eject(workflow: Path | str, tmp_path: Path) -> Path:
    target = tmp_path / "flow.py"
    result = agentmap("export", workflow, "--format", "python", "-o", target)
    assert result.code == 0, result.text
    return target


def _final(workflow: Path, state: dict[str, Any]) -> dict[str, Any]:
    result = agentmap("run", workflow, "--state", json.dumps(state), "--json")
    final: dict[str, Any] = json.loads(result.out)["state"]
    return final


@pytest.mark.parametrize("workflow", GRAPHS, ids=lambda p: p.stem)
def test_the_module_ends_in_the_workflows_final_state(workflow: Path, tmp_path: Path) -> None:
    if workflow.stem not in EJECTED:
        refused = agentmap("export", workflow, "--format", "python")
        assert refused.code == 2 and refused.out == "", refused.text
        assert "cannot-eject" in refused.err and "cannot eject node '" in refused.err and "Traceback" not in refused.err
        return
    module = runpy.run_path(str(_eject(workflow, tmp_path)))
    states = [json.loads(workflow.with_suffix(".state.json").read_text(encoding="utf-8"))]
    if workflow.stem == "branching":
        states.append({"request": "a boat", "approved": "no"})  # the Failure_Next branch
    if workflow.stem == "custom_router":
        states.append({"amount": 20})  # the other lane
    for state in states:
        assert module["run"](state) == _final(workflow, state)


def test_the_module_imports_only_langgraph_and_the_standard_library(tmp_path: Path) -> None:
    tree = ast.parse(_eject("graphs/custom_router.csv", tmp_path).read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert {name.split(".")[0] for name in imported} <= {
        "json",
        "operator",
        "sys",
        "collections",
        "typing",
        "langgraph",
        "importlib",
    }
    assert "choose_lane" in ast.unparse(tree)  # the func: router, imported from its file


def test_running_the_module_prints_the_final_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = _eject("graphs/hello_world.csv", tmp_path)
    monkeypatch.setattr(sys, "argv", [str(flow), '{"name": "Ada"}'])
    runpy.run_path(str(flow), run_name="__main__")
    printed = json.loads(capsys.readouterr().out)
    assert printed["message"] == "Done.\n\ngreeting: Hello, Ada!" and printed["graph_success"] is True


def test_a_node_it_cannot_write_out_is_refused_with_its_cell(tmp_path: Path) -> None:
    workflow = tmp_path / "mixed.csv"
    workflow.write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        "G,Greet,template,Hi {name},name,greeting,Ask\n"
        "G,Ask,human,Go on?,greeting,answer,\n",
        encoding="utf-8",
    )
    result = agentmap("export", workflow, "--format", "python", "-o", tmp_path / "flow.py")
    assert result.code == 2, result.text
    assert f"{workflow}:3:AgentType" in result.err and "'Ask'" in result.err and "'human'" in result.err
    assert not (tmp_path / "flow.py").exists()
