"""The JavaScript A2A client (`@a2a-js/sdk`, under Node), written by the A2A project, against the real server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import npm_apps
import pytest
from server_helpers import make_project, serving
from timing import scaled

pytest.importorskip("a2a")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def a2a_client() -> Path:
    """The client script with its pinned package installed (`npm ci` from the lock file)."""
    return npm_apps.built(npm_apps.A2A)


def test_the_javascript_a2a_client_sends_streams_answers_and_looks_up(a2a_client: Path, tmp_path: Path) -> None:
    with serving(make_project(tmp_path / "served"), checkpoint=str(tmp_path / "runs.db")) as url:
        done = subprocess.run(
            ["node", "client.mjs", url], cwd=a2a_client, capture_output=True, text=True, timeout=scaled(120)
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["state"] == seen["got"] == "TASK_STATE_COMPLETED"
    assert seen["greeting"] == "Hello, Ada!"
    assert "TASK_STATE_WORKING:node Greet succeeded" in seen["streamed"]
    assert seen["streamed"][-1].startswith("TASK_STATE_COMPLETED")
    assert seen["unknown"] == "JsonRpcTaskNotFoundError"
    assert seen["paused"] == "TASK_STATE_INPUT_REQUIRED" and seen["question"] == "Publish this draft?"
    assert seen["answered"] == "TASK_STATE_COMPLETED" and seen["approved"] is True
