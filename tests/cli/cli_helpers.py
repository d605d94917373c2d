"""Run the real `agentmap` command: in-process (fast), in a subprocess (with pipes), or in a pseudo-terminal.

`agentmap()` calls `agentmap.cli.main` inside the test process, with stdin empty and stdout/stderr captured
(not terminals, as with pipes), the environment scrubbed as for a child process, and the process-wide state
the command changes (working folder, garbage collector, logging, SIGINT handler, output mode) put back
afterwards. `agentmap_forked()` runs it in a new process forked from one that has imported it (a process killed, or
a second one); `agentmap_subprocess()` starts `python -m agentmap` for what only a fresh interpreter shows
(start-up, imports); `agentmap_tty()` runs it on a pseudo-terminal.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from signal import SIGKILL

from components import clean_env
from timing import deadline
from typer.testing import CliRunner

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
    env = clean_env()
    env.pop("NO_COLOR", None)
    env.update(extra or {})
    return env


def agentmap(*args: str | Path, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 120) -> Result:
    """Run `agentmap ARGS` in this process, as `agentmap_subprocess` would run it with pipes.

    `timeout` is accepted for symmetry with `agentmap_subprocess` and not enforced in-process.
    """
    from agentmap.cli import main

    kept = clean_env()  # the test's own AGENTMAP_STATE_DIR stays
    overrides: dict[str, str | None] = {k: None for k in os.environ if k.startswith("AGENTMAP_") and k not in kept}
    overrides["NO_COLOR"] = None
    overrides.update(env or {})
    with _restored_process_state(cwd), CliRunner().isolation(env=overrides) as (out, err, _):
        code = main([str(arg) for arg in args])
        sys.stdout.flush()
        sys.stderr.flush()
        return Result(code, out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace"))


_USER_FILE_MODULES = ("agentmap_custom_agents", "agentmap_functions", "agentmap_tools")


@contextmanager
def _restored_process_state(cwd: Path) -> Iterator[None]:
    """Enter `cwd`; afterwards forget the user's files a command imported (a new process re-reads them)."""
    saved_modules = set(sys.modules)
    here = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        for name in set(sys.modules) - saved_modules:
            if name.startswith(_USER_FILE_MODULES):
                del sys.modules[name]


def agentmap_subprocess(
    *args: str | Path, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 120
) -> Result:
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


def agentmap_forked(
    *args: str | Path, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 120
) -> Result:
    """Run `agentmap ARGS` in a new process forked warm (`tests/forked.py`), for a test that needs a process of its
    own (killed, or a second process after a first) but not Python's start-up: a second less a run."""
    import forked

    code, out, err = forked.run(*args, cwd=cwd, env=_env(env), timeout=timeout)
    return Result(code, out, err)


def agentmap_tty(
    *args: str | Path, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 120, columns: int = 160
) -> Result:
    """Run `agentmap ARGS` in a new process (forked warm) with stdout and stderr on a pseudo-terminal (merged)."""
    import forked

    master, slave = pty.openpty()
    environment = _env(env)
    environment.update({"COLUMNS": str(columns), "LINES": "50", "TERM": "xterm-256color"})
    # the slave end stays open here until the end: the child opens it by name, whenever it gets there
    proc = forked.start(*args, cwd=cwd, env=environment, terminal=os.ttyname(slave))
    chunks: list[bytes] = []
    give_up = deadline(timeout)
    try:
        while time.monotonic() < give_up:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the terminal closed
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, give_up - time.monotonic()))
    finally:
        os.close(master)
        os.close(slave)
        if proc.poll() is None:
            proc.send_signal(SIGKILL)
    return Result(code, b"".join(chunks).decode("utf-8", "replace"), "")


def write(path: Path, text: str) -> Path:
    """Write `text` to `path` (creating folders) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
