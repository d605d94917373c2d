"""The store: items that outlive a thread, through langgraph-sdk's `client.store` and from nodes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from server_helpers import serving

sdk = pytest.importorskip("langgraph_sdk")
from langgraph_sdk.errors import UnprocessableEntityError  # noqa: E402

pytestmark = pytest.mark.slow

REMEMBER = """\
GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge
Remember,Save,store_writer,"{""namespace"": [""users"", ""{user}""], ""key"": ""profile""}",user|lang,saved,Load
Remember,Load,store_reader,"{""namespace"": ""users.{user}"", ""key"": ""profile""}",user,profile,
"""
RECALL = """\
GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge
Recall,Load,store_reader,"{""namespace"": ""users.{user}"", ""key"": ""profile"", ""default"": {}}",user,profile,
"""


def _project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "remember.csv").write_text(REMEMBER, encoding="utf-8")
    (folder / "recall.csv").write_text(RECALL, encoding="utf-8")
    return folder


def _walk_the_store(client: Any) -> None:
    client.store.put_item(["notes", "ada"], "n1", {"text": "likes tea", "kind": "taste"})
    client.store.put_item(["notes", "ada"], "n2", {"text": "lives in Porto", "kind": "place"})
    client.store.put_item(["notes", "bo"], "n1", {"text": "likes coffee", "kind": "taste"})
    item = client.store.get_item(["notes", "ada"], "n1")
    assert (item["namespace"], item["key"], item["value"]) == (
        ["notes", "ada"],
        "n1",
        {"text": "likes tea", "kind": "taste"},
    )
    assert item["created_at"] and item["updated_at"]
    assert client.store.get_item(["notes", "ada"], "nothing") is None
    tastes = client.store.search_items(["notes"], filter={"kind": "taste"}, limit=10)["items"]
    assert sorted((i["namespace"][1], i["value"]["text"]) for i in tastes) == [
        ("ada", "likes tea"),
        ("bo", "likes coffee"),
    ]
    assert client.store.list_namespaces(prefix=["notes"])["namespaces"] == [["notes", "ada"], ["notes", "bo"]]
    client.store.delete_item(["notes", "ada"], "n1")
    assert client.store.get_item(["notes", "ada"], "n1") is None


def test_items_are_put_found_and_deleted_and_nodes_read_what_runs_wrote(tmp_path: Path) -> None:
    folder = _project(tmp_path / "flows")
    with serving(folder, checkpoint=str(tmp_path / "runs.db")) as url, sdk.get_sync_client(url=url) as client:
        _walk_the_store(client)
        saved = client.runs.wait(None, "Remember", input={"user": "ada", "lang": "pt"})
        assert saved["profile"] == {"user": "ada", "lang": "pt"}
        assert client.store.get_item(["users", "ada"], "profile")["value"] == {"user": "ada", "lang": "pt"}
        client.store.put_item(["users", "bo"], "profile", {"lang": "fr"})  # written by a client, read by a node
        assert client.runs.wait(None, "Recall", input={"user": "bo"})["profile"] == {"lang": "fr"}
    # the store outlives the server: a new one on the same file still has it
    with serving(folder, checkpoint=str(tmp_path / "runs.db")) as url, sdk.get_sync_client(url=url) as client:
        assert client.store.get_item(["notes", "ada"], "n2")["value"]["text"] == "lives in Porto"


def test_bad_store_requests_are_422_naming_the_field(tmp_path: Path) -> None:
    folder = _project(tmp_path / "flows")
    with serving(folder, checkpoint="memory") as url, sdk.get_sync_client(url=url) as client:
        calls: list[Callable[[], Any]] = [
            lambda: client.store.put_item([], "k", {"a": 1}),
            lambda: client.store.put_item(["a"], "", {"a": 1}),
            lambda: client.store.search_items(["a"], query="tea"),
            lambda: client.store.put_item(["a"], "k", {"a": 1}, ttl=5),
        ]
        for call in calls:
            with pytest.raises(UnprocessableEntityError):
                call()
        with pytest.raises(UnprocessableEntityError) as caught:
            client.http.put("/store/items", json={"namespace": ["a"], "key": "k", "value": [1, 2]})
        assert "value" in str(caught.value)


def test_replicas_on_one_database_share_the_store(tmp_path: Path, postgres_url: str) -> None:
    folder = _project(tmp_path / "flows")
    with (
        serving(folder, checkpoint=postgres_url) as a,
        serving(folder, checkpoint=postgres_url) as b,
        sdk.get_sync_client(url=a) as on_a,
        sdk.get_sync_client(url=b) as on_b,
    ):
        _walk_the_store(on_a)
        assert on_b.store.get_item(["notes", "ada"], "n2")["value"]["text"] == "lives in Porto"
        on_a.runs.wait(None, "Remember", input={"user": "cy", "lang": "de"})
        assert on_b.runs.wait(None, "Recall", input={"user": "cy"})["profile"] == {"user": "cy", "lang": "de"}
