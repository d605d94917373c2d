"""Run the real `agentmap` command in a subprocess (with pipes, or in a pseudo-terminal)."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "graphs"
COMMAND = [sys.executable, "-m", "agentmap"]


@dataclass
class Result:
    """What a command printed and its exit code."""

    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        """stdout and stderr together."""
        return self.out + self.err

    @property
    def plain(self) -> str:
        """stdout and stderr without terminal escape sequences."""
        return _ANSI.sub("", self.text)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMAP_")}
    env.pop("NO_COLOR", None)
    env.update(extra or {})
    return env


def agentmap(*args: str | Path, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 120) -> Result:
    """Run `python -m agentmap ARGS` with pipes (so stdout is not a terminal)."""
    proc = subprocess.run(
        [*COMMAND, *map(str, args)],
        cwd=cwd,
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def agentmap_tty(
    *args: str | Path, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 120, columns: int = 160
) -> Result:
    """Run `python -m agentmap ARGS` with stdout and stderr on a pseudo-terminal (output merged)."""
    master, slave = pty.openpty()
    environment = _env(env)
    environment.update({"COLUMNS": str(columns), "LINES": "50", "TERM": "xterm-256color"})
    proc = subprocess.Popen(
        [*COMMAND, *map(str, args)],
        cwd=cwd,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the terminal closed: the process has exited
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return Result(code, b"".join(chunks).decode("utf-8", "replace"), "")


def write(path: Path, text: str) -> Path:
    """Write `text` to `path` (creating folders) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
