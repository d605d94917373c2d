"""Each compile sees the built-in and registered agent types plus its own custom agents folder, no other's."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentmap
from agentmap.errors import WorkflowValidationError

_SHOUT = """\
import agentmap


class ShoutAgent(agentmap.BaseAgent):
    def process(self, inputs):
        return {where!r}


@agentmap.agent("whisper_{where}")
class WhisperAgent(agentmap.BaseAgent):
    def process(self, inputs):
        return "psst"
"""

CSV = "GraphName,Node,AgentType,Output_Field\nG,S,{agent},said\n"


def _project(root: Path, where: str | None, agent: str = "shout") -> Path:
    root.mkdir()
    if where is not None:
        (root / "custom_agents").mkdir()
        (root / "custom_agents" / "shout.py").write_text(_SHOUT.format(where=where), encoding="utf-8")
    csv = root / "flow.csv"
    csv.write_text(CSV.format(agent=agent), encoding="utf-8")
    return csv


def test_two_compiles_with_different_folders_do_not_see_each_others_types(tmp_path: Path) -> None:
    a, b = _project(tmp_path / "a", "a"), _project(tmp_path / "b", "b")
    assert agentmap.compile(a).invoke({}).state["said"] == "a"
    assert agentmap.compile(b).invoke({}).state["said"] == "b"
    assert agentmap.compile(a).invoke({}).state["said"] == "a"  # and back: no folder wins for the rest of the process
    none = _project(tmp_path / "none", None)
    with pytest.raises(WorkflowValidationError) as caught:
        agentmap.compile(none)
    assert [i.code for i in caught.value.issues] == ["unknown-agent-type"]


def test_a_type_a_folder_file_registers_by_decorator_stays_with_that_folder(tmp_path: Path) -> None:
    a = _project(tmp_path / "a", "a", agent="whisper_a")
    for _ in range(2):  # the second compile finds the file's module imported already
        assert agentmap.compile(a).invoke({}).state["said"] == "psst"
    assert agentmap.registry.get("whisper_a") is None
    other = _project(tmp_path / "other", None, agent="whisper_a")
    assert [i.code for i in agentmap.validate(other)] == ["unknown-agent-type"]
