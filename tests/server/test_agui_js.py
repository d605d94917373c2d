"""The AG-UI client of the AG-UI project (`@ag-ui/client`'s `HttpAgent`, under Node) against the real server: a chat
of two turns on one thread, a pause answered yes and one answered no, an answer that does not fit, an unknown graph.
The client checks every stream it reads against the protocol's rules (`verifyEvents`): a stream it refused would
fail the run."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import npm_apps
import pytest
from server_helpers import GRAPHS, make_project, serving
from timing import scaled

pytest.importorskip("ag_ui")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def agui_client() -> Path:
    """The client script with its pinned packages installed (`npm ci` from the lock file)."""
    return npm_apps.built(npm_apps.AGUI)


def test_the_agui_client_chats_pauses_answers_and_is_refused(agui_client: Path, tmp_path: Path) -> None:
    folder = make_project(tmp_path / "served")
    shutil.copy(GRAPHS / "llm_offline.csv", folder / "chat.csv")
    shutil.copytree(GRAPHS / "tools", folder / "tools")
    with serving(folder, checkpoint=str(tmp_path / "runs.db")) as url:
        done = subprocess.run(
            ["node", "client.mjs", url], cwd=agui_client, capture_output=True, text=True, timeout=scaled(120)
        )
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
    chat = seen["chat"]
    assert chat["error"] is None
    assert chat["first"][0] == "RUN_STARTED" and chat["first"][-1] == "RUN_FINISHED"
    assert {"STEP_STARTED", "TEXT_MESSAGE_CONTENT", "STATE_SNAPSHOT"} <= set(chat["first"])
    assert chat["replies"] == [
        "Done: title case returned Hello World.",
        "Done: title case returned Hello World. (your request had 5 words)",
        "Done: reverse text returned cba.",
        "Done: reverse text returned cba. (your request had 4 words)",
    ]
    assert chat["history"] == 4  # two exchanges in the graph's memory: one thread across the turns
    paused = seen["paused"]
    assert paused["custom"] == [["on_interrupt", {**paused["custom"][0][1], "question": "Publish this draft?"}]]
    assert paused["interrupt"]["reason"] == "agentmap:approval" and paused["pending"] == 1
    assert paused["events"][-1] == "RUN_FINISHED"
    refused = seen["refused"]
    assert refused["error"]["status"] == 422 and refused["error"]["code"] == "bad-answer"
    assert "resume[0].payload" in refused["error"]["message"] and refused["pending"] == 1
    assert seen["yes"] == {"approved": True, "state": True, "pending": 0}
    assert seen["no"] == {"approved": False}
    assert seen["unknown"]["status"] == 404 and seen["unknown"]["code"] == "assistant-not-found"
