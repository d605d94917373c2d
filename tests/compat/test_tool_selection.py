"""A `tool` node with several Available_Tools and no Context tool picks one per request, as 0.9's tool_agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from compat_helpers import cli, write

TOOLS = '''
def uppercase(text: str) -> str:
    """Make the text uppercase."""
    return text.upper()


def reverse(text: str) -> str:
    """Reverse the order of the characters."""
    return text[::-1]
'''

FLOW = """
GraphName,Node,AgentType,Tool_Source,Available_Tools,Prompt,Input_Fields,Output_Field,Context
T,Pick,tool_agent,string_tools.py,TOOLS_CELL,Process the text,text,out,{matching_strategy: algorithm}
""".replace("TOOLS_CELL", '"uppercase(""makes text uppercase"")|reverse(""reverses text"")"')


@pytest.mark.parametrize(
    ("text", "out"), [("please reverse me", "em esrever esaelp"), ("make it uppercase", "MAKE IT UPPERCASE")]
)
def test_the_request_chooses_the_tool(tmp_path: Path, text: str, out: str) -> None:
    write(tmp_path, {"t.csv": FLOW, "string_tools.py": TOOLS})
    assert cli("validate", tmp_path / "t.csv").code == 0
    result = cli("run", tmp_path / "t.csv", "--state", f'{{"text": "{text}"}}', "--json")
    assert result.code == 0, result.text
    assert result.json()["state"]["out"] == out


def test_without_a_match_the_prompt_decides(tmp_path: Path) -> None:
    write(tmp_path, {"t.csv": FLOW.replace("Process the text", "Reverse it"), "string_tools.py": TOOLS})
    result = cli("run", tmp_path / "t.csv", "--state", '{"text": "abc"}', "--json")
    assert result.json()["state"]["out"] == "cba"
