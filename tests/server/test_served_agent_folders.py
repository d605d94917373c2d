"""A server serving workflows of two folders gives each workflow its own folder's custom agent types. In process."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from agentmap.errors import WorkflowValidationError
from agentmap.server import ServeConfig, create_app

_SHOUT = (
    'import agentmap\n\n\nclass ShoutAgent(agentmap.BaseAgent):\n    def process(self, inputs):\n        return "{}"\n'
)


def test_two_served_folders_each_give_their_own_type(tmp_path: Path) -> None:
    targets = []
    for name in ("A", "B"):
        folder = tmp_path / name
        (folder / "custom_agents").mkdir(parents=True)
        (folder / "custom_agents" / "shout.py").write_text(_SHOUT.format(name), encoding="utf-8")
        csv = folder / "flow.csv"
        csv.write_text(f"GraphName,Node,AgentType,Output_Field\n{name},S,shout,said\n", encoding="utf-8")
        targets.append(str(csv))
    with TestClient(create_app(ServeConfig(targets=tuple(targets), checkpoint="memory"))) as api:
        for name in ("A", "B", "A"):
            answer = api.post("/runs/wait", json={"assistant_id": name, "input": {}})
            assert answer.status_code == 200, answer.text
            assert answer.json()["said"] == name


def test_a_served_workflow_without_a_folder_does_not_borrow_another_workflows_types(tmp_path: Path) -> None:
    with_folder, without = tmp_path / "a", tmp_path / "none"
    (with_folder / "custom_agents").mkdir(parents=True)
    (with_folder / "custom_agents" / "shout.py").write_text(_SHOUT.format("A"), encoding="utf-8")
    without.mkdir()
    for folder, name in ((with_folder, "A"), (without, "N")):
        (folder / "flow.csv").write_text(f"GraphName,Node,AgentType,Output_Field\n{name},S,shout,said\n", "utf-8")
    targets = (str(with_folder / "flow.csv"), str(without / "flow.csv"))
    with pytest.raises(WorkflowValidationError) as caught:
        create_app(ServeConfig(targets=targets, checkpoint="memory"))
    assert [(i.code, i.file) for i in caught.value.issues] == [("unknown-agent-type", str(without / "flow.csv"))]
