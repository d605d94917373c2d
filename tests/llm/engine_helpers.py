"""Shared pieces of the engine tests: the example's task tools behind a small `ToolExecutor`."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

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


def task_titles(db: Path) -> dict[int, tuple[str, bool]]:
    """What the tasks database holds: `{id: (title, done)}`."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, title, done FROM tasks ORDER BY id").fetchall()
    return {r[0]: (r[1], bool(r[2])) for r in rows}


class FunctionExecutor:
    """A minimal `ToolExecutor` over Python functions, exposing LangChain schemas.

    Records every call as `(tool_name, parameters, user_id)`.
    """

    def __init__(self, functions: list[Callable[..., Any]], *, schemas: bool = True) -> None:
        self.tools: dict[str, BaseTool] = {f.__name__: StructuredTool.from_function(f) for f in functions}
        self.calls: list[tuple[str, dict[str, Any], str]] = []
        if not schemas:
            self.get_tool_schemas = None  # type: ignore[assignment]

    async def execute(self, tool_name: str, parameters: dict[str, Any], user_id: str) -> ToolResult:
        self.calls.append((tool_name, dict(parameters), user_id))
        started = time.perf_counter()
        tool = self.tools.get(tool_name)
        if tool is None:
            return ToolResult(success=False, error=f"no tool named {tool_name!r}", error_code="unknown_tool")
        try:
            data = await tool.ainvoke(parameters)
        except Exception as exc:
            return ToolResult(
                success=False,
                error=str(exc),
                error_code="execution_error",
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        return ToolResult(success=True, data=data, duration_ms=(time.perf_counter() - started) * 1000)

    def get_available_tools(self) -> list[str]:
        return list(self.tools)

    def get_tool_schemas(self) -> list[BaseTool]:
        return list(self.tools.values())


def task_executor(**kwargs: Any) -> FunctionExecutor:
    """The five task tools of the example behind a `FunctionExecutor`."""
    tasks = load_tasks_module()
    functions = [tasks.add_task, tasks.list_tasks, tasks.update_task, tasks.complete_task, tasks.delete_task]
    return FunctionExecutor(functions, **kwargs)
