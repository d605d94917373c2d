"""What `agentmap serve --auth` costs a request: `runs.wait` of a 1-node graph with auth handlers against without.

Two real servers (`agentmap serve` in subprocesses, each on its own SQLite file, access logs to /dev/null): one with
`--auth` (LangGraph's "private conversations" tutorial file: a token looked up by `@auth.authenticate`, a global
`@auth.on` handler that stamps the owner and returns `{"owner": ...}`, applied by the store's queries), one without.
The client is langgraph-sdk's sync client, one request at a time, on a thread of its own on each server (so the
filtered thread lookup is on the measured path). Each round times `--calls` runs on one server then the other,
taking turns on which goes first; per round the p50 of each, their difference (the added ms) and their ratio.
Figures: min/median/max over the rounds (target: at most 1 ms added at p50).

Run: `python bench/auth.py [--rounds 9] [--calls 60]`.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from langgraph_sdk import get_sync_client

GRAPH = "GraphName,Node,AgentType,Input_Fields,Output_Field\nEcho,Reply,echo,message,reply\n"

AUTH = """
from langgraph_sdk import Auth

VALID_TOKENS = {"user1-token": {"id": "user1", "name": "Alice"}, "user2-token": {"id": "user2", "name": "Bob"}}
auth = Auth()


@auth.authenticate
async def get_current_user(authorization: str | None) -> Auth.types.MinimalUserDict:
    assert authorization
    scheme, token = authorization.split()
    assert scheme.lower() == "bearer"
    if token not in VALID_TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid token")
    return {"identity": VALID_TOKENS[token]["id"]}


@auth.on
async def add_owner(ctx: Auth.types.AuthContext, value: dict):
    filters = {"owner": ctx.user.identity}
    metadata = value.setdefault("metadata", {})
    metadata.update(filters)
    return filters
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def server(folder: Path, *extra: str) -> Iterator[str]:
    """`agentmap serve echo.csv EXTRA` in `folder` on a free port; its URL once it answers."""
    port = _free_port()
    command = [sys.executable, "-m", "agentmap", "serve", "echo.csv", "--port", str(port), *extra]
    proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"agentmap serve {' '.join(extra)} did not start")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def timed(client: object, thread_id: str, calls: int) -> list[float]:
    """Milliseconds of each of `calls` `runs.wait` on `thread_id` (each checked)."""
    found = []
    for n in range(calls):
        started = time.perf_counter()
        result = client.runs.wait(thread_id, "Echo", input={"message": f"m{n}"})  # type: ignore[attr-defined]
        found.append((time.perf_counter() - started) * 1000)
        assert result["reply"] == {"message": f"m{n}"}, result
    return found


def _figures(values: list[float], unit: str) -> str:
    return f"min {min(values):.3f}{unit}  median {statistics.median(values):.3f}{unit}  max {max(values):.3f}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        on_folder, off_folder = Path(tmp) / "on", Path(tmp) / "off"
        for folder in (on_folder, off_folder):
            folder.mkdir()
            (folder / "echo.csv").write_text(GRAPH, encoding="utf-8")
        (on_folder / "auth.py").write_text(AUTH, encoding="utf-8")
        with (
            server(on_folder, "--checkpoint", "runs.db", "--auth", "auth.py:auth") as on_url,
            server(off_folder, "--checkpoint", "runs.db") as off_url,
        ):
            on = get_sync_client(url=on_url, api_key=None, headers={"Authorization": "Bearer user1-token"})
            off = get_sync_client(url=off_url, api_key=None)
            on_thread, off_thread = on.threads.create()["thread_id"], off.threads.create()["thread_id"]
            assert on.threads.get(on_thread)["metadata"]["owner"] == "user1"  # the handler ran
            timed(on, on_thread, 10), timed(off, off_thread, 10)  # warm up: imports, connections, caches
            added, ratios, p50_on, p50_off = [], [], [], []
            for n in range(args.rounds):
                if n % 2:
                    with_auth, without = timed(on, on_thread, args.calls), timed(off, off_thread, args.calls)
                else:
                    without, with_auth = timed(off, off_thread, args.calls), timed(on, on_thread, args.calls)
                a, b = statistics.median(with_auth), statistics.median(without)
                p50_on.append(a)
                p50_off.append(b)
                added.append(a - b)
                ratios.append(a / b)
    print(f"runs.wait of a 1-node graph on a thread, {args.rounds} rounds of {args.calls} calls each, alternating")
    print(f"  p50 with --auth:     {_figures(p50_on, ' ms')}")
    print(f"  p50 without:         {_figures(p50_off, ' ms')}")
    print(f"  added at p50:        {_figures(added, ' ms')}   (target: at most 1 ms)")
    print(f"  ratio on / off:      {_figures(ratios, '')}")


if __name__ == "__main__":
    main()
