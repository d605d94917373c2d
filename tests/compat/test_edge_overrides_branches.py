"""Edge beside Success_Next/Failure_Next on one row (the old hello-world template): Edge wins, with a warning."""

from __future__ import annotations

from pathlib import Path

from compat_helpers import cli, write

# The `agentmap init` template and examples/hello_world.csv of AgentMap 0.9, as shipped.
HELLO = """
graph_name,node_name,agent_type,next_node,on_failure,prompt,input_fields,output_field
HelloWorld,Start,input,PrintResult,HandleError,"Hello world! What is your name? ",,name
HelloWorld,PrintResult,echo,,,"Hello {name}. Welcome to AgentMap!",name,result
HelloWorld,HandleError,echo,,,Error occurred
"""


def test_old_hello_world_validates_with_a_warning_naming_the_ignored_cell(tmp_path: Path) -> None:
    write(tmp_path, {"hello_world.csv": HELLO})
    result = cli("validate", tmp_path / "hello_world.csv")
    assert result.code == 0, result.text
    line = next(x for x in result.out.splitlines() if "edge-overrides-branches" in x)
    assert "hello_world.csv:2:next_node: warning" in line
    assert "on_failure=HandleError" in line and "'PrintResult' is followed always" in line


def test_old_hello_world_runs_with_the_name_piped_in(tmp_path: Path) -> None:
    write(tmp_path, {"hello_world.csv": HELLO})
    result = cli("run", tmp_path / "hello_world.csv", "--json", stdin="Ada\n")
    assert result.code == 0, result.text
    state = result.json()["state"]
    assert state["name"] == "Ada"
    assert state["result"] == {"name": "Ada"}  # echo returns all its inputs (see csv_specs/migrating.md)
    assert [s["name"] for s in result.json()["summary"]] == ["Start", "PrintResult"]


def test_edge_is_followed_even_when_the_node_fails(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "flow.csv": """
            GraphName,Node,AgentType,Edge,Failure_Next,Output_Field
            G,Boom,failure,After,Recover,x
            G,After,default,,,after
            G,Recover,default,,,recovered
            """
        },
    )
    result = cli("run", tmp_path / "flow.csv", "--json")
    names = [s["name"] for s in result.json()["summary"]]
    assert names == ["Boom", "After"]


def test_the_migrating_page_shows_the_template_this_test_runs() -> None:
    page = (Path(__file__).parents[2] / "csv_specs" / "migrating.md").read_text(encoding="utf-8")
    block = page.split("```csv\n", 1)[1].split("```", 1)[0]
    assert block.strip() == HELLO.strip()
