"""Real components a test starts itself (PostgreSQL, Ray, chromium, ...): skip where missing, fail in CI.

A developer without PostgreSQL on their machine sees the test skipped with the reason; CI (`CI=true`),
whose `.ci/run` installs every component, fails instead, so a missing install step cannot hide behind a skip.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

__all__ = ["chromium", "clean_env", "find_executable", "require"]

STATE_VARIABLE = "AGENTMAP_STATE_DIR"
"""Where AgentMap keeps its own files: each test's own folder (tests/conftest.py), never the checkout's `.agentmap/`."""


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a process a test starts: this one's without the `AGENTMAP_*` settings a developer's shell
    may hold, but with the test's own `AGENTMAP_STATE_DIR`; then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMAP_") or k == STATE_VARIABLE}
    return {**env, **(extra or {})}


def require(available: bool, reason: str) -> None:
    """Skip the calling test (fail under CI) unless `available`; `reason` says what is missing and how to get it."""
    if available:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI must run this test, but {reason}")
    pytest.skip(reason)


def find_executable(name: str, *folders: str) -> Path | None:
    """`name` on PATH or in one of `folders` (e.g. /usr/lib/postgresql/*/bin), else None."""
    found = shutil.which(name)
    if found:
        return Path(found)
    for pattern in folders:
        for folder in sorted(Path("/").glob(pattern.lstrip("/")), reverse=True):
            if (folder / name).is_file():
                return folder / name
    return None


@contextmanager
def chromium(args: tuple[str, ...] = ("--no-sandbox",)) -> Iterator[Any]:
    """Debian's headless chromium driven by Playwright, launched with `args` (skipped, or failed in CI, without
    Playwright or chromium); closed on leaving."""
    sync_api = pytest.importorskip("playwright.sync_api")
    found = find_executable("chromium") or find_executable("chromium-browser")
    require(found is not None, "no chromium found: apt-get install chromium")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(found), args=list(args))
        yield launched
        launched.close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def static_origin(folder: Path) -> Iterator[str]:
    """`folder`'s files served on 127.0.0.1 (a web page's own origin, another than the server it talks to)."""
    http = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{http.server_address[1]}"
    finally:
        http.shutdown()
