"""A workflow's `custom_agents/` and `functions/` hold to its folder as its data folders do (csv_specs/security.md):
a folder that is a symbolic link out, or a file in it that leads out (itself, or through a subfolder that is a link
out), is neither read nor imported, and `run` and `validate` refuse the workflow at the cell that names the code,
unless the person running it allows where the link leads (`--allow-root`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import agentmap

# Runs when imported: the marker says the code outside ran.
_CODE = """
from pathlib import Path
Path({marker!r}).write_text("ran", encoding="utf-8")
from agentmap import BaseAgent

class EvilAgent(BaseAgent):
    def process(self, inputs):
        return "evil"

def evil(state, success_target=None, failure_target=None):
    "A router, and a tool."
    return "B"
"""

_FLOWS = {
    "custom_agents": "GraphName,Node,AgentType,Output_Field\nG,A,evil,out\n",
    "functions": "GraphName,Node,AgentType,Output_Field,Edge\nG,A,echo,out,func:evil\nG,B,echo,done,\n",
}
_CELL = {"custom_agents": "flow.csv:2:AgentType", "functions": "flow.csv:2:Edge"}


def _layout(tmp_path: Path, kind: str, case: str) -> tuple[Path, Path, Path]:
    """The project (holding flow.csv), the folder outside it holding evil.py, and the marker evil.py writes."""
    project, outside, marker = tmp_path / "project", tmp_path / "outside", tmp_path / "ran"
    project.mkdir()
    outside.mkdir()
    (outside / "evil.py").write_text(_CODE.format(marker=str(marker)), encoding="utf-8")
    (project / "flow.csv").write_text(_FLOWS[kind], encoding="utf-8")
    folder = project / kind
    if case == "folder":  # custom_agents -> ../outside
        folder.symlink_to(outside, target_is_directory=True)
    elif case == "file":  # custom_agents/evil.py -> ../../outside/evil.py
        folder.mkdir()
        (folder / "evil.py").symlink_to(outside / "evil.py")
    else:  # custom_agents/vendor -> ../../outside, custom_agents/evil.py -> vendor/evil.py (a link that looks local)
        folder.mkdir()
        (folder / "vendor").symlink_to(outside, target_is_directory=True)
        (folder / "evil.py").symlink_to(Path("vendor") / "evil.py")
    return project, outside, marker


@pytest.mark.parametrize("case", ["folder", "file", "subfolder"])
@pytest.mark.parametrize("kind", ["custom_agents", "functions"])
def test_code_reached_through_a_link_out_of_the_project_is_refused_and_never_runs(
    tmp_path: Path, kind: str, case: str
) -> None:
    project, _, marker = _layout(tmp_path, kind, case)
    for command in (["validate", "flow.csv"], ["run", "flow.csv"]):
        result = agentmap(*command, cwd=project)
        assert result.code == 4, result.text  # before: 0, and the code outside ran
        assert f"{_CELL[kind]}: error[code-outside-roots]" in result.plain
        assert "--allow-root" in result.plain
        assert not marker.exists()


@pytest.mark.parametrize("case", ["folder", "file", "subfolder"])
@pytest.mark.parametrize("kind", ["custom_agents", "functions"])
def test_allowing_where_the_link_leads_lets_the_code_run(tmp_path: Path, kind: str, case: str) -> None:
    project, outside, marker = _layout(tmp_path, kind, case)
    result = agentmap("run", "flow.csv", "--allow-root", outside, cwd=project)
    assert result.code == 0, result.text
    assert marker.read_text(encoding="utf-8") == "ran"


def test_a_link_inside_the_project_is_followed(tmp_path: Path) -> None:
    project, _, marker = _layout(tmp_path, "custom_agents", "file")
    shared = project / "shared"
    shared.mkdir()
    (shared / "evil.py").write_text((tmp_path / "outside" / "evil.py").read_text(encoding="utf-8"), encoding="utf-8")
    (project / "custom_agents" / "evil.py").unlink()
    (project / "custom_agents" / "evil.py").symlink_to(shared / "evil.py")
    assert agentmap("run", "flow.csv", cwd=project).code == 0
    assert marker.exists()


def test_a_file_of_a_tool_folder_that_leads_out_of_the_project_is_refused(tmp_path: Path) -> None:
    project, outside, marker = _layout(tmp_path, "custom_agents", "folder")
    (project / "custom_agents").unlink()
    (project / "tools").mkdir()
    (project / "tools" / "evil.py").symlink_to(outside / "evil.py")
    (project / "flow.csv").write_text(
        'GraphName,Node,AgentType,Context,Output_Field,Tool_Source\nG,A,tool,"{""tool"": ""evil""}",out,tools\n',
        encoding="utf-8",
    )
    result = agentmap("validate", "flow.csv", cwd=project)
    assert result.code == 4 and "flow.csv:2:Tool_Source: error[bad-config]" in result.plain, result.text
    assert "is a symbolic link to" in result.plain and not marker.exists()
    assert agentmap("validate", "flow.csv", "--allow-root", outside, cwd=project).code == 0
