"""Every bad request gets a documented answer: the error shape of csv_specs/serve.md, never a 500 (issue 37).

A lone surrogate in a body is refused before it is stored (it used to be stored in a thread's metadata, and then
every `threads.search` answered 500, across restarts, until the thread was deleted); a store holding such a record
from before is read without failing; every route answers a battery of malformed requests in the one shape.
"""

from __future__ import annotations

import logging
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
from server_helpers import GRAPHS, serving
from timing import deadline, scaled

sdk = pytest.importorskip("langgraph_sdk")

SHAPE = {"code", "message", "detail", "request_id"}
JSON = {"content-type": "application/json"}


def _shaped(response: httpx.Response) -> dict[str, Any]:
    """The error document of `response`, checked to be in the documented shape."""
    body = response.json()
    assert isinstance(body, dict) and set(body) >= SHAPE, (response.status_code, response.text)
    assert body["message"] == body["detail"]
    return body


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with serving(GRAPHS / "hello_world.csv", checkpoint=str(tmp_path / "runs.db")) as url:
        yield url


@pytest.mark.parametrize(
    ("method", "path", "body", "place"),
    [
        ("POST", "/threads", '{"metadata": {"note": "\\ud800"}}', "metadata.note"),
        ("POST", "/threads", '{"metadata": {"\\udc00": 1}}', "metadata"),
        ("POST", "/threads/search", '{"metadata": {"note": "\\udfff"}}', "metadata.note"),
        ("POST", "/runs/wait", '{"assistant_id": "HelloWorld", "input": {"name": "\\ud800"}}', "input.name"),
        ("POST", "/runs/wait", '{"assistant_id": "HelloWorld", "metadata": {"n": 1e999}}', "metadata.n"),
        ("PUT", "/store/items", '{"namespace": ["a"], "key": "k", "value": {"v": "\\ud800"}}', "value.v"),
        (
            "POST",
            "/runs/crons",
            '{"assistant_id": "HelloWorld", "schedule": "* * * * *", "metadata": {"x": [NaN]}}',
            "metadata.x[0]",
        ),
        ("POST", "/threads", '{"metadata": {"n": ' + "9" * 5000 + "}}", "metadata.n"),
        ("POST", "/threads", '{"metadata": {"deep": ' + "[" * 200 + "]" * 200 + "}}", "metadata.deep"),
        ("POST", "/threads", "[" * 50_000 + "]" * 50_000, "the body"),
    ],
)
def test_a_value_the_server_cannot_keep_is_422_naming_its_place_and_nothing_is_stored(
    server: str, method: str, path: str, body: str, place: str
) -> None:
    with httpx.Client(base_url=server) as client:
        refused = client.request(method, path, content=body.encode(), headers=JSON)
        assert refused.status_code == 422, refused.text
        error = _shaped(refused)
        assert error["code"] == "bad-input" and error["message"].startswith(place + " "), error
        assert client.post("/threads/search", json={}).json() == []  # no thread made, and search still answers
        assert client.post("/runs/crons/search", json={}).json() == []


def test_the_sdk_gets_the_message_of_a_refused_value(server: str) -> None:
    with sdk.get_sync_client(url=server, api_key=None) as client:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.runs.wait(None, "HelloWorld", input={"name": "Ada", "errors": 1})
        assert caught.value.response.status_code == 422
        message = caught.value.response.json()["message"]
        assert (
            message
            == "input.errors must be a list, not a number: the runtime appends the error of every failed node to it"
        )
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.threads.create(metadata={"big": 2**63})  # what orjson, the SDK's encoder, still writes
        big = "metadata.big is 9223372036854775808, beyond the integers a checkpoint keeps"
        assert caught.value.response.json()["message"].startswith(big)


def test_a_body_that_is_not_json_is_400_with_its_line_and_column(server: str) -> None:
    refused = httpx.post(f"{server}/threads", content=b'{"metadata": {"a": 1,}}', headers=JSON)
    assert refused.status_code == 400
    error = _shaped(refused)
    assert error["code"] == "bad-request"
    assert error["message"] == "the body is not valid JSON: Expecting property name enclosed in double quotes " + (
        "(line 1, column 22)"
    )


def _poison(checkpoint: str) -> None:
    """Write two damaged thread records straight into the run store, as a server before these checks could."""
    rows = [
        ("old", "2020-01-01T00:00:00+00:00", "2020-01-01T00:00:00+00:00", '{"note": "caf\\u00e9 \\ud800"}', "idle"),
        ("broken", "2020-01-02T00:00:00+00:00", "2020-01-02T00:00:00+00:00", '{"note": ', "idle"),
    ]
    if checkpoint.startswith("postgresql"):
        import psycopg

        with psycopg.connect(checkpoint) as pg:
            pg.cursor().executemany("INSERT INTO agentmap_threads VALUES (%s, %s, %s, %s, %s)", rows)
        return
    db = sqlite3.connect(checkpoint)
    with db:
        db.executemany("INSERT INTO agentmap_threads VALUES (?, ?, ?, ?, ?)", rows)
    db.close()


def _damaged_records_are_read(checkpoint: str, caplog: pytest.LogCaptureFixture) -> None:
    with serving(GRAPHS / "hello_world.csv", checkpoint=checkpoint) as url, sdk.get_sync_client(url=url) as client:
        kept = client.threads.create(metadata={"owner": "ada"})["thread_id"]
    _poison(checkpoint)
    with (  # a new server on the same store: what was stored is read again
        caplog.at_level(logging.WARNING, logger="agentmap.server"),
        serving(GRAPHS / "hello_world.csv", checkpoint=checkpoint) as url,
        sdk.get_sync_client(url=url) as client,
    ):
        found = {t["thread_id"]: t["metadata"] for t in client.threads.search(limit=10)}
        assert found == {kept: {"owner": "ada"}, "old": {"note": "caf\u00e9 \ufffd"}, "broken": {}}
        assert client.threads.get("old")["metadata"] == {"note": "caf\u00e9 \ufffd"}
        client.threads.delete("old")
        client.threads.delete("broken")
        assert [t["thread_id"] for t in client.threads.search()] == [kept]
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("thread old: its metadata holds lone surrogates") for m in said), said
    assert any(m.startswith("thread broken: its metadata is not JSON") for m in said), said


@pytest.mark.slow
def test_a_thread_stored_with_a_lone_surrogate_is_listed_not_a_500_sqlite(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _damaged_records_are_read(str(tmp_path / "runs.db"), caplog)


@pytest.mark.postgres
@pytest.mark.slow
def test_a_thread_stored_with_a_lone_surrogate_is_listed_not_a_500_postgres(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    _damaged_records_are_read(postgres_url, caplog)


_BODIES = [
    b"",
    b"{",
    b"[]",
    b'"text"',
    b"null",
    b"{}",
    b'{"assistant_id": 1, "limit": "ten", "metadata": 5, "input": [], "thread_id": {}}',
    b'{"metadata": {"a": "\\ud800"}, "input": {"a": "\\udfff"}, "values": {"a": "\\ud800"}}',
    b'{"x": NaN, "y": 1e400}',
    b'{"a": ' + b"9" * 5000 + b"}",
    b"[" * 300 + b"]" * 300,
    b"\xff\xfe{}",
    b'{"assistant_id": "HelloWorld", "config": {"configurable": {"thread_id": 5}}, "checkpoint_id": 7}',
    b'{"assistant_id": "HelloWorld", "input": {"name": ' + b"[" * 300 + b"]" * 300 + b"}}",
    b'{"assistant_id": "HelloWorld", "input": {"name": "Ada", "errors": "none", "__interrupt__": 1}}',
]
_IDS = {"assistant_id": "HelloWorld", "run_id": "no-run", "cron_id": "no-cron", "checkpoint_id": "no-checkpoint"}


def _requests(spec: dict[str, Any], thread_ids: list[str]) -> Iterator[tuple[str, str, bytes | None]]:
    """Every route of the OpenAPI document, with each id known and unknown, each method, each bad body."""
    for template, operations in spec["paths"].items():
        for thread_id in thread_ids:
            path = template.replace("{thread_id}", thread_id)
            for name, value in _IDS.items():
                path = path.replace("{" + name + "}", value)
            for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                takes_body = "requestBody" in operations.get(method.lower(), {})
                for body in _BODIES if takes_body else [None]:
                    yield method, path, body


def test_every_route_answers_malformed_requests_in_the_documented_shape(server: str) -> None:
    """The battery: every route of /openapi.json, wrong methods, unknown ids, missing and malformed bodies."""
    spec = httpx.get(f"{server}/openapi.json").json()
    thread_id = httpx.post(f"{server}/threads", json={}).json()["thread_id"]
    battery = [*_requests(spec, [thread_id, "no-thread"])]
    battery += [("GET", path, None) for path in ("/viewer/nope.js", "/nope", "/threads/%ED%A0%80/state")]
    failures: list[str] = []
    client = httpx.Client(base_url=server, timeout=scaled(60))
    for method, path, body in battery:
        asked = f"{method} {path} {body!r:.60}"
        try:
            answer = client.request(method, path, content=body, headers=JSON if body is not None else {})
        except httpx.TransportError as exc:  # a server that failed may close the connection it answered on
            failures.append(f"{asked}: no answer ({exc!r})")
            client.close()
            client = httpx.Client(base_url=server, timeout=scaled(60))
            continue
        if answer.status_code >= 500:
            failures.append(f"{asked}: {answer.status_code} {answer.text[:200]}")
        elif answer.status_code >= 400:
            try:
                _shaped(answer)
            except (AssertionError, ValueError):
                failures.append(f"{asked}: {answer.status_code} not in the error shape: {answer.text[:200]}")
    client.close()
    assert failures == []
    assert len(battery) > 500  # every route was reached (the document lists about 30)


def test_what_uvicorn_answers_itself_is_in_the_documented_shape(tmp_path: Path) -> None:
    with serving(GRAPHS / "hello_world.csv", checkpoint="memory", max_connections=2, header_timeout=60) as url:
        address = urlparse(url)
        where = (address.hostname or "127.0.0.1", address.port or 80)
        with socket.create_connection(where, timeout=scaled(30)) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400") and b"application/json" in head
        assert httpx.Response(400, content=body).json()["code"] == "bad-request"
        held = [socket.create_connection(where, timeout=scaled(30)) for _ in range(2)]
        try:
            give_up = deadline(20)
            while (busy := httpx.get(f"{url}/ok")).status_code != 503:  # once the held sockets are accepted
                assert time.monotonic() < give_up, f"answered {busy.status_code} beyond the limit"
                time.sleep(0.05)
            error = busy.json()
            assert error["code"] == "busy" and "--max-connections" in error["message"]
        finally:
            for sock in held:
                sock.close()
