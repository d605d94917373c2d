"""An import inside a function is for start-up only: every library imported so is listed, with why, in
docs/architecture.md, "Imports inside functions" (a new one fails here until it is listed there, or moves to the
top of its module); an AgentMap module is imported inside a function only when importing the function's own module
does not load it already (it defers that module) or when it imports the function's module (it breaks a cycle)."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from import_graph import ImportGraph

ROOT = Path(__file__).parents[1]
LISTED_TWICE = ("importlib", "concurrent")  # listed by their submodule: `importlib.metadata`, `concurrent.futures`


def _library(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] in LISTED_TWICE else parts[0]


@functools.cache  # two tests read the package's: parse its 300 modules once
def imported_inside_functions(package: Path = ROOT / "agentmap") -> dict[str, frozenset[str]]:
    """Each library (not AgentMap's own modules) imported inside a function of `package`, with the files that do."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    if module != "agentmap" and not module.startswith("agentmap."):
                        found.setdefault(_library(module), set()).add(path.name)
    return {library: frozenset(files) for library, files in found.items()}


def listed() -> set[str]:
    """The libraries docs/architecture.md's table "Imports inside functions" names."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Imports inside functions", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([\w.]+)`", row)}


def test_every_library_imported_inside_a_function_is_listed_with_why() -> None:
    unlisted = {library: sorted(files) for library, files in imported_inside_functions().items()}
    unlisted = {library: files for library, files in unlisted.items() if library not in listed()}
    assert unlisted == {}, "import these at the top of the module, or list them in docs/architecture.md with why"


def test_every_listed_library_is_still_imported_inside_a_function() -> None:
    assert listed() - set(imported_inside_functions()) == set(), "remove these rows: nothing imports them lazily"


def test_the_check_sees_imports_inside_functions_and_methods_only(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "import os\n\n\ndef f():\n    import json\n    from importlib.metadata import version\n"
        "    from agentmap.errors import ConfigError\n\n\nclass C:\n    async def g(self):\n        import ray.util\n"
    )
    assert imported_inside_functions(tmp_path) == {"json": {"a.py"}, "importlib.metadata": {"a.py"}, "ray": {"a.py"}}


def test_agentmap_modules_are_imported_inside_a_function_only_to_defer_them_or_to_break_a_cycle() -> None:
    graph = ImportGraph(ROOT / "agentmap")
    needless = [f"{inner.module}:{inner.line}" for inner in graph.needless()]
    assert needless == [], "importing these modules loads what they import inside a function: import it at the top"


def test_the_import_check_tells_a_deferred_import_and_a_cycle_from_a_habit(tmp_path: Path) -> None:
    package = tmp_path / "agentmap"
    package.mkdir()
    files = {
        "__init__.py": "",
        "base.py": "",
        "heavy.py": "",
        "cycle.py": "import agentmap.user\n",
        "user.py": "import agentmap.base\nimport agentmap.cycle\n\n\n"
        "def f():\n    from agentmap import base, heavy\n    import agentmap.cycle\n    from agentmap.base import x\n",
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    graph = ImportGraph(package)
    assert graph.closure("agentmap.user") == {"agentmap", "agentmap.user", "agentmap.base", "agentmap.cycle"}
    # `base` and `heavy` together defer `heavy`; `cycle` imports `user` back; `base` alone is loaded already
    assert [(inner.module, inner.line) for inner in graph.needless()] == [("agentmap.user", 8)]
