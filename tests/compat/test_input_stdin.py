"""`input` nodes read piped stdin, one line per node; with nothing to read they say what to pass."""

from __future__ import annotations

from pathlib import Path

from compat_helpers import cli, write

FLOW = """
GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge
G,First,input,First name?,,first,Last
G,Last,input,Last name?,,last,Greet
G,Greet,template,"Hello, {first} {last}!",first|last,greeting,
"""


def test_each_input_node_reads_one_piped_line(tmp_path: Path) -> None:
    write(tmp_path, {"flow.csv": FLOW})
    result = cli("run", tmp_path / "flow.csv", "--json", stdin="Ada\nLovelace\n")
    assert result.code == 0, result.text
    assert result.json()["state"]["greeting"] == "Hello, Ada Lovelace!"


def test_nothing_left_to_read_fails_saying_what_to_pass(tmp_path: Path) -> None:
    write(tmp_path, {"flow.csv": FLOW})
    result = cli("run", tmp_path / "flow.csv", "--json", stdin="Ada\n")
    assert result.code == 1
    (error,) = result.json()["errors"][:1]
    assert error.startswith("Error in Last:") and "--state" in error and "--resume" in error
