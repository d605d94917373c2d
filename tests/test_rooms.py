"""No room imports the root package `agentmap` (its public API sits above every room); only the CLI may.

`lint-imports` checks the rooms against each other; an import of `agentmap` itself, even inside a function,
would make a room depend on all the others, so it is checked here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import agentmap

PACKAGE = Path(agentmap.__file__).parent


def _imports_root(path: Path) -> list[int]:
    lines: list[int] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import) and "agentmap" in [alias.name for alias in node.names]:
            lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "agentmap" and not node.level:
            lines.append(node.lineno)
    return lines


def test_no_room_imports_the_root_package() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "__init__.py" and "cli" not in path.relative_to(PACKAGE).parts[:1]
        for line in _imports_root(path)
    ]
    assert found == []


def test_the_runtime_never_imports_observe_and_still_draws(tmp_path: Path) -> None:
    """Pictures reach the runtime through its `views` entry point, not an import the room rules would have to
    allow."""
    runtime = PACKAGE / "runtime"
    named = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in sorted(runtime.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentmap.observe")
    ]
    assert named == []
    app = agentmap.compile(PACKAGE.parent / "graphs" / "hello_world.csv")
    result = app.invoke({"name": "Ada"})
    assert result.draw(tmp_path / "run.svg").startswith("<svg") and (tmp_path / "run.svg").is_file()
    assert app.draw().startswith("<svg")
