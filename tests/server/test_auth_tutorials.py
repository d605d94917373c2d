"""LangGraph's own auth tutorials ("Make conversations private" and its scoped "resource authorization" handlers)
against `agentmap serve --auth`, with langgraph-sdk, their auth file unchanged and their test code's steps."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from auth_helpers import ALICE, BOB, PRIVATE, SCOPED, async_client, client, project
from server_helpers import serving

sdk = pytest.importorskip("langgraph_sdk")


async def test_without_a_token_nobody_gets_in_and_with_one_alice_chats(tmp_path: Path) -> None:
    graph, auth = project(tmp_path, PRIVATE)
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        nobody = async_client(url)
        with pytest.raises(httpx.HTTPStatusError) as refused:  # the handler's `assert authorization`
            await nobody.threads.create()
        assert refused.value.response.status_code == 401
        with pytest.raises(httpx.HTTPStatusError) as wrong:  # its HTTPException(401, "Invalid token")
            await async_client(url, {"Authorization": "Bearer nobody-token"}).threads.create()
        assert wrong.value.response.status_code == 401 and wrong.value.response.json()["message"] == "Invalid token"
        alice = async_client(url, ALICE)
        thread = await alice.threads.create()
        message = {"messages": [{"role": "user", "content": "Hello!"}]}
        response = await alice.runs.create(thread_id=thread["thread_id"], assistant_id="agent", input=message)
        reply = (await alice.runs.join(thread["thread_id"], response["run_id"]))["reply"]
        assert [(m["type"], m["content"]) for m in reply["messages"]] == [("human", "Hello!")]  # a chat's message
        assert httpx.get(f"{url}/ok").status_code == 200  # the health check is no one's


async def test_conversations_are_private(tmp_path: Path) -> None:
    graph, auth = project(tmp_path, PRIVATE)
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        alice, bob = async_client(url, ALICE), async_client(url, BOB)
        alice_thread = await alice.threads.create()
        await alice.runs.create(
            thread_id=alice_thread["thread_id"],
            assistant_id="agent",
            input={"messages": [{"role": "user", "content": "Hi, this is Alice's private chat"}]},
        )
        with pytest.raises(httpx.HTTPStatusError) as denied:
            await bob.threads.get(alice_thread["thread_id"])
        assert denied.value.response.status_code == 404  # as if there were no such thread
        bob_thread = await bob.threads.create()
        await bob.runs.create(
            thread_id=bob_thread["thread_id"],
            assistant_id="agent",
            input={"messages": [{"role": "user", "content": "Hi, this is Bob's private chat"}]},
        )
        alice_threads = await alice.threads.search()
        bob_threads = await bob.threads.search()
        assert [t["thread_id"] for t in alice_threads] == [alice_thread["thread_id"]]
        assert [t["thread_id"] for t in bob_threads] == [bob_thread["thread_id"]]
        assert alice_threads[0]["metadata"]["owner"] == "user1"  # what the handler stamped is kept


async def test_the_scoped_handlers_of_the_tutorial(tmp_path: Path) -> None:
    graph, auth = project(tmp_path, SCOPED)
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        alice, bob = async_client(url, ALICE), async_client(url, BOB)
        with pytest.raises(httpx.HTTPStatusError) as create:  # agentmap serve makes no assistants anyway
            await alice.assistants.create("agent")
        assert create.value.response.status_code in (403, 404)
        with pytest.raises(httpx.HTTPStatusError) as search:  # the handler of every assistants action
            await alice.assistants.search()
        assert search.value.response.status_code == 403
        assert search.value.response.json()["message"] == "User lacks the required permissions."
        alice_thread = await alice.threads.create()
        assert alice_thread["metadata"]["owner"] == "user1"
        with pytest.raises(httpx.HTTPStatusError) as denied:
            await bob.threads.get(alice_thread["thread_id"])
        assert denied.value.response.status_code == 404
        assert len(await bob.threads.search()) == 0 and len(await alice.threads.search()) == 1
        await alice.store.put_item(("user1", "notes"), "n1", {"text": "mine"})
        assert (await alice.store.get_item(("user1", "notes"), "n1"))["value"] == {"text": "mine"}
        with pytest.raises(httpx.HTTPStatusError) as store:  # the handler's `assert namespace[0] == identity`
            await bob.store.get_item(("user1", "notes"), "n1")
        assert store.value.response.status_code == 403 and store.value.response.json()["message"] == "Not authorized"


def test_the_sync_client_and_a_token_of_each_user(tmp_path: Path) -> None:
    graph, auth = project(tmp_path, PRIVATE)
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        alice, bob = client(url, ALICE), client(url, BOB)
        thread = alice.threads.create()["thread_id"]
        reply = alice.runs.wait(thread, "agent", input={"messages": ["hi"]})["reply"]
        assert [(m["type"], m["content"]) for m in reply["messages"]] == [("human", "hi")]
        with pytest.raises(httpx.HTTPStatusError) as other:
            bob.runs.wait(thread, "agent", input={"messages": ["mine now"]})
        assert other.value.response.status_code == 404
        assert [r["status"] for r in alice.runs.list(thread)] == ["success"]
