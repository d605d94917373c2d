"""LangGraph's JavaScript client (`@langchain/langgraph-sdk`, under Node) against the real server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import npm_apps
import pytest
from auth_helpers import token_users
from server_helpers import make_project, serving
from timing import scaled

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def node_client() -> Path:
    """The client scripts with their pinned packages installed (`npm ci` from the lock file)."""
    return npm_apps.built(npm_apps.LANGGRAPH)


def test_the_javascript_client_runs_streams_answers_cancels_joins_and_stores(node_client: Path, tmp_path: Path) -> None:
    folder = make_project(tmp_path / "served")
    with serving(folder, checkpoint=str(tmp_path / "runs.db")) as url:
        done = subprocess.run(
            ["node", "client.mjs", url], cwd=node_client, capture_output=True, text=True, timeout=scaled(120)
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["graphs"] == ["Ask", "HelloWorld", "Review", "Slow"]
    assert seen["waited"]["greeting"] == "Hello, Ada!" and seen["state"]["greeting"] == "Hello, Ada!"
    assert seen["events"][0] == "metadata" and "updates:Greet" in seen["events"] and "updates:Finish" in seen["events"]
    assert seen["question"] == "What is your name?"
    assert seen["answered"]["greeting"] == "Hello, Cy!"
    assert seen["item"] == {"text": "from node"}
    assert seen["cancelled"] == "interrupted" and seen["joined"] == "rested"
    assert seen["unknown"] == "404"


USERS = token_users({"ada-token": "ada", "bo-token": "bo"}, refusal="unknown token", own_store=True)


def test_two_users_of_the_javascript_client_each_reach_only_their_own(node_client: Path, tmp_path: Path) -> None:
    folder = make_project(tmp_path / "served")
    (folder / "auth.py").write_text(USERS, encoding="utf-8")
    with serving(folder / "hello.csv", checkpoint=str(tmp_path / "runs.db"), auth=f"{folder}/auth.py:auth") as url:
        done = subprocess.run(
            ["node", "users.mjs", url], cwd=node_client, capture_output=True, text=True, timeout=scaled(120)
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["owner"] == "ada" and seen["waited"]["greeting"] == "Hello, Ada!"
    assert seen["bo"] == {"get": "404", "state": "404", "run": "404", "runs": "404", "search": []}
    assert seen["ada"] == [seen["thread"]] and seen["nobody"] == "401"
    assert seen["items"] == {"ada": {"text": "ada's"}, "bo": None}
