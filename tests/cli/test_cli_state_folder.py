"""AgentMap's own files (saved runs, the decision log, the caches) go where `AGENTMAP_STATE_DIR` says: every test
points it at its own folder (tests/conftest.py), so commands the tests run in the checkout leave its `.agentmap/`
alone, and `agentmap logs` there shows its owner's runs only."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import ROOT, agentmap
from conftest import CHECKOUT_STATE, files_of


def test_commands_run_in_the_checkout_keep_their_files_in_the_state_folder(tmp_path: Path) -> None:
    before = files_of(CHECKOUT_STATE)
    paused = agentmap("run", "graphs/approval.csv", cwd=ROOT)  # pauses: saved under a new thread in runs.db
    assert paused.code == 0, paused.err
    assistant = agentmap("run", "graphs/task_assistant.csv", cwd=ROOT)  # an LLM node: its decisions are logged
    assert assistant.code == 0, assistant.err
    mine = tmp_path / ".agentmap"
    assert {"runs.db", "decisions.db", "tasks.db"} <= {p.name for p in mine.iterdir()}
    assert agentmap("threads", "--json", cwd=ROOT).out.count('"thread"') == 1  # the one run of this test
    assert files_of(CHECKOUT_STATE) == before


def test_the_state_folder_moves_every_default_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmap.server import ServeConfig
    from agentmap.studio import StudioConfig

    monkeypatch.setenv("AGENTMAP_STATE_DIR", str(tmp_path / "state"))
    assert ServeConfig(targets=()).checkpoint == str(tmp_path / "state" / "runs.db")
    assert StudioConfig(target=tmp_path).checkpoint == str(tmp_path / "state" / "studio.db")
    monkeypatch.delenv("AGENTMAP_STATE_DIR")
    assert ServeConfig(targets=()).checkpoint == str(Path(".agentmap") / "runs.db")  # the working folder's
