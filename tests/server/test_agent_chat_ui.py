"""LangChain's Agent Chat UI against `agentmap serve`, in a real headless chromium (Debian's, driven by Playwright).

The UI is LangChain's own: the Vite + React app npm's `create-agent-chat-app` (pinned with what builds it in
tests/js/agent-chat-ui/package-lock.json) carries in `templates/vite`, built here by `vite build` and served from its
own origin. A user signs in through its form (the server's address, the graph, and a token in its "LangSmith API
Key" field, which it sends as `X-Api-Key`; a `langgraph_sdk.Auth` file maps each token to a user), chats with a CSV
workflow whose state keeps the conversation in `messages`, answers the approval with the UI's Accept and Respond
buttons, and finds their thread in the UI's history; another user's history does not show it.

`npm ci` and `vite build` take a minute or two; the module builds the app once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import components
import httpx
import npm_apps
import pytest
from server_helpers import serving
from timing import scaled

pytest.importorskip("langgraph_sdk")
pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHAT = """\
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
Chat,Assistant,llm,You help.,"{""model"": ""offline"", ""memory_key"": ""messages""}",messages,reply|messages,Approve
Chat,Approve,human,Send this reply?,"{""interaction_type"": ""approval""}",reply,approved,
"""
USERS = """
from langgraph_sdk import Auth

TOKENS = {"ada-token": "ada", "bo-token": "bo"}
auth = Auth()


@auth.authenticate
async def who(headers):
    token = headers.get(b"x-api-key", b"").decode()  # the Agent Chat UI's API key field
    if token not in TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="unknown token")
    return TOKENS[token]


@auth.on
async def owner(ctx, value):
    value.setdefault("metadata", {})["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}
"""


@pytest.fixture(scope="module")
def app_folder() -> Path:
    """The Agent Chat UI built by Vite (`npm ci` of the pinned packages, then `vite build`): its `dist` folder."""
    return npm_apps.built(npm_apps.AGENT_CHAT_UI) / "dist"


@pytest.fixture(scope="module")
def app_origin(app_folder: Path) -> Iterator[str]:
    """The app's own web server (another origin than the agent's), on 127.0.0.1."""
    with components.static_origin(app_folder) as origin:
        yield origin


def _signed_in(browser: Any, origin: str, url: str, token: str) -> Any:
    """A page of a fresh browser profile, signed in through the UI's form; the history panel open."""
    page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
    page.goto(f"{origin}/?chatHistoryOpen=true")
    page.fill("#apiUrl", url)
    page.fill("#assistantId", "Chat")
    page.fill("#apiKey", token)
    page.click("button[type=submit]")
    page.wait_for_selector("textarea[placeholder='Type your message...']", timeout=scaled(30_000))
    return page


def _say(page: Any, text: str) -> None:
    """Send `text` once the UI has ended its last run: while it streams, its form shows Cancel and ignores Enter."""
    page.get_by_role("button", name="Send", exact=True).wait_for(timeout=scaled(30_000))
    page.fill("textarea[placeholder='Type your message...']", text)
    page.press("textarea[placeholder='Type your message...']", "Enter")


def _asked(page: Any, reply: str) -> None:
    """Wait until the model's reply shows and the approval asks, with its Accept button."""
    page.get_by_text(reply, exact=True).wait_for(timeout=scaled(30_000))
    page.get_by_role("button", name="Accept").wait_for(timeout=scaled(30_000))


def _history(page: Any) -> list[str]:
    """The texts of the UI's thread history (each thread's first message)."""
    found: list[str] = page.eval_on_selector_all("button p.truncate", "ps => ps.map(p => p.textContent)")
    return found


def _wait_history(page: Any, expected: list[str]) -> None:
    page.wait_for_function(
        "want => JSON.stringify([...document.querySelectorAll('button p.truncate')].map(p => p.textContent))"
        " === JSON.stringify(want)",
        arg=expected,
        timeout=scaled(30_000),
    )


def _state(url: str, token: str, thread: str) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(f"{url}/threads/{thread}/state", headers={"X-Api-Key": token}).json()
    return found


def _settled(url: str, token: str, thread: str, **expected: Any) -> dict[str, Any]:
    """The thread's state once its values hold `expected` (the UI's run has finished)."""
    deadline = time.monotonic() + scaled(30)
    while True:
        state = _state(url, token, thread)
        if all(state["values"].get(k) == v for k, v in expected.items()) or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def _shot(page: Any, tmp_path: Path, name: str) -> None:
    shots = Path(os.environ.get("AGENTMAP_TEST_ARTIFACTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / name))


def test_users_sign_in_to_agent_chat_ui_chat_answer_the_approval_and_see_only_their_threads(
    tmp_path: Path, browser: Any, app_origin: str
) -> None:
    (tmp_path / "chat.csv").write_text(CHAT, encoding="utf-8")
    (tmp_path / "auth.py").write_text(USERS, encoding="utf-8")
    config = {
        "checkpoint": str(tmp_path / "runs.db"),
        "auth": f"{tmp_path}/auth.py:auth",
        "cors_origins": (app_origin,),
    }
    with serving(tmp_path / "chat.csv", **config) as url:
        refused = _signed_in(browser, app_origin, url, "a-wrong-token")
        refused.get_by_text("Failed to connect to LangGraph server").wait_for(timeout=scaled(30_000))
        refused.close()

        ada = _signed_in(browser, app_origin, url, "ada-token")
        sent: list[str] = []
        ada.on("request", lambda r: sent.append(r.post_data or "") if r.url.endswith("/runs/stream") else None)
        _say(ada, "please title case hello world")
        _asked(ada, "[offline] please title case hello world")
        thread = ada.evaluate("new URLSearchParams(location.search).get('threadId')")
        _shot(ada, tmp_path, "agent-chat-ui-approval.png")
        ada.get_by_role("button", name="Accept").click()
        state = _settled(url, "ada-token", thread, approved=True)
        assert state["values"]["approved"] is True and state["next"] == []
        ada.get_by_role("button", name="Accept").wait_for(state="detached", timeout=scaled(30_000))

        _say(ada, "please reverse text abc")  # a second turn on the same thread: the conversation grows
        _asked(ada, "[offline] please reverse text abc")
        ada.fill("textarea[placeholder='Your response here...']", "no")
        ada.get_by_role("button", name="Send Response").click()
        state = _settled(url, "ada-token", thread, approved=False)
        assert state["values"]["approved"] is False
        messages = [(m["type"], m["content"]) for m in state["values"]["messages"]]
        assert messages == [
            ("human", "please title case hello world"),
            ("ai", "[offline] please title case hello world"),
            ("human", "please reverse text abc"),
            ("ai", "[offline] please reverse text abc"),
        ]
        first_id = state["values"]["messages"][0]["id"]
        assert first_id in sent[0]  # the UI's own message id is kept
        for text in ("please title case hello world", "[offline] please reverse text abc"):
            assert ada.get_by_text(text, exact=True).first.is_visible()
        _wait_history(ada, ["please title case hello world"])
        _shot(ada, tmp_path, "agent-chat-ui-ada.png")

        bo = _signed_in(browser, app_origin, url, "bo-token")
        # the server lists bo none of ada's threads; the UI asked it (a response read through the browser may be
        # one the page had asked for before the reload, whose body is gone once the page navigated)
        assert httpx.post(f"{url}/threads/search", headers={"X-Api-Key": "bo-token"}, json={}).json() == []
        with bo.expect_response(lambda r: r.url.endswith("/threads/search") and r.ok):
            bo.reload()
        assert _history(bo) == []  # ada's thread is not in bo's list
        _say(bo, "hello from bo")
        _asked(bo, "[offline] hello from bo")
        _wait_history(bo, ["hello from bo"])
        _shot(bo, tmp_path, "agent-chat-ui-bo.png")
        assert httpx.get(f"{url}/threads/{thread}", headers={"X-Api-Key": "bo-token"}).status_code == 404
        ada.reload()
        _wait_history(ada, ["please title case hello world"])
        ada.close()
        bo.close()
