"""`agentmap serve ARGS` as a real process (see forked.py) on a free port, waited for until it answers `/ok`."""

from __future__ import annotations

import signal
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Self

import forked
import httpx
from timing import deadline, scaled


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Served:
    """`agentmap serve ARGS --port PORT` in `cwd` with exactly the environment `env` (PORT: a free one if not given).

    `start()` starts it and waits (60 s at most) until `/ok` answers; `spawn()` and `wait_up()` do the two halves
    (to start several at once). A server that exits before it answers fails the wait with what it printed.
    """

    def __init__(self, *args: str | Path, cwd: Path, env: Mapping[str, str], port: int | None = None) -> None:
        self.args, self.cwd, self.env = [str(a) for a in args], cwd, dict(env)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: forked.Forked | None = None

    def start(self) -> Self:
        self.spawn()
        return self.wait_up()

    def spawn(self) -> None:
        self.proc = forked.start("serve", *self.args, "--port", str(self.port), cwd=self.cwd, env=self.env)

    def wait_up(self, timeout: float = 60) -> Self:
        give_up = deadline(timeout)
        while not self.up():
            if time.monotonic() > give_up:
                raise AssertionError(f"the server on port {self.port} did not answer /ok within {timeout} s")
            time.sleep(0.01)
        return self

    def up(self) -> bool:
        """Whether `/ok` answers 200 now (an AssertionError with the server's stderr if it has exited)."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"the server exited: {self.proc.communicate(scaled(5))[1][-2000:]}")
        try:
            return httpx.get(f"{self.url}/ok", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` and wait (60 s at most) for the end."""
        assert self.proc is not None
        self.proc.send_signal(sig)
        self.proc.wait(scaled(60))

    def stop(self, sig: int = signal.SIGKILL) -> None:
        """`kill(sig)` if it still runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.kill(sig)
