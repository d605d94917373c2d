"""A chat page built on the AG-UI client (`@ag-ui/client`, bundled by esbuild from the pinned packages) in a real
headless chromium (Debian's package, driven by Playwright), served from its own origin: a user signs in with a token,
chats on a new thread, answers the approval with a button, chats on, and finds the thread again in their list.

The page is ours (tests/js/agui/chat.html): LangChain's Agent Chat UI speaks the LangGraph API, not AG-UI (it is
tested in test_agent_chat_ui.py); the AG-UI project's demo client is no package. What this shows is the AG-UI client
in a browser, across origins (`--cors-origin`), with the server's key, against the real server.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import components
import httpx
import npm_apps
import pytest
from auth_helpers import token_users
from server_helpers import serving
from timing import scaled

pytest.importorskip("ag_ui")
pytestmark = [pytest.mark.browser, pytest.mark.slow]

KEY = "token-of-ada"
HI = "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nHi,Greet,template,Hi {name},name,greeting\n"
CHAT = """\
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
Chat,Assistant,llm,You help.,"{""model"": ""offline"", ""memory_key"": ""history""}",request,reply|history,Approve
Chat,Approve,human,Send this reply?,"{""interaction_type"": ""approval""}",reply,approved,Decided
Chat,Decided,template,Approved: {approved},,approved,decision,
"""


@pytest.fixture(scope="module")
def page_folder() -> Path:
    """The page and its script bundled with the pinned AG-UI client (`npm ci`, then esbuild)."""
    return npm_apps.built(npm_apps.AGUI)


@pytest.fixture(scope="module")
def page_origin(page_folder: Path) -> Iterator[str]:
    """The page's own web server (another origin than the agent's), on 127.0.0.1."""
    with components.static_origin(page_folder) as origin:
        yield origin


def _state(page: Any, *states: str) -> str:
    """Wait until the page is in one of `states`; the one it is in."""
    shown = " || ".join(f"document.body.dataset.state === '{s}'" for s in states)
    page.wait_for_function(shown, timeout=scaled(30_000))
    return str(page.evaluate("document.body.dataset.state"))


def _messages(page: Any) -> list[tuple[str, str]]:
    found = page.eval_on_selector_all("#messages li", "items => items.map(i => [i.dataset.role, i.textContent])")
    return [(role, text) for role, text in found]


def test_a_user_signs_in_chats_answers_the_approval_and_finds_the_thread(
    tmp_path: Path, browser: Any, page_origin: str
) -> None:
    (tmp_path / "chat.csv").write_text(CHAT, encoding="utf-8")
    (tmp_path / "hello.csv").write_text(HI, encoding="utf-8")
    config = {"checkpoint": str(tmp_path / "runs.db"), "api_key": KEY, "cors_origins": (page_origin,)}
    with serving(tmp_path, **config) as url:
        keyed = {"X-Api-Key": KEY}
        other = httpx.post(f"{url}/threads", json={}, headers=keyed).json()["thread_id"]
        run = {"assistant_id": "Hi", "input": {"name": "Bo"}}
        httpx.post(f"{url}/threads/{other}/runs/wait", json=run, headers=keyed)
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        page.goto(f"{page_origin}/chat.html?server={url}&graph=Chat")
        page.fill("#token", "a-wrong-token")
        page.click("#sign-in-button")
        page.wait_for_function("document.getElementById('status').textContent.includes('sign-in refused')")
        assert page.inner_text("#status") == "sign-in refused: missing or wrong API key"
        page.fill("#token", KEY)
        page.click("#sign-in-button")
        assert _state(page, "signed-in") == "signed-in"
        assert page.eval_on_selector_all("#threads button", "b => b.length") == 0  # the Hi thread is not a chat
        page.click("#new-chat")
        assert _state(page, "idle") == "idle"  # the new thread is open
        thread = page.evaluate("document.body.dataset.thread")
        page.fill("#say", "please title case hello world")
        page.click("#send")
        assert _state(page, "waiting", "error") == "waiting", page.inner_text("#status")
        assert page.inner_text("#question-text") == "Send this reply?"
        assert _messages(page) == [
            ("user", "please title case hello world"),
            ("assistant", "[offline] please title case hello world"),
        ]
        page.click("#approve")
        assert _state(page, "idle", "error") == "idle", page.inner_text("#status")
        assert _messages(page)[-1] == ("assistant", "Approved: True")
        page.fill("#say", "please reverse text abc")
        page.click("#send")
        assert _state(page, "waiting", "error") == "waiting", page.inner_text("#status")
        page.click("#reject")
        assert _state(page, "idle", "error") == "idle", page.inner_text("#status")
        assert _messages(page)[-1] == ("assistant", "Approved: False")
        assert page.eval_on_selector_all("#threads button", "b => b.map(x => x.textContent)") == [thread]
        shots = Path(os.environ.get("AGENTMAP_TEST_ARTIFACTS", tmp_path))
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "agui-chat.png"))
        # a fresh page: signed in again, the thread is in the list, and opening it shows the conversation kept on it
        page.reload()
        page.fill("#token", KEY)
        page.click("#sign-in-button")
        _state(page, "signed-in")
        page.click("#threads button")
        assert _state(page, "idle") == "idle"
        assert [text for _, text in _messages(page)] == [
            "please title case hello world",
            "[offline] please title case hello world",
            "please reverse text abc",
            "[offline] please reverse text abc",
        ]
        page.close()


USERS = token_users({"ada-token": "ada", "bo-token": "bo"}, refusal="unknown token")


def _signed_in(browser: Any, address: str, token: str) -> Any:
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    page.goto(address)
    page.fill("#token", token)
    page.click("#sign-in-button")
    return page


def _chat_until_asked(page: Any, text: str) -> str:
    page.click("#new-chat")
    assert _state(page, "idle") == "idle"  # the new thread is open
    thread = str(page.evaluate("document.body.dataset.thread"))
    page.fill("#say", text)
    page.click("#send")
    assert _state(page, "waiting", "error") == "waiting", page.inner_text("#status")
    return thread


def test_users_sign_in_with_their_token_and_each_sees_only_their_own_threads(
    tmp_path: Path, browser: Any, page_origin: str
) -> None:
    (tmp_path / "chat.csv").write_text(CHAT, encoding="utf-8")
    (tmp_path / "auth.py").write_text(USERS, encoding="utf-8")
    config = {
        "checkpoint": str(tmp_path / "runs.db"),
        "auth": f"{tmp_path}/auth.py:auth",
        "cors_origins": (page_origin,),
    }
    with serving(tmp_path / "chat.csv", **config) as url:
        address = f"{page_origin}/chat.html?server={url}&graph=Chat&auth=bearer"
        refused = _signed_in(browser, address, "a-wrong-token")
        refused.wait_for_function("document.getElementById('status').textContent.includes('sign-in refused')")
        assert refused.inner_text("#status") == "sign-in refused: unknown token"
        refused.close()
        ada = _signed_in(browser, address, "ada-token")
        assert _state(ada, "signed-in") == "signed-in"
        mine = _chat_until_asked(ada, "please title case hello world")
        ada.click("#approve")
        assert _state(ada, "idle", "error") == "idle", ada.inner_text("#status")
        assert _messages(ada)[-1] == ("assistant", "Approved: True")
        assert ada.eval_on_selector_all("#threads button", "b => b.map(x => x.textContent)") == [mine]
        bo = _signed_in(browser, address, "bo-token")
        assert _state(bo, "signed-in") == "signed-in"
        assert bo.eval_on_selector_all("#threads button", "b => b.length") == 0  # ada's thread is not in bo's list
        his = _chat_until_asked(bo, "please reverse text abc")
        assert bo.eval_on_selector_all("#threads button", "b => b.map(x => x.textContent)") == [his]
        seen = httpx.get(f"{url}/threads/{mine}", headers={"Authorization": "Bearer bo-token"})
        assert seen.status_code == 404 and seen.json()["code"] == "thread-not-found"
        owners = {
            t["thread_id"]: t["metadata"]["owner"]
            for token in ("ada-token", "bo-token")
            for t in httpx.post(f"{url}/threads/search", json={}, headers={"Authorization": f"Bearer {token}"}).json()
        }
        assert owners == {mine: "ada", his: "bo"}
        ada.close()
        bo.close()
