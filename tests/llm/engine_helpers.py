"""Shared pieces of the engine tests: the example's task tools behind a small `ToolExecutor`."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from agentmap.agents.tools import LocalToolExecutor
from agentmap.contracts.tools import ToolResult

REPO = Path(__file__).resolve().parents[2]
TASKS_FILE = REPO / "graphs" / "tools" / "tasks.py"

CONSTITUTION = "You are a helpful task management assistant."


def load_tasks_module() -> ModuleType:
    """Import graphs/tools/tasks.py (the example's tools) once."""
    name = "example_task_tools"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TASKS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def task_titles(db: Path, user_id: str = "alice") -> dict[int, tuple[str, bool]]:
    """What the tasks database holds for a user: `{id: (title, done)}`."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, title, done FROM tasks WHERE user_id = ? ORDER BY id", (user_id,)).fetchall()
    return {r[0]: (r[1], bool(r[2])) for r in rows}


class RecordingExecutor:
    """The real `LocalToolExecutor`, recording every call as `(tool_name, parameters, user_id)`.

    With `schemas=False` it hides `get_tool_schemas`, like a bare seed-003 executor would.
    """

    def __init__(self, functions: list[Callable[..., Any]], *, schemas: bool = True) -> None:
        self.inner = LocalToolExecutor(functions)
        self.calls: list[tuple[str, dict[str, Any], str]] = []
        if schemas:
            self.get_tool_schemas = self.inner.get_tool_schemas

    async def execute(self, tool_name: str, parameters: dict[str, Any], user_id: str) -> ToolResult:
        self.calls.append((tool_name, dict(parameters), user_id))
        return await self.inner.execute(tool_name, parameters, user_id)

    def get_available_tools(self) -> list[str]:
        return self.inner.get_available_tools()


def task_executor(**kwargs: Any) -> RecordingExecutor:
    """The five task tools of the example behind the real executor."""
    tasks = load_tasks_module()
    functions = [tasks.add_task, tasks.list_tasks, tasks.update_task, tasks.complete_task, tasks.delete_task]
    return RecordingExecutor(functions, **kwargs)
