"""A web page cannot reach the studio: against the real studio (uvicorn on 127.0.0.1), a request naming another
host (DNS rebinding), a write from another origin, a call without the per-launch token and a body over the limit
are refused before anything is read, listed, served or written."""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from timing import deadline, scaled

from agentmap.studio import StudioConfig, background

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def studio(tmp_path: Path, **config: Any) -> Iterator[tuple[str, StudioConfig, Path]]:
    """The studio of a copy of branching.csv; its URL, its config (with its token) and the file."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    flow = tmp_path / "branching.csv"
    shutil.copy(ROOT / "graphs" / "branching.csv", flow)
    settings = StudioConfig(target=flow, checkpoint=str(tmp_path / "studio.db"), **config)
    with background(settings) as url:
        yield url, settings, flow


def _token(config: StudioConfig) -> dict[str, str]:
    return {"X-AgentMap-Token": config.token}


def test_a_studio_call_without_the_token_is_refused_and_with_it_answered(tmp_path: Path) -> None:
    with studio(tmp_path) as (url, config, _):
        assert "AgentMap studio" in httpx.get(url).text  # the page and its files need no token
        assert httpx.get(url + "studio/static/studio.js").status_code == 200
        for method, path in (("GET", "studio/api/files"), ("POST", "studio/api/serve?file=branching.csv")):
            for headers in ({}, {"X-AgentMap-Token": "wrong"}):
                refused = httpx.request(method, url + path, headers=headers)
                assert refused.status_code == 401 and refused.json()["code"] == "token-required", (path, headers)
                assert "token=" in refused.json()["hint"] and str(tmp_path) not in refused.text
        assert httpx.post(url + "server/threads", json={}).status_code == 401  # the served routes too
        listing = httpx.get(url + "studio/api/files", headers=_token(config)).json()
        assert listing["files"] == ["branching.csv"]
        served = httpx.post(url + "studio/api/serve?file=branching.csv", headers=_token(config))
        assert served.json()["assistants"][0]["graph_id"] == "Approval"
        assert httpx.post(url + "server/threads", json={}, headers=_token(config)).status_code == 200


def test_a_page_whose_domain_points_here_lists_reads_and_writes_nothing(tmp_path: Path) -> None:
    with studio(tmp_path) as (url, config, flow):
        before = flow.read_bytes()
        port = url.rstrip("/").rsplit(":", 1)[1]
        rebound = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}  # the page's own origin
        for headers in (rebound, {**rebound, **_token(config)}):  # even with the token
            listing = httpx.get(url + "studio/api/files", headers=headers)
            assert listing.status_code == 403 and listing.json()["code"] == "host-not-allowed"
            assert str(tmp_path) not in listing.text and "branching" not in listing.text
            read = httpx.get(url + "studio/api/open", params={"file": "branching.csv"}, headers=headers)
            assert read.status_code == 403 and "Approval" not in read.text
            saved = httpx.post(url + "studio/api/save", json=_save([["GraphName"]], "x"), headers=headers)
            assert saved.status_code == 403
        assert flow.read_bytes() == before


def test_a_write_from_another_origin_is_refused_and_nothing_is_served_or_saved(tmp_path: Path) -> None:
    with studio(tmp_path) as (url, config, flow):
        before = flow.read_bytes()
        opened = httpx.get(url + "studio/api/open", params={"file": "branching.csv"}, headers=_token(config)).json()
        rows = [r["cells"] for r in opened["rows"]]
        elsewhere = {**_token(config), "Origin": "http://evil.example"}
        refused = httpx.post(url + "studio/api/serve?file=branching.csv", headers=elsewhere)  # no body at all
        assert refused.status_code == 403 and refused.json()["code"] == "forbidden-origin"
        assert httpx.post(url + "server/threads", json={}, headers=_token(config)).status_code == 503  # not served
        emptied = _save(rows[:1], opened["version"])
        assert httpx.post(url + "studio/api/save", json=emptied, headers=elsewhere).status_code == 403
        plain = {**_token(config), "Content-Type": "text/plain"}  # a form's or a simple request's type
        sent = httpx.post(url + "studio/api/save", content=_json(emptied), headers=plain)
        assert sent.status_code == 415 and sent.json()["code"] == "not-json"
        assert flow.read_bytes() == before
        own = {**_token(config), "Origin": url.rstrip("/")}  # the studio's own page
        assert httpx.post(url + "studio/api/save", json=_save(rows, opened["version"]), headers=own).status_code == 200


def test_a_body_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with studio(tmp_path) as (url, config, _):
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        head = (
            "POST /studio/api/check HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nX-AgentMap-Token: {config.token}\r\n"
            f"Content-Length: {50 * 1024 * 1024}\r\n\r\n"
        )
        with socket.create_connection(("127.0.0.1", port), timeout=scaled(30)) as sock:
            sock.sendall(head.encode() + b'{"file": "branching.csv", "rows": [' + b" " * 65536)  # 64 KiB of 50 MiB
            answer = _response(sock)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b'"body-too-large"' in answer and b"5242880 bytes" in answer
    with studio(tmp_path / "small", max_body=1000) as (url, config, _):
        rows = [{"id": None, "cells": ["x" * 600]}, {"id": None, "cells": ["y" * 600]}]
        big = httpx.post(url + "studio/api/check", json={"file": "branching.csv", "rows": rows}, headers=_token(config))
        assert big.status_code == 413


def _save(rows: list[list[str]], base: str) -> dict[str, Any]:
    return {"file": "branching.csv", "rows": [{"id": i, "cells": c} for i, c in enumerate(rows)], "base": base}


def _json(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def _response(sock: socket.socket) -> bytes:
    """What the server answered before it had the whole body (the head and the JSON document), within 30 s."""
    got, give_up = b"", deadline(30)
    while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            pytest.fail(f"no answer within 30 s while 50 MiB were announced and 64 KiB sent: {got!r}")
        if not chunk or time.monotonic() > give_up:
            break
        got += chunk
    return got
