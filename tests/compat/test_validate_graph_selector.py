"""`agentmap validate FILE::GRAPH` reports only that graph and the graphs it calls, as `run` compiles them."""

from __future__ import annotations

from pathlib import Path

from compat_helpers import cli, write

FLOW = """
GraphName,Node,AgentType,Context,Output_Field,Edge
Good,Call,graph,{workflow=::Inner},out,
Inner,Step,ecko,,x,
Broken,A,echo,,y,Missing
Broken,B,echo,not json but plain,z,
"""


def test_only_the_selected_graph_and_its_subgraphs_are_reported(tmp_path: Path) -> None:
    write(tmp_path, {"flow.csv": FLOW})
    result = cli("validate", tmp_path / "flow.csv::Good")
    assert result.code == 4
    assert "flow.csv:3:AgentType: error[unknown-agent-type]" in result.out  # Inner, called by Good
    assert "Missing" not in result.out and "context-plain-text" not in result.out  # Broken is not run
    whole = cli("validate", tmp_path / "flow.csv")
    assert "Missing" in whole.out and "context-plain-text" in whole.out


def test_a_clean_graph_of_a_file_with_broken_graphs_is_valid(tmp_path: Path) -> None:
    write(tmp_path, {"flow.csv": FLOW.replace("ecko", "echo")})
    result = cli("validate", tmp_path / "flow.csv::Good")
    assert result.code == 0, result.text
    assert cli("run", tmp_path / "flow.csv::Good", "--json").code == 0
