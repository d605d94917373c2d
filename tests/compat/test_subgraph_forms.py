"""The subgraph spellings of AgentMap 0.9: Prompt naming the graph, subgraph_name/csv_path, workflow_field."""

from __future__ import annotations

from pathlib import Path

from compat_helpers import cli, write

FILES = {
    "main.csv": """
    GraphName,Node,AgentType,Context,Prompt,Input_Fields,Output_Field,Success_Next,Failure_Next
    Main,Start,default,,Initialize,,started,ByName,Fail
    Main,ByName,GraphAgent,"subgraph_name:Check",Run the check,started,a,External,Fail
    Main,External,GraphAgent,"subgraph_name:Analysis,csv_path:sub/analysis.csv",Analyse,started,b,ByPrompt,Fail
    Main,ByPrompt,graph,,Check,started,c,Dynamic,Fail
    Main,Dynamic,graph,{workflow_field=which},Pick at run time,started,d,,Fail
    Main,Fail,failure,,Something failed,,,,
    Check,Look,echo,,,started,checked,,
    """,
    "sub/analysis.csv": """
    GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field
    Analysis,Go,template,analysed {started},started,result
    """,
}


def test_every_old_form_runs(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    state = '{"which": "sub/analysis.csv::Analysis"}'
    result = cli("run", tmp_path / "main.csv::Main", "--state", state, "--json")
    assert result.code == 0, result.text
    out = result.json()["state"]
    assert out["a"]["checked"] == {"started": "[Start] Initialize"}
    assert out["b"]["result"] == "analysed [Start] Initialize"
    assert out["c"]["checked"] == {"started": "[Start] Initialize"}
    assert out["d"]["result"] == "analysed [Start] Initialize"


def test_validate_shows_the_modern_spelling(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    result = cli("validate", tmp_path / "main.csv::Main")
    assert result.code == 0, result.text
    assert "main.csv:3:Context: warning[legacy-subgraph]" in result.out
    assert "{workflow=sub/analysis.csv::Analysis}" in result.out
    note = next(line for line in result.out.splitlines() if "legacy-spelling" in line)
    assert "main.csv:5:Prompt: warning" in note and "'Check' is read as the subgraph to run" in note


def test_a_graph_named_by_the_state_is_checked_when_the_node_runs(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    result = cli("run", tmp_path / "main.csv::Main", "--state", '{"which": "::Nope"}', "--json")
    assert result.code == 1
    assert any("Error in Dynamic" in e and "Nope" in e for e in result.json()["errors"])


def test_a_subgraph_path_outside_the_workflow_folder_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "outside", {"x.csv": "GraphName,Node\nX,A\n"})
    write(
        tmp_path / "flow",
        {"main.csv": 'GraphName,Node,AgentType,Context\nM,Call,graph,"subgraph_name:X,csv_path:../outside/x.csv"\n'},
    )
    result = cli("validate", tmp_path / "flow" / "main.csv")
    assert result.code == 4
    assert "outside the folders a workflow may use" in result.out and "allowed_roots: [DIR]" in result.out
    dynamic = "GraphName,Node,AgentType,Context,Output_Field\nM,Call,graph,{workflow_field=which},out\n"
    write(tmp_path / "flow", {"dyn.csv": dynamic})
    state = '{"which": "../outside/x.csv::X"}'
    ran = cli("run", tmp_path / "flow" / "dyn.csv", "--state", state, "--json")
    assert ran.code == 1 and "outside the folders a workflow may use" in ran.json()["errors"][0]


def test_allowed_roots_in_the_settings_admit_another_folder(tmp_path: Path) -> None:
    import agentmap

    write(tmp_path / "shared", {"x.csv": "GraphName,Node,AgentType,Output_Field\nX,A,default,a\n"})
    write(
        tmp_path / "flow",
        {
            "main.csv": "GraphName,Node,AgentType,Context,Output_Field\n"
            'M,Call,graph,"subgraph_name:X,csv_path:../shared/x.csv",out\n'
        },
    )
    settings = {"paths": {"allowed_roots": [str(tmp_path / "shared")]}}
    result = agentmap.run(tmp_path / "flow" / "main.csv", settings=settings)
    assert result.success and result.state["out"]["a"] == "[A] DefaultAgent executed"
