"""The guard in front of the API (key, body limit, request ids, CORS) and JSON errors, in process (no socket)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import GRAPHS

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from agentmap.errors import ConfigError
from agentmap.server import ServeConfig, create_app
from agentmap.server._security import is_loopback, require_key


def _client(**config: Any) -> TestClient:
    return TestClient(
        create_app(ServeConfig(targets=(str(GRAPHS / "hello_world.csv"),), checkpoint="memory", **config))
    )


@pytest.fixture
def open_api() -> Iterator[TestClient]:
    with _client() as client:
        yield client


@pytest.fixture
def keyed() -> Iterator[TestClient]:
    with _client(api_key="k3y") as client:
        yield client


def test_without_a_key_everything_is_open(open_api: TestClient) -> None:
    assert open_api.post("/assistants/search", json={}).status_code == 200


def test_key_required_by_header_or_bearer(keyed: TestClient) -> None:
    refused = keyed.post("/assistants/search", json={})
    assert refused.status_code == 401
    assert refused.json()["code"] == "unauthorized" and "X-Api-Key" in refused.json()["hint"]
    assert keyed.post("/assistants/search", json={}, headers={"X-Api-Key": "nope"}).status_code == 401
    assert keyed.post("/assistants/search", json={}, headers={"X-Api-Key": "k3y"}).status_code == 200
    assert keyed.post("/assistants/search", json={}, headers={"Authorization": "Bearer k3y"}).status_code == 200
    assert keyed.post("/assistants/search", json={}, headers={"Authorization": "Basic k3y"}).status_code == 401


def test_public_paths_need_no_key(keyed: TestClient) -> None:
    assert keyed.get("/health").json()["ok"] is True
    page = keyed.get("/").text
    assert "<title>AgentMap run viewer</title>" in page
    assert "<svg" not in page and "HelloWorld" not in page  # the page is public, the workflows are not
    assert keyed.get("/viewer/viewer.js").status_code == 200 and keyed.get("/viewer/viewer.css").status_code == 200
    assert keyed.get("/assistants/HelloWorld/svg").status_code == 401
    assert keyed.get("/assistants/HelloWorld/svg", headers={"X-Api-Key": "k3y"}).text.startswith("<svg")
    assert "/threads/{thread_id}/runs/wait" in keyed.get("/openapi.json").json()["paths"]


def test_non_loopback_host_needs_a_key() -> None:
    with pytest.raises(ConfigError) as caught:
        require_key("0.0.0.0", None)
    assert caught.value.code == "api-key-required" and "--api-key-env" in (caught.value.hint or "")
    require_key("0.0.0.0", "k")
    require_key("127.0.0.1", None)
    assert is_loopback("localhost") and is_loopback("::1") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org") and not is_loopback("192.168.1.4")


def test_body_size_limit() -> None:
    with _client(max_body=200) as client:
        big = {"assistant_id": "HelloWorld", "input": {"name": "x" * 500}}
        response = client.post("/runs/wait", json=big)
        assert response.status_code == 413 and response.json()["code"] == "body-too-large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is counted while reading
            yield b'{"assistant_id": "HelloWorld", "input": {"name": "'
            yield b"y" * 500
            yield b'"}}'

        response = client.post("/runs/wait", content=chunks(), headers={"Content-Type": "application/json"})
        assert response.status_code == 413
        assert client.post("/runs/wait", json={"assistant_id": "HelloWorld", "input": {"name": "A"}}).status_code == 200


def test_request_ids_in_responses_errors_and_logs(open_api: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="agentmap.server"):
        response = open_api.get("/assistants/Nope", headers={"X-Request-Id": "abc-123"})
    assert response.headers["x-request-id"] == "abc-123"
    assert response.status_code == 404 and response.json()["request_id"] == "abc-123"
    assert any("request_id=abc-123 GET /assistants/Nope 404" in r.getMessage() for r in caplog.records)
    generated = open_api.get("/health").headers["x-request-id"]
    assert len(generated) == 32 and generated != open_api.get("/health").headers["x-request-id"]


def test_cors_is_off_unless_configured(open_api: TestClient) -> None:
    preflight = {"Origin": "http://app.example", "Access-Control-Request-Method": "POST"}
    assert "access-control-allow-origin" not in open_api.options("/runs/wait", headers=preflight).headers
    with _client(cors_origins=("http://app.example",)) as client:
        allowed = client.options("/runs/wait", headers=preflight)
        assert allowed.headers["access-control-allow-origin"] == "http://app.example"


def test_errors_are_json_with_agentmap_codes(open_api: TestClient) -> None:
    wrong_type = open_api.post("/runs/wait", json={"assistant_id": "HelloWorld", "input": ["Ada"]})
    assert wrong_type.status_code == 422 and wrong_type.json()["code"] == "bad-request"
    assert "input" in wrong_type.json()["message"]
    missing = open_api.post("/runs/wait", json={"input": {}})
    assert missing.status_code == 422 and "assistant_id" in missing.json()["message"]
    unknown_key = open_api.post("/runs/wait", json={"assistant_id": "HelloWorld", "input": {"nam": "A"}})
    assert unknown_key.json()["code"] == "bad-input" and "state keys: name" in unknown_key.json()["hint"]
    other = open_api.post("/crons", json={})
    assert other.status_code == 404 and other.json()["message"] == "POST /crons is not supported by agentmap serve"
    store = open_api.put("/store/items", json={"namespace": ["a"], "key": "k"})
    assert store.status_code == 422 and store.json()["code"] == "bad-request" and "value" in store.json()["message"]
    context = open_api.post("/runs/wait", json={"assistant_id": "HelloWorld", "context": {"a": 1}})
    assert context.status_code == 422 and "'context' is not supported" in context.json()["message"]
    interrupt = open_api.post("/runs/wait", json={"assistant_id": "HelloWorld", "interrupt_before": ["Finish"]})
    assert interrupt.status_code == 422 and "interrupt_before needs a thread" in interrupt.json()["message"]


def test_a_folder_serves_its_workflows_and_skips_other_files(tmp_path: Path) -> None:
    (tmp_path / "hello.csv").write_text((GRAPHS / "hello_world.csv").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "data.csv").write_text("id,score\n1,2\n", encoding="utf-8")  # a data table, not a workflow
    app = create_app(ServeConfig(targets=(str(tmp_path),), checkpoint="memory"))
    with TestClient(app) as client:
        assert [a["graph_id"] for a in client.post("/assistants/search", json={}).json()] == ["HelloWorld"]
