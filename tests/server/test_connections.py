"""Slow clients: a connection that does not send a whole request's headers in time is closed, a request beyond
the connection limit gets 503, and a request that was read is never cut however long its answer takes."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from server_helpers import make_project, serving
from timing import deadline, scaled

sdk = pytest.importorskip("langgraph_sdk")


def _connect(url: str) -> socket.socket:
    address = urlparse(url)
    sock = socket.create_connection((address.hostname or "127.0.0.1", address.port or 80), timeout=scaled(30))
    return sock


def _closed_by_server(sock: socket.socket, seconds: float, trickle: bytes = b"") -> bool:
    """Whether the server closes `sock` within `seconds`, while we send `trickle` a byte at a time."""
    give_up = deadline(seconds)
    sock.settimeout(0.1)
    sent = 0
    while time.monotonic() < give_up:
        if sent < len(trickle):
            try:
                sock.sendall(trickle[sent : sent + 1])
            except OSError:
                return True
            sent += 1
        try:
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


def test_a_client_that_sends_no_headers_or_trickles_them_is_closed(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "p")
    with serving(folder, checkpoint="memory", header_timeout=0.5) as url:
        silent, trickling = _connect(url), _connect(url)
        assert _closed_by_server(silent, 20), "a connection that sent nothing was kept open"
        endless = b"GET /ok HTTP/1.1\r\nHost: localhost\r\n" + b"X-Slow: " + b"a" * 10_000
        assert _closed_by_server(trickling, 20, endless), "a connection trickling its headers was kept open"
        with sdk.get_sync_client(url=url, api_key=None) as client:  # the server goes on serving
            assert client.runs.wait(None, "HelloWorld", input={"name": "Ada"})["greeting"] == "Hello, Ada!"


def test_the_next_request_on_a_kept_alive_connection_has_the_same_clock(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "p")
    with serving(folder, checkpoint="memory", header_timeout=0.5) as url:
        sock = _connect(url)
        sock.sendall(b"GET /ok HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 200")
        assert _closed_by_server(sock, 20, b"GET /ok HTTP/1.1\r\nHost: localhost\r\n" + b"X-Slow: " + b"a" * 10_000)


def test_a_request_that_was_read_is_answered_however_long_its_run_takes(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "p")
    with serving(folder, checkpoint="memory", header_timeout=0.2) as url, sdk.get_sync_client(url=url) as client:
        assert client.runs.wait(None, "Slow", input={"topic": "t"})["third"] == "rested"  # 0.9 s of nodes


def test_beyond_the_connection_limit_a_request_gets_503(tmp_path: Path) -> None:
    import httpx

    folder = make_project(tmp_path / "p")
    with serving(folder, checkpoint="memory", max_connections=3, header_timeout=60) as url:
        held = [_connect(url) for _ in range(3)]
        give_up = deadline(20)
        while (status := httpx.get(f"{url}/ok").status_code) != 503:  # the held sockets are accepted by now
            assert time.monotonic() < give_up, f"answered {status} beyond the limit"
            time.sleep(0.05)
        for sock in held:
            sock.close()
        give_up = deadline(20)
        while httpx.get(f"{url}/ok").status_code != 200:  # room again once they are gone
            assert time.monotonic() < give_up, "the server did not serve again after the connections closed"
            time.sleep(0.05)
