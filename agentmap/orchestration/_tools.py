"""A small `ToolExecutor` over Python callables, for worker nodes until the shared executor lands."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from agentmap.agents.registry import import_file
from agentmap.contracts.tools import ToolResult

__all__ = ["CallableToolExecutor", "load_python_tools"]


class CallableToolExecutor:
    """Runs Python callables (sync ones in a thread) as tools; failures are results, never exceptions."""

    def __init__(self, tools: Mapping[str, Callable[..., Any]]) -> None:
        self._tools = dict(tools)

    def get_available_tools(self) -> list[str]:
        """The tool names, sorted."""
        return sorted(self._tools)

    async def execute(self, tool_name: str, parameters: dict[str, Any], user_id: str) -> ToolResult:
        """Call `tool_name` with `parameters` as keyword arguments."""
        started = time.perf_counter()
        func = self._tools.get(tool_name)
        if func is None:
            return ToolResult(success=False, error=f"unknown tool {tool_name!r}", error_code="unknown_tool")
        try:
            if inspect.iscoroutinefunction(func):
                data = await func(**parameters)
            else:
                data = await asyncio.to_thread(func, **parameters)
        except TypeError as exc:
            code = "invalid_arguments" if _is_signature_error(func, parameters) else "execution_error"
            return _failure(exc, code, started)
        except TimeoutError as exc:
            return _failure(exc, "timeout", started)
        except PermissionError as exc:
            return _failure(exc, "permission_denied", started)
        except ConnectionError as exc:
            return _failure(exc, "network", started)
        except Exception as exc:
            return _failure(exc, "execution_error", started)
        return ToolResult(success=True, data=data, duration_ms=(time.perf_counter() - started) * 1000)


def _is_signature_error(func: Callable[..., Any], parameters: Mapping[str, Any]) -> bool:
    try:
        inspect.signature(func).bind(**parameters)
    except TypeError:
        return True
    except ValueError:
        return False
    return False


def _failure(exc: Exception, code: str, started: float) -> ToolResult:
    return ToolResult(
        success=False,
        error=f"{type(exc).__name__}: {exc}",
        error_code=code,
        duration_ms=(time.perf_counter() - started) * 1000,
    )


def load_python_tools(source: str, names: Iterable[str], base_dir: Path) -> dict[str, Callable[..., Any]]:
    """Load the functions named `names` (all public functions when empty) from a Python file.

    Args:
        source: The file, relative to `base_dir` (the workflow's folder); a path outside it is refused.
        names: The tools to take.
        base_dir: The workflow's folder.

    Raises:
        ValueError: When the file is outside `base_dir`, missing, or lacks a named function.
    """
    root = base_dir.resolve()
    path = (root / source).resolve()
    if not path.is_relative_to(root):
        raise ValueError(f"tool source {source!r} is outside the workflow's folder {root}; move it under it")
    if path.suffix != ".py" or not path.is_file():
        raise ValueError(f"tool source {source!r} is not a Python file under {root}")
    module = import_file(path, prefix="agentmap_tools")
    found: dict[str, Callable[..., Any]] = {
        name: obj
        for name, obj in vars(module).items()
        if not name.startswith("_") and inspect.isfunction(obj) and obj.__module__ == module.__name__
    }
    wanted = list(names)
    missing = [n for n in wanted if n not in found]
    if missing:
        raise ValueError(
            f"{source} defines no tool {', '.join(repr(m) for m in missing)}; it defines: {', '.join(sorted(found))}"
        )
    return {n: found[n] for n in wanted} if wanted else found
