"""Slow clients against a real `agentmap serve`: N sockets that trickle their headers, and a normal client.

Starts `agentmap serve graphs/hello_world.csv` (a subprocess, `--header-timeout`), opens `--clients` sockets
that send a request line and then one header byte a second, and meanwhile times `GET /ok` and a
`runs.wait` of hello_world from a normal client, against the same requests before the slow clients came
(the baseline, measured in the same run). Prints how many slow sockets the server closed and when, and the
normal client's latencies (min / median / max) with and without them; at `--max-connections` (1000) its
requests are answered 503 until the slow sockets are closed, and counted.
Run: `python bench/slow_clients.py [--clients 1000] [--header-timeout 10] [--hold 60]`.
"""

from __future__ import annotations

import argparse
import contextlib
import selectors
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _times(url: str, count: int, refused: list[int] | None = None) -> list[float]:
    """Latencies of `count` answered rounds (`GET /ok` then a run); 503s (beyond the connection limit) are
    counted in `refused` and tried again a tenth of a second later."""
    spent: list[float] = []
    with httpx.Client(base_url=url, timeout=30) as client:
        while len(spent) < count:
            start = time.perf_counter()
            ok = client.get("/ok").status_code
            if ok == 503 and refused is not None:
                refused.append(ok)
                time.sleep(0.1)
                continue
            answer = client.post("/runs/wait", json={"assistant_id": "HelloWorld", "input": {"name": "A"}})
            assert ok == 200 and answer.status_code == 200, answer.text
            spent.append(time.perf_counter() - start)
    return spent


def _show(label: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{label}: {min(ms):.1f} / {statistics.median(ms):.1f} / {max(ms):.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--header-timeout", type=float, default=10.0)
    parser.add_argument("--hold", type=float, default=60.0, help="how long the slow clients keep trickling")
    args = parser.parse_args()
    port = _free_port()
    command = [sys.executable, "-m", "agentmap", "serve", "graphs/hello_world.csv", "--port", str(port)]
    command += ["--checkpoint", "memory", "--header-timeout", str(args.header_timeout)]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/ok").status_code == 200:
                    break
            assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
            time.sleep(0.1)
        before = _times(url, 20)
        slow = []
        for _ in range(args.clients):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setblocking(False)
            sock.send(b"POST /runs/wait HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            slow.append(sock)
        opened = time.monotonic()
        refused: list[int] = []
        during = _times(url, 20, refused)
        selector = selectors.DefaultSelector()
        for sock in slow:
            selector.register(sock, selectors.EVENT_READ)
        closed: dict[int, float] = {}
        next_byte = time.monotonic() + 1
        while len(closed) < len(slow) and time.monotonic() - opened < args.hold:
            for key, _ in selector.select(timeout=0.2):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    closed[sock.fileno()] = time.monotonic() - opened
                    selector.unregister(sock)
            if time.monotonic() >= next_byte:
                next_byte += 1
                for sock in slow:
                    if sock.fileno() not in closed:
                        with contextlib.suppress(OSError):
                            sock.send(b"a")
        after = sorted(closed.values())
        print(f"{args.clients} slow clients, --header-timeout {args.header_timeout:g}s, trickling one byte a second:")
        if after:
            print(
                f"  closed by the server: {len(after)} of {args.clients}, "
                f"first at {after[0]:.1f}s, last at {after[-1]:.1f}s after they opened"
            )
        else:
            print(f"  closed by the server: none in {args.hold:g}s")
        print("  normal client (GET /ok + runs.wait of hello_world), min / median / max:")
        print("  " + _show("without slow clients", before))
        print("  " + _show("with them open      ", during) + f"  ({len(refused)} answered 503 while at the limit)")
        print(f"  ratio of medians: {statistics.median(during) / statistics.median(before):.2f}x")
        for sock in slow:
            sock.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
