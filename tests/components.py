"""Real components a test starts itself (PostgreSQL, Ray, chromium, ...): skip where missing, fail in CI.

A developer without PostgreSQL on their machine sees the test skipped with the reason; CI (`CI=true`),
whose `.ci/run` installs every component, fails instead, so a missing install step cannot hide behind a skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

__all__ = ["find_executable", "require"]


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
