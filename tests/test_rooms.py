"""Room rules `lint-imports` cannot state: which names the server takes from the runtime.

`lint-imports` checks the rooms against each other (pyproject.toml `[tool.importlinter]`), that no room imports
the root package, and that the server imports none of the runtime's internal modules; these tests keep that
last list honest and check the names.
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from pathlib import Path

import agentmap

PACKAGE = Path(agentmap.__file__).parent
PUBLIC_RUNTIME = {
    "api",
    "runner",
    "options",
    "results",
    "tracking",
    "events",
    "threads",
    "checkpoint",
    "items",
    "durable",
    "values",
    "revisions",
    "changes",
    "migration",
}
"""The runtime's public modules: the homes of `agentmap.__all__`, `durable` (`Thread`, `Durability`), `values`
(the one reader of a JSON value from outside: the server's request bodies, the command line's options), and the
revisions a thread runs (`revisions`, `changes`, `migration`: the server's assistant versions build on them)."""


def _server_contract() -> dict[str, object]:
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = pyproject["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c.get("source_modules") == ["agentmap.server"])


def test_the_server_contract_forbids_every_internal_runtime_module() -> None:
    """A new runtime module is public (listed above and in docs/architecture.md) or forbidden to the server."""
    forbidden = _server_contract()["forbidden_modules"]
    assert isinstance(forbidden, list)
    internal = {p.stem for p in (PACKAGE / "runtime").glob("*.py") if p.stem != "__init__"} - PUBLIC_RUNTIME
    assert sorted(f"agentmap.runtime.{name}" for name in internal) == [
        m for m in forbidden if m.startswith("agentmap.runtime.")
    ]
    homes = {home.rsplit(".", 1)[-1] for home in vars(agentmap)["_HOMES"].values() if ".runtime." in home}
    assert homes <= PUBLIC_RUNTIME


def test_the_server_takes_only_public_names_of_the_runtime() -> None:
    """Of a public runtime module, the server imports only the names in its `__all__`."""
    found = [
        f"{path.relative_to(PACKAGE)}:{node.lineno} {node.module}.{alias.name}"
        for path in sorted((PACKAGE / "server").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentmap.runtime.")
        for alias in node.names
        if alias.name not in importlib.import_module(node.module or "").__all__
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
