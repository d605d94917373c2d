"""Shared fixtures: write workflow files into a test's temporary folder."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

WriteCsv = Callable[..., Path]


@pytest.fixture
def write_csv(tmp_path: Path) -> WriteCsv:
    """`write_csv(text, name="workflow.csv")` writes dedented text under tmp_path and returns its path."""

    def write(text: str, name: str = "workflow.csv") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write
