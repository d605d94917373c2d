"""The Python examples of csv_specs/orchestration.md run as written."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "csv_specs" / "orchestration.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_doc_has_its_examples() -> None:
    assert len(_blocks()) == 4


def test_the_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, Any] = {"__name__": "orchestration_doc"}
    for block in _blocks():
        exec(compile(block, str(DOC), "exec"), namespace)
    assert namespace["result"].state["message"].startswith("Your trip: Fly Air France AF11")
    assert namespace["response"].result["final"] == 10
    asyncio.run(namespace["test_weather_agent_is_compliant"]())
