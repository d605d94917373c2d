"""Protocol edges found by clients no one here wrote: thread ids, numbers and text JSON cannot carry back, a
browser's preflight on a server with a key, cancel with `wait=1`. In process (no socket)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from server_helpers import GRAPHS

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from agentmap.server import ServeConfig, create_app


def _client(**config: Any) -> TestClient:
    return TestClient(
        create_app(ServeConfig(targets=(str(GRAPHS / "hello_world.csv"),), checkpoint="memory", **config))
    )


@pytest.fixture
def api() -> Iterator[TestClient]:
    with _client() as client:
        yield client


@pytest.mark.parametrize("thread_id", ["a/b", "nul\x00", "x" * 300, "caf\u00e9"])
def test_thread_ids_are_checked_with_the_rule_named(api: TestClient, thread_id: str) -> None:
    refused = api.post("/threads", json={"thread_id": thread_id})
    assert refused.status_code == 422 and "letters, digits and - _ . : @" in refused.json()["message"]
    assert api.post("/threads", json={"thread_id": "ok-1:a@b.c_d"}).status_code == 200


def test_a_run_that_creates_its_thread_checks_the_id_too(api: TestClient) -> None:
    body = {"assistant_id": "HelloWorld", "input": {"name": "A"}, "if_not_exists": "create"}
    refused = api.post(f"/threads/{'x' * 300}/runs/wait", json=body)
    assert refused.status_code == 422 and "1 to 256 characters" in refused.json()["message"]


def test_numbers_and_text_json_cannot_carry_are_refused_before_running(api: TestClient) -> None:
    tid = api.post("/threads", json={}).json()["thread_id"]
    for raw in ('{"name": NaN}', '{"name": Infinity}', '{"name": "\\ud800"}'):
        body = '{"assistant_id": "HelloWorld", "input": ' + raw + "}"
        answer = api.post(f"/threads/{tid}/runs/wait", content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 422 and answer.json()["code"] == "bad-input", answer.text
        assert "input.name" in answer.json()["message"]
    assert api.get(f"/threads/{tid}/runs").json() == []  # nothing ran, nothing recorded
    assert api.get("/ok").status_code == 200  # and the connection stays usable


def test_a_browser_preflight_needs_no_key_but_the_request_after_it_does() -> None:
    with _client(api_key="k3y", cors_origins=("http://app.example",)) as client:
        preflight = {"Origin": "http://app.example", "Access-Control-Request-Method": "POST"}
        allowed = client.options("/runs/wait", headers=preflight)
        assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "http://app.example"
        assert client.options("/runs/wait").status_code == 401  # not a preflight: the key is asked
        assert client.post("/runs/wait", json={"assistant_id": "HelloWorld"}).status_code == 401


def test_cancel_with_wait_answers_an_empty_json_object(api: TestClient) -> None:
    tid = api.post("/threads", json={}).json()["thread_id"]
    run = api.post(f"/threads/{tid}/runs", json={"assistant_id": "HelloWorld", "input": {"name": "A"}}).json()
    answer = api.post(f"/threads/{tid}/runs/{run['run_id']}/cancel?wait=1")
    assert answer.status_code == 200 and answer.json() == {}
    stored = api.get(f"/threads/{tid}/runs/{run['run_id']}").json()
    assert stored["status"] in ("interrupted", "success")
    assert stored["kwargs"]["input"] == {"name": "A"} == run["kwargs"]["input"]  # as LangGraph's server shows it


def test_a_body_nested_too_deeply_gets_the_api_error_shape(api: TestClient) -> None:
    body = '{"assistant_id": "HelloWorld", "input": ' + "[" * 100_000 + "]" * 100_000 + "}"
    answer = api.post("/runs/wait", content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422  # a value no run can keep, as one nested 101 levels deep (test_bad_input.py)
    assert answer.json()["code"] == "bad-input" and answer.json()["hint"] and answer.json()["message"]
