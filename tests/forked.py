"""Start the real `agentmap` command (or a Python script) as a new process without Python's start-up each time.

A durability test kills and restarts the command a dozen times; starting `python -m agentmap` costs about a
second each (the interpreter and its imports), most of a test's time. `start()` forks the command from a server
process that has imported AgentMap and LangGraph once (multiprocessing's fork server). The child is a real
process with its own pid: it runs `agentmap ARGS` in its own working folder and environment, with stdout and
stderr in files, and a signal sent to it (SIGKILL, SIGTERM, SIGINT) does to it what it does to the command
started from a shell. `python()` runs a script's text the same way, as `python -c` would. Tests of start-up
itself (imports, `--version`) use a fresh interpreter instead.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from timing import scaled

# agentmap.cli.app.COMMANDS (importing it here would load typer into the test process)
_COMMANDS = ["run", "check", "show", "project", "logs", "chat", "evaluation", "resume", "threads", "serve"]
_COMMANDS += ["mcp", "studio", "batch"]
_PRELOAD = [
    "agentmap.cli",
    "agentmap.cli.app",  # typer and every command's module (`agentmap.cli.app.COMMANDS`), built on each call
    *(f"agentmap.cli.{name}" for name in _COMMANDS),
    "agentmap._cli_api",
    "agentmap.runtime.api",
    "agentmap.runtime.compiler",
    "agentmap.runtime.runner",
    "agentmap.batch.executors",
    "agentmap.server",  # `agentmap serve`: FastAPI and the server's routes
    "agentmap.server._app",
    "agentmap.llm.agents",
    "agentmap.llm.engine",
    "langchain_openai",  # the LLM tests' models: about 1.5 s of imports per command otherwise
    "langchain_anthropic",
    "langgraph.graph",
    "langgraph.checkpoint.sqlite",
    "langgraph.checkpoint.postgres",
    "mcp.server.streamable_http_manager",  # `agentmap serve` offers /mcp when the SDK is installed
    # what most commands then imported on their first use (found by listing each command's new modules)
    "agentmap.cli._jsonout",
    "agentmap.llm._legacy_models",
    "agentmap.llm.offline",
    "agentmap.runtime.inputs",
    "langchain_core.tracers.stdout",
    "typer._click.decorators",
    "h11",  # an HTTP client's first connection
]
_FORKS = multiprocessing.get_context("forkserver")  # the batch executor's fork server too: ours serves both
_SERVER: int | None = None
"""The pid of the fork server this module started (with `_PRELOAD`)."""


def _preloaded_server() -> None:
    """Make this process's fork server one that has imported `_PRELOAD`. A test that ran a process batch here
    first started it with the batch executor's shorter list, and every command forked from that one imported
    the rest again (most of a command's CPU): that server is stopped and ours started (once a worker). Reads
    multiprocessing's one `ForkServer` (`_forkserver`, whose `_stop` CPython's own tests use)."""
    global _SERVER
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver
    if server._forkserver_pid not in (None, _SERVER):
        server._stop()
    _FORKS.set_forkserver_preload(_PRELOAD)
    server.ensure_running()
    _SERVER = server._forkserver_pid


def _child(cwd: str, env: Mapping[str, str], out: str, err: str) -> None:
    """In the child: enter `cwd` with exactly `env`, stdout/stderr into files (or a terminal's device)."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        terminal = path.startswith("/dev/pts/")
        target = os.open(path, os.O_RDWR if terminal else os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)


def _leave(code: object) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def _command(args: Sequence[str], cwd: str, env: Mapping[str, str], out: str, err: str) -> None:
    """In the child: become `agentmap ARGS`."""
    _child(cwd, env, out, err)
    from agentmap.cli import main

    try:
        code: object = main(list(args))
    except SystemExit as exc:
        code = exc.code
    _leave(code)


def _script(code: str, cwd: str, env: Mapping[str, str], out: str, err: str) -> None:
    """In the child: run `code` as `python -c` would (a traceback on stderr and exit 1 if it raises)."""
    _child(cwd, env, out, err)
    sys.argv = ["-c"]
    try:
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        _leave(exc.code)
    except BaseException:
        traceback.print_exc()
        _leave(1)
    _leave(0)


class Forked:
    """A running `agentmap` command, with the parts of `subprocess.Popen` the tests use."""

    def __init__(self, process: Any, out: Path, err: Path) -> None:
        self._process = process
        self._out, self._err = out, err
        self.pid: int = process.pid

    @property
    def returncode(self) -> int | None:
        """The exit code (negative: killed by that signal), or None while it runs."""
        code: int | None = self._process.exitcode
        return code

    def poll(self) -> int | None:
        """The exit code if it has ended, else None."""
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """Send `sig` to the command's process."""
        os.kill(self.pid, sig)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the end, as `subprocess.Popen.wait` does (a test passes `timing.scaled(N)`); the exit code."""
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise TimeoutError(f"agentmap (pid {self.pid}) still running after {timeout} s")
        code: int = self._process.exitcode
        return code

    def printed(self) -> tuple[str, str]:
        """What it has printed on stdout and stderr so far (while it runs)."""
        return tuple(p.read_text(encoding="utf-8") if p.exists() else "" for p in (self._out, self._err))  # type: ignore[return-value]

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Wait for the end; what it printed on stdout and stderr."""
        self.wait(timeout)
        return self._out.read_text(encoding="utf-8"), self._err.read_text(encoding="utf-8")


_OUTPUTS: tempfile.TemporaryDirectory[str] | None = None
"""Where this test process keeps its commands' stdout and stderr files: removed when the process ends."""


def _spawn(target: Any, first: Any, cwd: Path, env: Mapping[str, str], terminal: str | None = None) -> Forked:
    global _OUTPUTS
    if _OUTPUTS is None:
        _OUTPUTS = tempfile.TemporaryDirectory(prefix="agentmap-forked-")
    folder = Path(tempfile.mkdtemp(dir=_OUTPUTS.name))
    _preloaded_server()
    out, err = folder / "stdout", folder / "stderr"
    where = (terminal, terminal) if terminal else (str(out), str(err))
    process = _FORKS.Process(target=target, args=(first, str(cwd), dict(env), *where))
    process.start()
    return Forked(process, out, err)


def start(*args: str | Path, cwd: Path, env: Mapping[str, str], terminal: str | None = None) -> Forked:
    """Start `agentmap ARGS` in `cwd` with exactly the environment `env` (stdin empty).

    `terminal`: the device of a pseudo-terminal (`os.ttyname` of its slave end) to write stdout and stderr on.
    """
    return _spawn(_command, [str(a) for a in args], cwd, env, terminal)


def run(*args: str | Path, cwd: Path, env: Mapping[str, str], timeout: float = 120) -> tuple[int, str, str]:
    """Run `agentmap ARGS` to its end (`timeout`: seconds on an idle machine, scaled): exit code, stdout, stderr."""
    proc = start(*args, cwd=cwd, env=env)
    out, err = proc.communicate(timeout=scaled(timeout))
    return proc.wait(), out, err


def start_python(code: str, *, cwd: Path, env: Mapping[str, str] | None = None) -> Forked:
    """Start a Python script's text, as `python -c CODE` would."""
    return _spawn(_script, code, cwd, os.environ if env is None else env)


def python(code: str, *, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 120) -> tuple[int, str, str]:
    """Run a Python script's text to its end, as `python -c CODE` would (`timeout`: seconds on an idle machine,
    scaled): exit code, stdout, stderr."""
    proc = start_python(code, cwd=cwd, env=env)
    out, err = proc.communicate(timeout=scaled(timeout))
    return proc.wait(), out, err
