"""The runnable examples of csv_specs/ pages run as written, and print what their comments say.

An example line `expression   # 'expected ... output'` is checked: the repr of the expression's value must
contain each `...`-separated fragment of the comment, in order. Examples that need a provider key or
files the reader supplies (`rubric.md`, `scenarios.csv`) are illustrations and are not run here; their
code paths have their own tests.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "csv_specs"


def blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (SPECS / page).read_text(encoding="utf-8"), re.S)


def run_example(code: str) -> dict[str, Any]:
    """Run `code` (top-level `await` allowed) statement by statement, checking commented expectations."""
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    lines = code.splitlines()
    for node in ast.parse(code).body:
        source = ast.get_source_segment(code, node) or ""
        last = node.end_lineno or node.lineno
        expected = _expectation(lines[last - 1]) if isinstance(node, ast.Expr) else None
        target = ast.Expression(node.value) if isinstance(node, ast.Expr) else ast.Module([node], type_ignores=[])
        compiled = compile(
            target, "<doc>", "eval" if isinstance(node, ast.Expr) else "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        )
        value = eval(compiled, namespace)  # the documentation examples of this repository
        if inspect.iscoroutine(value):
            value = asyncio.run(value)
        if expected is not None:
            shown = repr(value)
            position = 0
            for fragment in (f.strip() for f in expected.split("...")):
                found = shown.find(fragment, position)
                assert found >= 0, f"{source!r} gave {shown!r}, the docs say {expected!r}"
                position = found + len(fragment)
    return namespace


def _expectation(line: str) -> str | None:
    match = re.search(r"#\s*(['\"(\[{].*)$", line)
    return match.group(1) if match else None


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Run from the repository root (the examples use graphs/...), keeping every file they write in tmp."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("AGENTMAP_TASKS_DB", str(tmp_path / "tasks.db"))
    monkeypatch.setenv("AGENTMAP_DECISION_LOG", str(tmp_path / "decisions.db"))
    return tmp_path


def test_the_expectation_checker_can_fail() -> None:
    run_example("'a' + 'b'   # 'ab'")
    with pytest.raises(AssertionError, match="the docs say"):
        run_example("'a' + 'c'   # 'ab'")
    run_example("[1, 2, 3]   # [1, ..., 3]")


def test_engine_task_assistant_walkthrough(at_root: Path) -> None:
    (walkthrough, *_) = blocks("engine.md")
    run_example(walkthrough)


def test_run_agent_example(at_root: Path) -> None:
    run_example(blocks("run_agent.md")[1])


def test_llm_examples(at_root: Path) -> None:
    first, _, streaming, executor, journal = blocks("llm.md")
    run_example(first)
    run_example(streaming)
    run_example(executor)
    run_example(journal)


def test_tracing_example(at_root: Path) -> None:
    spans, hooks = blocks("tracing.md")
    run_example(spans)
    run_example(hooks)


def test_studio_example(at_root: Path) -> None:
    (example,) = blocks("studio.md")
    run_example(example)
