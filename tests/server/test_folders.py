"""`agentmap serve FOLDER`: every workflow of the folder and its subfolders, with stable, unique graph ids."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from server_helpers import GRAPHS, serving

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

_HELLO = "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\n{graph},Greet,template,{text} {{name}},name,out\n"


def test_a_folder_is_served_with_its_subfolders(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "flows"
    (folder / "team" / "a").mkdir(parents=True)
    (folder / "team" / "b").mkdir()
    (folder / ".hidden").mkdir()
    (folder / "top.csv").write_text(_HELLO.format(graph="Top", text="Top"), encoding="utf-8")
    (folder / "team" / "a" / "greet.csv").write_text(_HELLO.format(graph="Greet", text="A"), encoding="utf-8")
    (folder / "team" / "b" / "greet.csv").write_text(_HELLO.format(graph="Greet", text="B"), encoding="utf-8")
    (folder / "team" / "solo.csv").write_text(_HELLO.format(graph="Solo", text="Solo"), encoding="utf-8")
    (folder / ".hidden" / "old.csv").write_text(_HELLO.format(graph="Old", text="Old"), encoding="utf-8")
    (folder / "team" / "rows.csv").write_text("ticket,amount\nT-1,40\n", encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="agentmap.server"), serving(folder, checkpoint="memory") as url:
        with sdk.get_sync_client(url=url, api_key=None) as client:
            found = {a["graph_id"]: a for a in client.assistants.search(limit=100)}
            assert set(found) == {"Top", "Solo", "team.a.greet.Greet", "team.b.greet.Greet"}
            assert found["Solo"]["metadata"]["file"].endswith("team/solo.csv")
            done = client.runs.wait(None, "team.b.greet.Greet", input={"name": "Ada"})
            assert done["out"] == "B Ada"
        ids = {a["graph_id"]: a["assistant_id"] for a in found.values()}
    skipped = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("rows.csv, not served: the required column 'GraphName' is missing" in m for m in skipped), skipped
    assert not any("old.csv" in m for m in skipped)
    served = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("serving "))
    assert "team.a.greet.Greet (" in served and "team/a/greet.csv)" in served
    with serving(folder, checkpoint="memory") as url, sdk.get_sync_client(url=url, api_key=None) as client:
        again = {a["graph_id"]: a["assistant_id"] for a in client.assistants.search(limit=100)}
    assert again == ids  # the same ids after a restart


def test_the_shipped_graphs_folder_serves_the_assistant_of_its_subfolder() -> None:
    with serving(GRAPHS, checkpoint="memory") as url, sdk.get_sync_client(url=url, api_key=None) as client:
        found = {a["graph_id"] for a in client.assistants.search(limit=100)}
    assert {"Assistant", "HelloWorld", "Approval"} <= found
