"""The runnable example of csv_specs/batch.md runs as written and prints what its comments say."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_docs_examples import ROOT, blocks, run_example


def test_batch_page_python_example(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(ROOT)
    (example,) = blocks("batch.md")
    run_example(example)
