"""Real components a test starts itself (PostgreSQL, Ray, chromium, ...): skip where missing, fail in CI.

A developer without PostgreSQL on their machine sees the test skipped with the reason; CI (`CI=true`),
whose `.ci/run` installs every component, fails instead, so a missing install step cannot hide behind a skip.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from forked import Forked

__all__ = ["RayCluster", "chromium", "clean_env", "find_executable", "require"]

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


class RayCluster:
    """The run's local Ray (`ray_session`) as a cluster an `agentmap batch --executor ray` joins, where the test's
    scenario needs no local Ray of the command's own: each command starts one otherwise, seconds of its time (tens
    on a busy machine). Joined, its Ray workers get the command's environment as a job submitted with
    `ray job submit --runtime-env-json '{"env_vars": ...}'` does (a cluster's workers otherwise have the environment
    of the process that started the cluster)."""

    def __init__(self, ray: Any) -> None:
        self.address: str = ray.get_runtime_context().gcs_address  # as Ray says it: this machine's own address

    def joining(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env`, for a command whose Ray workers run with the same variables (the variable is how `ray job submit`
        hands its job's runtime environment to the command it starts)."""
        job = {"runtime_env": {"env_vars": dict(env)}}
        return {**env, "RAY_JOB_CONFIG_JSON_ENV_VAR": json.dumps(job)}

    def start(self, *args: str, cwd: Path, env: Mapping[str, str]) -> Forked:
        """`forked.start` of `agentmap ARGS --ray-address ADDRESS`."""
        import forked

        return forked.start(*args, "--ray-address", self.address, cwd=cwd, env=self.joining(env))

    def run(self, *args: str, cwd: Path, env: Mapping[str, str], timeout: float = 120) -> tuple[int, str, str]:
        """`forked.run` of `agentmap ARGS --ray-address ADDRESS`."""
        import forked

        return forked.run(*args, "--ray-address", self.address, cwd=cwd, env=self.joining(env), timeout=timeout)
