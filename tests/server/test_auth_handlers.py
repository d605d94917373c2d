"""`agentmap serve --auth`: LangGraph's handler rules (the most specific handler, `False`, filters with `$eq` and
`$contains` applied by the store's own queries in SQLite and PostgreSQL, edits kept), the user a graph gets, and
what a broken auth file or handler answers."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import httpx
import pytest
from auth_helpers import client, project
from server_helpers import serving

pytest.importorskip("langgraph_sdk")

RULES = """
from langgraph_sdk import Auth

USERS = {
    "alice": {"identity": "alice", "permissions": ["write"], "org": "acme", "level": 3, "staff": True},
    "bob": {"identity": "bob", "permissions": ["write"], "org": "globex", "level": 1, "staff": False},
    "carol": {"identity": "carol", "org": "acme", "level": 2, "staff": True},
}
auth = Auth()


@auth.authenticate
async def who(headers):
    token = headers.get("x-user")  # a header by its name, as LangGraph's documents write it
    if token is None:
        raise Auth.exceptions.HTTPException(401, "who are you?", headers={"WWW-Authenticate": "X-User"})
    return USERS[token.decode()]


@auth.on
async def nothing_else(ctx, value):
    return False


@auth.on.threads
async def members(ctx, value):
    return {"members": {"$contains": ctx.user.identity}}


@auth.on.threads.create
async def stamp(ctx, value):
    if "write" not in ctx.permissions:
        return False
    metadata = value.setdefault("metadata", {})
    metadata["owner"] = ctx.user.identity
    metadata["members"] = [ctx.user.identity, *metadata.pop("invite", [])]
    metadata["org"], metadata["level"], metadata["staff"] = ctx.user["org"], ctx.user.level, ctx.user.staff


@auth.on.threads.delete
async def owner_deletes(ctx, value):
    return {"owner": {"$eq": ctx.user.identity}}


@auth.on.threads.search
async def same_org(ctx, value):
    return {"org": ctx.user["org"], "level": ctx.user.level, "staff": ctx.user.staff}


@auth.on.threads.create_run
async def runs(ctx, value):
    if "write" not in ctx.permissions:
        return False
    value["metadata"]["by"] = ctx.user.identity
    return {"members": {"$contains": [ctx.user.identity]}}


@auth.on.store
async def own_namespace(ctx, value):
    value["namespace"] = (ctx.user.identity, *(value["namespace"] or ()))


@auth.on.crons
async def own_crons(ctx, value):
    value.setdefault("metadata", {})["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}
"""

GRAPH = """
GraphName,Node,AgentType,Input_Fields,Output_Field
agent,Reply,echo,messages,reply
"""


def _as(name: str) -> dict[str, str]:
    return {"X-User": name}


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The run store's database: a SQLite file, or PostgreSQL (the same filters in each one's SQL)."""
    return str(tmp_path / "runs.db") if request.param == "sqlite" else str(request.getfixturevalue("postgres_url"))


def _status(call: object) -> int:
    try:
        call()  # type: ignore[operator]
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    return 200


def test_the_most_specific_handler_decides_and_its_filter_is_the_stores(tmp_path: Path, database: str) -> None:
    graph, auth = project(tmp_path / "p", RULES, GRAPH)
    with serving(graph, checkpoint=database, auth=auth) as url:
        alice, bob, carol = client(url, _as("alice")), client(url, _as("bob")), client(url, _as("carol"))
        made = alice.threads.create(metadata={"invite": ["carol"], "topic": "plans"})
        tid = made["thread_id"]
        assert made["metadata"] == {
            "topic": "plans",
            "owner": "alice",
            "members": ["alice", "carol"],
            "org": "acme",
            "level": 3,
            "staff": True,
        }
        assert _status(lambda: carol.threads.create()) == 403  # `False` from threads.create: no write permission
        reply = alice.runs.wait(tid, "agent", input={"messages": ["hi"]})["reply"]
        assert [(m["type"], m["content"]) for m in reply["messages"]] == [("human", "hi")]  # text: a user's message
        assert alice.runs.list(tid)[0]["metadata"]["by"] == "alice"  # threads.create_run's edit is kept
        # threads (any action but those above): members see it, others get the 404 of a thread that is not there
        assert carol.threads.get(tid)["thread_id"] == tid and carol.threads.get_state(tid)["values"]["reply"]
        assert _status(lambda: bob.threads.get(tid)) == 404
        assert _status(lambda: bob.threads.get_state(tid)) == 404
        assert _status(lambda: bob.threads.get_history(tid)) == 404
        assert _status(lambda: bob.runs.list(tid)) == 404
        assert _status(lambda: carol.runs.wait(tid, "agent", input={"messages": ["me"]})) == 403  # runs: write only
        assert _status(lambda: bob.runs.wait(tid, "agent", input={"messages": ["me"]})) == 404
        # threads.search: the same org, level and staff flag (a text, a number and a boolean compared as JSON)
        assert [t["thread_id"] for t in carol.threads.search()] == []  # acme, but level 2
        assert [t["thread_id"] for t in alice.threads.search()] == [tid] and bob.threads.search() == []
        # threads.delete: the owner alone
        assert _status(lambda: carol.threads.delete(tid)) == 404 and carol.threads.get(tid)
        alice.threads.delete(tid)
        assert _status(lambda: alice.threads.get(tid)) == 404
        # the global handler refuses what no other handler takes: the assistants
        assert _status(lambda: alice.assistants.search()) == 403
        assert _status(lambda: alice.assistants.get("agent")) == 403


def test_store_namespaces_and_crons_are_each_users_own(tmp_path: Path, database: str) -> None:
    graph, auth = project(tmp_path / "p", RULES, GRAPH)
    with serving(graph, checkpoint=database, auth=auth) as url:
        alice, bob = client(url, _as("alice")), client(url, _as("bob"))
        alice.store.put_item(["notes"], "k", {"text": "alice's"})
        bob.store.put_item(["notes"], "k", {"text": "bob's"})
        mine = alice.store.get_item(["notes"], "k")
        assert mine is not None and mine["value"] == {"text": "alice's"} and mine["namespace"] == ["alice", "notes"]
        found = bob.store.search_items(["notes"])["items"]
        assert [i["value"] for i in found] == [{"text": "bob's"}]
        assert bob.store.list_namespaces()["namespaces"] == [["bob", "notes"]]
        bob.store.delete_item(["notes"], "k")
        assert alice.store.get_item(["notes"], "k") is not None  # bob deleted his own
        cron = alice.crons.create("agent", schedule="0 0 1 1 *", input={"messages": ["yearly"]})
        assert cron["metadata"]["owner"] == "alice" and cron["user_id"] == "alice"
        assert bob.crons.search() == [] and bob.crons.count() == 0 and alice.crons.count() == 1
        assert _status(lambda: bob.crons.delete(cron["cron_id"])) == 404
        assert _status(lambda: bob.crons.update(cron["cron_id"], schedule="* * * * *")) == 404
        alice.crons.delete(cron["cron_id"])
        assert alice.crons.search() == []
        tid = alice.threads.create()["thread_id"]
        assert _status(lambda: bob.crons.create_for_thread(tid, "agent", schedule="* * * * *")) == 404


def test_the_graph_gets_the_user_as_langgraph_gives_it(tmp_path: Path) -> None:
    agent = '''
from langgraph.config import get_config
from langgraph.runtime import get_runtime

from agentmap import BaseAgent


class WhoAgent(BaseAgent):
    """What the run knows of its user: the config's key, and LangGraph's runtime."""

    def process(self, inputs):
        configurable = get_config()["configurable"]
        user = configurable["langgraph_auth_user"]
        info = get_runtime().server_info
        return {
            "identity": user.identity,
            "by_key": user["identity"],
            "org": user.org,
            "permissions": list(configurable["langgraph_auth_permissions"]),
            "user_id": configurable["langgraph_auth_user_id"],
            "runtime": info.user.identity if info is not None and info.user is not None else None,
        }
'''
    folder = tmp_path / "p"
    graph, auth = project(
        folder, RULES, "GraphName,Node,AgentType,Input_Fields,Output_Field\nagent,Who,WhoAgent,topic,who\n"
    )
    (folder / "custom_agents").mkdir()
    (folder / "custom_agents" / "who.py").write_text(textwrap.dedent(agent), encoding="utf-8")
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        alice = client(url, _as("alice"))
        tid = alice.threads.create()["thread_id"]
        claimed = {"configurable": {"langgraph_auth_user": {"identity": "bob"}, "langgraph_auth_user_id": "bob"}}
        who = alice.runs.wait(tid, "agent", input={"topic": "t"}, config=claimed)["who"]
        assert who == {
            "identity": "alice",  # a client cannot say who it is: the server's keys replace the body's
            "by_key": "alice",
            "org": "acme",
            "permissions": ["write"],
            "user_id": "alice",
            "runtime": "alice",
        }


def test_authenticate_refusals_keep_their_status_and_headers(tmp_path: Path) -> None:
    graph, auth = project(tmp_path / "p", RULES, GRAPH)
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        refused = httpx.post(f"{url}/threads", json={})
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "X-User"
        assert refused.json()["code"] == "unauthorized" and refused.json()["message"] == "who are you?"
        assert refused.json()["request_id"] == refused.headers["x-request-id"]
        huge = httpx.post(f"{url}/threads", json={}, headers={"X-User": "alice", "Authorization": "x" * 1_048_576})
        assert huge.status_code == 413 and huge.json()["code"] == "headers-too-large"


BROKEN = """
from langgraph_sdk import Auth

auth = Auth()
TOKENS = {"good-token": "alice"}


@auth.authenticate
async def lookup(authorization: str):
    return TOKENS[authorization.removeprefix("Bearer ")]  # a KeyError naming the token for any other


@auth.on.threads.create
async def crashes_on_create(ctx, value):
    raise RuntimeError(f"no quota row for {value['metadata']['secret']}")


@auth.on.threads.search
async def no_filter(ctx, value):
    return {"owner": {"$gt": 1}}
"""


def test_a_handler_that_fails_refuses_the_request_and_its_log_names_it_not_the_data(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    graph, auth = project(tmp_path / "p", BROKEN, GRAPH)
    caplog.set_level(logging.ERROR, logger="agentmap.server")
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        unknown = httpx.post(f"{url}/threads", json={}, headers={"Authorization": "Bearer stolen-token-1234"})
        assert unknown.status_code == 500 and unknown.json()["code"] == "auth-failed"
        good = {"Authorization": "Bearer good-token"}
        failed = httpx.post(f"{url}/threads", json={"metadata": {"secret": "s3cr3t-value"}}, headers=good)
        assert failed.status_code == 500 and failed.json()["code"] == "auth-failed"
        assert "s3cr3t-value" not in failed.text
        search = httpx.post(f"{url}/threads/search", json={}, headers=good)
        assert search.status_code == 500  # an operator the filters do not have: refused, not ignored
        assert httpx.get(f"{url}/threads/{'x'}", headers=good).status_code == 404  # no handler: allowed
    logged = caplog.text
    assert "lookup" in logged and "crashes_on_create" in logged and "no_filter" in logged
    assert "KeyError" in logged and "RuntimeError" in logged and "$gt" in logged
    assert "stolen-token-1234" not in logged and "s3cr3t-value" not in logged
    assert "crashes_on_create" not in failed.text  # the client hears that the server failed, not how


def test_a_server_with_users_listens_beyond_loopback_without_an_api_key(tmp_path: Path) -> None:
    from agentmap.server import require_key

    require_key("0.0.0.0", None, auth=True)  # every request is asked who sends it
    with pytest.raises(Exception, match="without an API key"):
        require_key("0.0.0.0", None)
