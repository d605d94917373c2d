"""`agentmap validate`: findings with file:row:column, severity, code and fix; exit 0 on warnings only."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_helpers import agentmap, write

_BROKEN = (
    "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Context\n"
    "G,A,ecko,x,y,B,\n"
    "G,B,echo,y,z,Missing,\n"
    "G,C,echo,z,w,,{not json\n"
)


def test_valid_file() -> None:
    result = agentmap("validate", "graphs/hello_world.csv")
    assert result.code == 0, result.text
    assert "graphs/hello_world.csv is valid (0 errors, 0 warnings)" in result.out


def test_errors_are_listed_with_location_code_and_fix(tmp_path: Path) -> None:
    csv = write(tmp_path / "flow.csv", _BROKEN)
    result = agentmap("validate", csv)
    assert result.code == 4
    lines = result.out.splitlines()
    unknown = next(line for line in lines if "unknown-agent-type" in line)
    assert unknown.startswith(f"{csv}:2:AgentType: error[unknown-agent-type]") and "did you mean 'echo'" in unknown
    assert any(line.startswith(f"{csv}:3:Edge: error[") and "Missing" in line for line in lines)
    assert any(line.startswith(f"{csv}:4:Context: error[") for line in lines)
    assert any(line.strip().startswith("fix: ") for line in lines)
    assert lines[-1].startswith(f"{csv}: 3 errors")
    assert "Traceback" not in result.text


def test_warnings_only_exit_0(tmp_path: Path) -> None:
    csv = write(tmp_path / "flow.csv", "GraphName,Node,AgentType,Edge\nG,A,echo,\nG,Orphan,echo,\n")
    result = agentmap("validate", csv)
    assert result.code == 0, result.text
    assert f"{csv}:3:" in result.out and "warning[" in result.out
    assert "is valid (0 errors, 1 warning)" in result.out


def test_json_report(tmp_path: Path) -> None:
    csv = write(tmp_path / "flow.csv", _BROKEN)
    result = agentmap("validate", csv, "--json")
    assert result.code == 4
    report = json.loads(result.out)
    assert report["valid"] is False and report["errors"] == 3 and report["exit_code"] == 4
    unknown = next(i for i in report["issues"] if i["code"] == "unknown-agent-type")
    assert (unknown["file"], unknown["row"], unknown["column"], unknown["severity"]) == (
        str(csv),
        2,
        "AgentType",
        "error",
    )
    assert unknown["node"] == "A" and unknown["fix"]
    assert {i["row"] for i in report["issues"]} == {2, 3, 4}


def test_one_graph_with_option_or_selector(tmp_path: Path) -> None:
    csv = write(tmp_path / "two.csv", "GraphName,Node,AgentType\nGood,A,echo\nBad,B,nosuchtype\n")
    for args in (["--graph", "Good"], []):
        target = str(csv) if args else f"{csv}::Good"
        result = agentmap("validate", target, *args, "--json")
        assert result.code == 0, result.text
        assert json.loads(result.out)["valid"] is True
    assert agentmap("validate", csv).code == 4


def test_missing_file_and_unknown_graph_exit_3_as_run_does(tmp_path: Path) -> None:
    missing = agentmap("validate", tmp_path / "nope.csv")
    assert missing.code == 3 and "does not exist" in missing.err
    unknown = agentmap("validate", "graphs/subgraph.csv::Nope")
    assert unknown.code == 3 and "has no graph 'Nope'" in unknown.err and "Main" in unknown.err
    for result in (missing, unknown):
        assert "Traceback" not in result.text


def test_findings_are_listed_in_row_order(tmp_path: Path) -> None:
    # The checks run in passes (cells, then types, then routes); the user reads the file top to bottom.
    csv = write(
        tmp_path / "flow.csv",
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\n"
        "G,A,echo,,a,func:nowhere\n"
        "G,B,nosuchtype,a,b,\n"
        "G,C,echo,never_written,c,\n",
    )
    for args in ([], ["--json"]):
        result = agentmap("validate", csv, *args)
        assert result.code == 4, result.text
        if args:
            rows = [i["row"] for i in json.loads(result.out)["issues"]]
        else:
            rows = [int(m) for m in re.findall(rf"^{re.escape(str(csv))}:(\d+):", result.out, re.MULTILINE)]
        assert len(rows) >= 3 and rows == sorted(rows), rows


def test_without_file_checks_the_configured_workflow(tmp_path: Path) -> None:
    write(tmp_path / "flow.csv", "GraphName,Node,AgentType\nG,A,nosuchtype\n")
    write(tmp_path / "agentmap.yaml", "workflow: flow.csv\n")
    result = agentmap("validate", cwd=tmp_path)
    assert result.code == 4, result.text
    assert "flow.csv:2:AgentType: error[unknown-agent-type]" in result.out
    (tmp_path / "elsewhere").mkdir()
    bare = agentmap("validate", cwd=tmp_path / "elsewhere")
    assert bare.code == 2 and "no workflow file given" in bare.err
