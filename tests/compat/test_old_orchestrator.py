"""An orchestrator row of AgentMap 0.9 (no planner) routes by matching the request against Descriptions."""

from __future__ import annotations

from pathlib import Path

import pytest
from compat_helpers import cli, write

FLOW = """
GraphName,Node,AgentType,Input_Fields,Output_Field,Success_Next,Failure_Next,Prompt,Context,Description
gm,GetInput,input,,user_input,Router,,What would you like to do?,,
gm,Router,orchestrator,user_input,selected_action,,,Route to the best action,ROUTING,
gm,GetDrink,default,user_input,result,End,,Getting you a drink,,Order a drink such as beer or wine
gm,GetFood,default,user_input,result,End,,Getting you food,,Order food such as pizza or soup
gm,Help,default,user_input,result,End,,I can get you food or drinks,,
gm,End,success,result,,,,Task completed,,
""".replace(
    "ROUTING", '"{nodes: GetDrink|GetFood, matching_strategy: tiered, confidence_threshold: 0.7, default_target: Help}"'
)


@pytest.mark.parametrize(
    ("request_text", "chosen"),
    [("I'd like a beer", "GetDrink"), ("some pizza please", "GetFood"), ("hello there", "Help")],
)
def test_the_request_picks_the_node_and_default_target_catches_the_rest(
    tmp_path: Path, request_text: str, chosen: str
) -> None:
    write(tmp_path, {"gm.csv": FLOW})
    result = cli("run", tmp_path / "gm.csv", "--json", stdin=request_text + "\n")
    assert result.code == 0, result.text
    data = result.json()
    assert data["state"]["selected_action"] == chosen
    assert [s["name"] for s in data["summary"]] == ["GetInput", "Router", chosen, "End"]


def test_the_old_row_validates_saying_the_llm_strategy_is_not_used(tmp_path: Path) -> None:
    write(tmp_path, {"gm.csv": FLOW})
    result = cli("validate", tmp_path / "gm.csv")
    assert result.code == 0 and "(0 errors, 2 warnings)" in result.out, result.out
    assert "warning[context-unquoted-keys]" in result.out
    note = next(line for line in result.out.splitlines() if "legacy-spelling" in line)
    assert "gm.csv:3:Context: warning" in note and "matching_strategy='tiered'" in note and "no model call" in note


def test_no_match_and_no_default_fails_the_node_saying_what_to_set(tmp_path: Path) -> None:
    write(tmp_path, {"gm.csv": FLOW.replace(", default_target: Help", "")})
    result = cli("run", tmp_path / "gm.csv", "--json", stdin="hello there\n")
    assert result.code == 1
    assert 'set Context "default_target"' in result.json()["errors"][0]


def test_a_modern_orchestrator_missing_its_planner_is_still_reported(tmp_path: Path) -> None:
    write(tmp_path, {"o.csv": 'GraphName,Node,AgentType,Context\nG,Run,orchestrator,"{""max_retries"": 1}"\n'})
    assert 'an orchestrator needs "planner"' in cli("validate", tmp_path / "o.csv").out


def test_the_choice_wins_over_success_next_and_a_failure_takes_failure_next(tmp_path: Path) -> None:
    flow = """
    GraphName,Node,AgentType,Input_Fields,Output_Field,Success_Next,Failure_Next,Context,Description
    G,Router,orchestrator,request,choice,Fallback,Sorry,"{nodes: Tea|Coffee}",
    G,Tea,default,,served,,,,Brew a cup of green tea
    G,Coffee,default,,served,,,,Brew an espresso coffee
    G,Fallback,default,,served,,,,
    G,Sorry,default,,apology,,,,
    """
    write(tmp_path, {"g.csv": flow})
    chosen = cli("run", tmp_path / "g.csv", "--state", '{"request": "green tea please"}', "--json")
    assert [s["name"] for s in chosen.json()["summary"]] == ["Router", "Tea"]
    failed = cli("run", tmp_path / "g.csv", "--state", '{"request": "water"}', "--json")
    assert [s["name"] for s in failed.json()["summary"]] == ["Router", "Sorry"]
