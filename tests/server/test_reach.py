"""A web page cannot reach `agentmap serve`: requests naming another host (DNS rebinding), writes from another
origin and bodies that are not JSON (cross-site "simple" requests) are refused, against the real server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from components import clean_env
from server_helpers import GRAPHS, make_project, serving

from agentmap.server import ServeConfig, background

HELLO = str(GRAPHS / "hello_world.csv")


def _threads(url: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = httpx.post(f"{url}/threads/search", json={}).json()
    return found


def test_a_request_naming_another_host_is_refused_and_lists_nothing() -> None:
    with serving(HELLO, checkpoint="memory") as url:
        for method, path in (("GET", "/assistants/HelloWorld"), ("POST", "/assistants/search"), ("GET", "/")):
            refused = httpx.request(method, url + path, json={} if method == "POST" else None, headers=_host("evil"))
            assert refused.status_code == 403 and refused.json()["code"] == "host-not-allowed", path
            assert "--allow-host evil.example" in refused.json()["hint"]
            assert "HelloWorld" not in refused.text and "viewer" not in refused.text
        port = url.rsplit(":", 1)[1]
        for name in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost"):
            assert httpx.get(f"{url}/assistants/HelloWorld", headers={"Host": name}).status_code == 200, name


def test_names_the_user_allows_are_answered(tmp_path: Path) -> None:
    with serving(HELLO, checkpoint="memory", allowed_hosts=("api.example.com", "*.corp.example")) as url:
        for name, status in (("api.example.com", 200), ("a.corp.example:443", 200), ("corp.example", 403)):
            assert httpx.get(f"{url}/assistants/HelloWorld", headers={"Host": name}).status_code == status, name
        assert httpx.get(f"{url}/assistants/HelloWorld", headers=_host("evil")).status_code == 403
    from fastapi.testclient import TestClient

    from agentmap.server import create_app

    app = create_app(ServeConfig(targets=(HELLO,), checkpoint="memory", allowed_hosts=("API.Example.com",)))
    with TestClient(app) as client:  # the application on its own (a user's own ASGI server in front)
        assert client.get("/assistants/HelloWorld", headers={"Host": "api.example.com"}).status_code == 200
        assert client.get("/assistants/HelloWorld", headers=_host("evil")).status_code == 403


def test_beyond_loopback_with_a_key_every_name_is_answered_unless_names_are_given() -> None:
    from agentmap.server import hosts_for

    assert hosts_for("127.0.0.1", []) == () and hosts_for("0.0.0.0", []) == ("*",)
    assert hosts_for("0.0.0.0", ["API.example.com:8443"]) == ("api.example.com",)
    key = {"X-Api-Key": "k3y"}
    config = ServeConfig(targets=(HELLO,), checkpoint="memory", api_key="k3y")
    with background(config, host="0.0.0.0") as url:  # behind a load balancer: its public name is not known here
        local = "http://127.0.0.1:" + url.rsplit(":", 1)[1]
        assert httpx.get(f"{local}/assistants/HelloWorld", headers={**key, "Host": "agentmap.lb"}).status_code == 200
    config = ServeConfig(targets=(HELLO,), checkpoint="memory", api_key="k3y", allowed_hosts=("agentmap.lb",))
    with background(config, host="0.0.0.0") as url:
        local = "http://127.0.0.1:" + url.rsplit(":", 1)[1]
        assert httpx.get(f"{local}/assistants/HelloWorld", headers={**key, "Host": "agentmap.lb"}).status_code == 200
        assert httpx.get(f"{local}/assistants/HelloWorld", headers={**key, **_host("evil")}).status_code == 403
        assert httpx.get(f"{local}/assistants/HelloWorld", headers=key).status_code == 200  # the address itself


def test_a_cross_origin_text_plain_post_to_a2a_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    pytest.importorskip("a2a")
    sent = {"role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "Ada"}]}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": sent}})
    with serving(make_project(tmp_path / "p"), checkpoint=str(tmp_path / "runs.db")) as url:
        plain = {"Content-Type": "text/plain"}  # what a page may send another origin without asking
        refused = httpx.post(f"{url}/a2a/HelloWorld", content=body, headers={**plain, "Origin": "http://evil.example"})
        assert refused.status_code == 403 and refused.json()["code"] == "forbidden-origin"
        assert "--cors-origin" in refused.json()["hint"]
        cross_site = {**plain, "Sec-Fetch-Site": "cross-site"}  # a browser that sends no Origin still says this
        assert httpx.post(f"{url}/a2a/HelloWorld", content=body, headers=cross_site).status_code == 403
        not_json = httpx.post(f"{url}/a2a/HelloWorld", content=body, headers=plain)  # no page: the type alone
        assert not_json.status_code == 415 and not_json.json()["code"] == "not-json"
        assert "application/json" in not_json.json()["hint"]
        assert _threads(url) == []  # nothing ran
        sent_json = httpx.post(f"{url}/a2a/HelloWorld", content=body, headers={"Content-Type": "application/json"})
        assert sent_json.json()["result"]["status"]["state"] == "completed"
        assert len(_threads(url)) == 1


def test_writes_come_from_no_page_the_servers_own_page_or_an_allowed_origin() -> None:
    run = {"assistant_id": "HelloWorld", "input": {"name": "Ada"}}
    with serving(HELLO, checkpoint="memory", cors_origins=("http://app.example",)) as url:
        for origin in ("http://evil.example", "null", url.replace("127.0.0.1", "localhost"), url + "1"):
            refused = httpx.post(f"{url}/runs/wait", json=run, headers={"Origin": origin})
            assert refused.status_code == 403 and refused.json()["code"] == "forbidden-origin", origin
            assert httpx.delete(f"{url}/threads/x", headers={"Origin": origin}).status_code == 403
        for origin in (url, "http://app.example"):  # the viewer's page; a page the user allowed
            answer = httpx.post(f"{url}/runs/wait", json=run, headers={"Origin": origin})
            assert answer.json()["greeting"] == "Hello, Ada!", origin
        assert httpx.post(f"{url}/runs/wait", json=run).json()["greeting"] == "Hello, Ada!"  # no page: curl, SDKs
        reading = httpx.get(f"{url}/assistants/HelloWorld", headers={"Origin": "http://evil.example"})
        assert reading.status_code == 200  # a page cannot read the answer (no CORS header for it)
        assert "access-control-allow-origin" not in reading.headers


@pytest.mark.slow
def test_allow_host_and_the_setting_reach_the_command(tmp_path: Path) -> None:
    from served import Served

    (tmp_path / "agentmap.yaml").write_text("serve:\n  allowed_hosts: ['*.corp.example']\n", encoding="utf-8")
    clean = clean_env()
    server = Served(HELLO, "--checkpoint", "memory", "--allow-host", "API.example.com", cwd=tmp_path, env=clean)
    try:
        server.start()
        for name, status in (("api.example.com", 200), ("x.corp.example", 200), ("evil.example", 403)):
            assert httpx.get(f"{server.url}/assistants/HelloWorld", headers={"Host": name}).status_code == status
    finally:
        server.stop()


def _host(name: str) -> dict[str, str]:
    return {"Host": f"{name}.example"}
