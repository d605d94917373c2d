"""`agentmap studio --auth`: the runs its serve page starts go through the same auth handlers as `agentmap serve
--auth` (each user their own threads), on the real studio (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
import pytest
from timing import scaled

from agentmap.studio import StudioConfig, background

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("langgraph_sdk")
sys.path.insert(0, str(ROOT / "tests" / "server"))
from auth_helpers import token_users  # noqa: E402

AUTH = token_users({"alice-token": "alice", "bob-token": "bob"})


def test_the_serve_page_runs_as_the_user_and_shows_each_their_own(tmp_path: Path) -> None:
    flow = tmp_path / "hello.csv"
    shutil.copy(ROOT / "graphs" / "hello_world.csv", flow)
    (tmp_path / "auth.py").write_text(AUTH, encoding="utf-8")
    config = StudioConfig(target=flow, checkpoint=str(tmp_path / "studio.db"), auth=f"{tmp_path}/auth.py:auth")
    token = {"X-AgentMap-Token": config.token}
    alice, bob = {**token, "Authorization": "Bearer alice-token"}, {**token, "Authorization": "Bearer bob-token"}
    with background(config) as url:
        assert httpx.post(f"{url}studio/api/serve", params={"file": "hello.csv"}, headers=token).status_code == 200
        assert httpx.post(f"{url}server/threads", json={}, headers=token).status_code == 401  # no user
        thread = httpx.post(f"{url}server/threads", json={}, headers=alice).json()
        assert thread["metadata"]["owner"] == "alice"
        ran = httpx.post(
            f"{url}server/threads/{thread['thread_id']}/runs/wait",
            json={"assistant_id": "HelloWorld", "input": {"name": "Ada"}},
            headers=alice,
            timeout=scaled(60),
        )
        assert ran.status_code == 200, ran.text
        assert httpx.get(f"{url}server/threads/{thread['thread_id']}", headers=bob).status_code == 404
        found = httpx.post(f"{url}server/threads/search", json={}, headers=bob).json()
        assert found == []
        mine = httpx.post(f"{url}server/threads/search", json={}, headers=alice).json()
        assert [t["thread_id"] for t in mine] == [thread["thread_id"]]
