"""Process-wide state is listed, with why it is not a run's: docs/architecture.md, "Process-wide state".

A run's own data travels in its config or a context variable; anything a module keeps that changes after import
is the same for every run. A new module-level cache, registry or flag fails here until it is listed there.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "agentmap"
MUTATORS = {"add", "append", "update", "setdefault", "pop", "popitem", "clear", "discard", "remove", "extend"}
MUTATORS |= {"insert", "move_to_end", "set", "reset"}


def _assigned(statement: ast.stmt) -> list[str]:
    """The plain names a module-level statement assigns."""
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)]
    if isinstance(statement, ast.AnnAssign) and statement.value is not None and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    return []


def _changed(node: ast.AST, names: set[str]) -> set[str]:
    """Which of `names` `node` changes: declared global, assigned by subscript, or given to a mutating method."""
    if isinstance(node, ast.Global):
        return {n for n in node.names if n in names}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        owners = [node.func.value]  # NAME.update(...), NAME.set(...)
    elif isinstance(node, (ast.Assign, ast.Delete, ast.AugAssign)):
        targets = [node.target] if isinstance(node, ast.AugAssign) else node.targets
        owners = [t.value for t in targets if isinstance(t, ast.Subscript)]  # NAME[key] = ...
    else:
        return set()
    return {owner.id for owner in owners if isinstance(owner, ast.Name)} & names


def _module_state(path: Path) -> set[str]:
    """The module-level names of `path` that change after import (see the module's docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    names = {name for statement in tree.body for name in _assigned(statement)}
    found: set[str] = set()
    for statement in tree.body:
        value = getattr(statement, "value", None)
        called = ast.unparse(value.func) if isinstance(value, ast.Call) else ""
        if called in classes or called.endswith("ContextVar"):  # an instance of the module's own class, a context
            found.update(_assigned(statement))
        if isinstance(statement, ast.FunctionDef) and any("cache" in ast.unparse(d) for d in statement.decorator_list):
            found.add(f"{statement.name}()")
    for node in ast.walk(tree):
        found |= _changed(node, names)
    return found


def test_every_piece_of_process_wide_state_is_listed_with_its_reason() -> None:
    in_code = {
        ".".join(path.relative_to(PACKAGE).with_suffix("").parts) + f".{name}"
        for path in PACKAGE.rglob("*.py")
        for name in _module_state(path)
    }
    document = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = document.split("## Process-wide state", 1)[1].split("\n## ", 1)[0]
    rows = [row.split("|")[1] for row in section.splitlines() if row.startswith("| `")]
    listed = {name for cell in rows for name in re.findall(r"`([^`]+)`", cell)}
    assert in_code - listed == set(), "list these in docs/architecture.md, Process-wide state, with why"
    assert listed - in_code == set(), "these are listed but no longer in the code"
