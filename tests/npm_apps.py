"""The Node.js programs the tests run (LangGraph's JS SDK, the A2A and AG-UI clients, the MCP Inspector, LangChain's
Agent Chat UI), each built once: its pinned packages installed by `npm ci` from tests/js/NAME's lock file, its own
files copied beside them, then its build commands run.

A build is kept in a folder named by a digest of everything it is made of (the package and lock files, the copied
files, the commands), under `AGENTMAP_TEST_NPM_CACHE` (default: ~/.cache/agentmap-tests/npm): the next test run,
and every xdist worker of this one, uses it as it is. Builds of one digest take turns on a file lock, so two
workers never install into one folder; a folder whose build did not finish is built again. Tests only read it.

`python tests/npm_apps.py` builds them all ahead of the tests: `.ci/run` does so while the fast tier runs loaded,
so the component tier does not wait for npm and Vite.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from components import require
from timing import scaled

__all__ = ["A2A", "AGENT_CHAT_UI", "AGUI", "APPS", "INSPECTOR", "LANGGRAPH", "NpmApp", "built"]

JS = Path(__file__).resolve().parent / "js"
DONE = ".agentmap-built"
"""Written last into a build's folder: without it the build did not finish."""


@dataclass(frozen=True)
class NpmApp:
    """A Node.js program: tests/js/`name`'s package.json and lock file with `files` beside them, then `build` (each
    an argv run in the folder)."""

    name: str
    what: str  # what it is, in a skip or failure message
    files: tuple[str, ...] = ()
    build: tuple[tuple[str, ...], ...] = ()

    @property
    def source(self) -> Path:
        return JS / self.name

    def digest(self) -> str:
        made_of = hashlib.sha256(repr((self.files, self.build)).encode())
        for name in ("package.json", "package-lock.json", *self.files):
            made_of.update(name.encode() + b"\0" + hashlib.sha256((self.source / name).read_bytes()).digest())
        return made_of.hexdigest()[:20]


LANGGRAPH = NpmApp("langgraph", "@langchain/langgraph-sdk", ("client.mjs", "users.mjs"))
A2A = NpmApp("a2a", "@a2a-js/sdk", ("client.mjs",))
AGUI = NpmApp(
    "agui",
    "@ag-ui/client and esbuild",
    ("client.mjs", "chat.mjs", "chat.html"),
    (
        (
            "node_modules/.bin/esbuild",
            "chat.mjs",
            "--bundle",
            "--format=iife",
            "--platform=browser",
            "--outfile=chat.js",
        ),
    ),
)
INSPECTOR = NpmApp("inspector", "the MCP Inspector")
_TEMPLATE = "node_modules/create-agent-chat-app/templates/vite/"
AGENT_CHAT_UI = NpmApp(
    "agent-chat-ui",
    "LangChain's Agent Chat UI (create-agent-chat-app)",
    build=(
        # the Vite app npm's create-agent-chat-app carries, built as it is
        ("cp", "-R", *(_TEMPLATE + name for name in ("src", "public", "index.html", "vite.config.ts")), "."),
        ("cp", *(_TEMPLATE + name for name in ("tailwind.config.js", "components.json")), "."),
        ("node_modules/.bin/vite", "build", "--logLevel", "error"),
    ),
)
APPS = (LANGGRAPH, A2A, AGUI, INSPECTOR, AGENT_CHAT_UI)


def cache() -> Path:
    given = os.environ.get("AGENTMAP_TEST_NPM_CACHE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentmap-tests" / "npm"


def built(app: NpmApp) -> Path:
    """`app`'s folder, built now unless an earlier build of the same files is there (skipped, or failed in CI,
    without Node.js and npm, or when the install fails)."""
    require(bool(shutil.which("node") and shutil.which("npm")), "Node.js and npm are missing (Debian's nodejs and npm)")
    folder = cache() / f"{app.name}-{app.digest()}"
    if (folder / DONE).exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker's build of it: wait for it, then use it
        if not (folder / DONE).exists():
            _build(app, folder)
    return folder


def _build(app: NpmApp, folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)  # what a build that did not finish left
    folder.mkdir()
    for name in ("package.json", "package-lock.json", *app.files):
        shutil.copy(app.source / name, folder / name)
    install = ("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
    for step, command in enumerate((install, *app.build)):
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=scaled(600))
        if step == 0:
            require(done.returncode == 0, f"npm ci could not install {app.what}: {done.stderr[-500:]}")
        assert done.returncode == 0, f"{' '.join(command)} failed building {app.what}: {done.stderr[-2000:]}"
    (folder / DONE).write_text(app.digest())


def main() -> int:
    """Build every app (`python tests/npm_apps.py`); 1 when one could not be built (the tests then say why)."""
    failed = 0
    for app in APPS:
        try:
            print(f"{app.name}: {built(app)}", flush=True)
        except (Exception, pytest.skip.Exception, pytest.fail.Exception) as exc:
            print(f"{app.name}: not built: {exc}", file=sys.stderr, flush=True)
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
