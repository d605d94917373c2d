"""`agentmap export --format python`: a standalone LangGraph module that runs as the workflow does."""

from __future__ import annotations

import ast
import json
import runpy
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ROOT, agentmap

GRAPHS = sorted(p.relative_to(ROOT / "graphs") for p in (ROOT / "graphs").rglob("*.state.json"))
_TIMING = ("timestamp", "trace_id", "duration_ms", "duration_secs", "queued_ms")
"""What differs between two runs of one workflow: clocks and trace ids (excluded from the comparison)."""


def _eject(workflow: Path | str, tmp_path: Path) -> Path:
    target = tmp_path / "flow.py"
    result = agentmap("export", workflow, "--format", "python", "-o", target)
    assert result.code == 0, result.text
    return target


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in _TIMING}
    return [_untimed(v) for v in value] if isinstance(value, list) else value


def _final(workflow: Path, state: dict[str, Any], cwd: Path) -> Any:
    own = {"AGENTMAP_STATE_DIR": str(cwd / ".agentmap")}
    result = agentmap("run", workflow, "--state", json.dumps(state), "--json", cwd=cwd, env=own)
    return _untimed(json.loads(result.out)["state"])


def test_every_workflow_of_graphs_is_ejected_and_compared() -> None:
    """A workflow added to graphs/ without its `.state.json` (the run both sides start from) would go untested."""
    workflows = {p.relative_to(ROOT / "graphs") for p in (ROOT / "graphs").rglob("*.csv") if "data" not in p.parts}
    assert sorted(str(p.with_suffix("")) for p in workflows) == [str(p).removesuffix(".state.json") for p in GRAPHS]


@pytest.mark.parametrize("name", GRAPHS, ids=lambda p: str(p).removesuffix(".state.json"))
def test_the_module_ends_in_the_workflows_final_state(
    name: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each side runs on its own copy of graphs/ and in its own folder: some tools keep data there
    shutil.copytree(ROOT / "graphs", tmp_path / "cli")
    shutil.copytree(ROOT / "graphs", tmp_path / "module")
    monkeypatch.chdir(tmp_path / "module")
    monkeypatch.setenv("AGENTMAP_STATE_DIR", str(tmp_path / "module" / ".agentmap"))
    workflow = Path(str(name).removesuffix(".state.json") + ".csv")
    module = runpy.run_path(str(_eject(tmp_path / "module" / workflow, tmp_path)))
    state = json.loads((ROOT / "graphs" / name).read_text(encoding="utf-8"))
    ejected = json.loads(json.dumps(module["run"](state), default=str))
    assert _untimed(ejected) == _final(tmp_path / "cli" / workflow, state, tmp_path / "cli")


@pytest.mark.parametrize(
    ("workflow", "state"),
    [("branching.csv", {"request": "a boat", "approved": "no"}), ("custom_router.csv", {"amount": 20})],
)
def test_the_other_branch_too(
    workflow: str, state: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    module = runpy.run_path(str(_eject(ROOT / "graphs" / workflow, tmp_path)))
    assert module["run"](state) == _final(ROOT / "graphs" / workflow, state, tmp_path)


def test_failures_fan_outs_and_every_written_out_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    workflow = tmp_path / "mixed.csv"
    workflow.write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next\n"
        "G,class,default,,,,started,,ok|bad,\n"
        "G,ok,echo,,,x,echoed,,fine,\n"
        "G,bad,failure,broken on purpose,,,,,,\n"
        "G,fine,success,,,,done,join,,\n"
        'G,join,summary,,"{""format"": ""<{key}|{value}>"", ""separator"": """"}",x|echoed|done,report,,,\n'
        'G,odd,summary,,"{""format"": ""{key}{other}""}",x,never,,,\n',
        encoding="utf-8",
    )
    module = runpy.run_path(str(_eject(workflow, tmp_path)))
    final = module["run"]({"x": 1})
    assert final["graph_success"] is False and final["errors"] == ["Error in bad: broken on purpose"]
    assert final == _final(workflow, {"x": 1}, tmp_path)


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
    workflow = tmp_path / "retried.csv"
    workflow.write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
        "G,Greet,template,Hi {name},,name,greeting,Ask\n"
        'G,Ask,echo,,"{""retry"": {""max_attempts"": 2}}",greeting,answer,\n',
        encoding="utf-8",
    )
    result = agentmap("export", workflow, "--format", "python", "-o", tmp_path / "flow.py")
    assert result.code == 2, result.text
    assert f"{workflow}:3:Context" in result.err and "'Ask'" in result.err and "retries" in result.err
    assert "cannot-eject" in result.err and "Traceback" not in result.err
    assert not (tmp_path / "flow.py").exists()


def test_another_success_policy_is_refused(tmp_path: Path) -> None:
    (tmp_path / "agentmap.yaml").write_text("execution:\n  success_policy: final_node\n", encoding="utf-8")
    result = agentmap("export", ROOT / "graphs" / "hello_world.csv", "--format", "python", cwd=tmp_path)
    assert result.code == 2 and result.out == "", result.text
    assert "cannot-eject" in result.err and "final_node" in result.err


def test_a_chat_in_messages_is_refused(tmp_path: Path) -> None:
    workflow = tmp_path / "chat.csv"
    workflow.write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field\n"
        'Chat,Talk,llm,Be brief.,"{""model"": ""offline"", ""memory_key"": ""messages""}",messages,reply|messages\n',
        encoding="utf-8",
    )
    result = agentmap("export", workflow, "--format", "python", "-o", tmp_path / "flow.py")
    assert result.code == 2 and "cannot-eject" in result.err and "'messages'" in result.err, result.text
    assert not (tmp_path / "flow.py").exists()
