"""What importing each AgentMap module loads, read from the source (no import runs): the module-level imports of
every module (not those under `TYPE_CHECKING`), the packages above each module, and the homes of the names a package
exports lazily (`agentmap._lazy.lazy_exports`, whose names a package also imports under `TYPE_CHECKING`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class InnerImport:
    """An import statement inside a function: where it is and the AgentMap modules it loads."""

    module: str
    line: int
    loads: frozenset[str]


def _names(package: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


Statement = ast.Import | ast.ImportFrom


def _module_level(body: list[ast.stmt], typing_only: bool = False) -> Iterator[tuple[Statement, bool]]:
    """Each import a module's body runs (with whether it is under `TYPE_CHECKING`, so never runs)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, typing_only
        elif isinstance(node, ast.If):
            yield from _module_level(node.body, typing_only or _type_checking(node.test))
            yield from _module_level(node.orelse, typing_only)
        elif isinstance(node, ast.Try):
            for part in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _module_level(part, typing_only)


class ImportGraph:
    """The AgentMap modules of `package` and what importing each of them loads."""

    def __init__(self, package: Path) -> None:
        self.paths = _names(package)
        self.trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in self.paths.items()}
        self.lazy_homes = {name: self._lazy_homes(name) for name in self.paths}
        self.edges = {name: self._edges(name) for name in self.paths}
        self._closures: dict[str, frozenset[str]] = {}

    def _source(self, node: ast.ImportFrom, module: str) -> str:
        """The module a `from ... import` statement in `module` imports from, relative imports made absolute."""
        if not node.level:
            return node.module or ""
        parts = module.split(".") if self.paths[module].name == "__init__.py" else module.split(".")[:-1]
        return ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])

    def _lazy_homes(self, module: str) -> dict[str, str]:
        """A package's lazily exported names and the modules they come from (its `TYPE_CHECKING` imports)."""
        tree = self.trees[module]
        if "lazy_exports" not in ast.unparse(tree):
            return {}
        homes = {}
        for node, typing_only in _module_level(tree.body):
            if typing_only and isinstance(node, ast.ImportFrom):
                homes.update({alias.asname or alias.name: self._source(node, module) for alias in node.names})
        return homes

    def loads(self, node: Statement, module: str) -> frozenset[str]:
        """The AgentMap modules an import statement in `module` loads (with the packages above them)."""
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            stem = self._source(node, module)
            targets = [stem]
            for alias in node.names:
                targets.append(f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in self.paths else "")
                targets.append(self.lazy_homes.get(stem, {}).get(alias.name, ""))
        found: set[str] = set()
        for target in targets:
            parts = target.split(".")
            found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in self.paths)
        return frozenset(found)

    def _edges(self, module: str) -> set[str]:
        parts = module.split(".")
        edges = {".".join(parts[:i]) for i in range(1, len(parts))}
        for node, typing_only in _module_level(self.trees[module].body):
            if not typing_only:
                edges |= self.loads(node, module)
        return edges

    def closure(self, module: str) -> frozenset[str]:
        """Every AgentMap module importing `module` loads, itself included."""
        if module not in self._closures:
            seen, work = {module}, [module]
            while work:
                for nxt in self.edges[work.pop()] - seen:
                    seen.add(nxt)
                    work.append(nxt)
            self._closures[module] = frozenset(seen)
        return self._closures[module]

    def inner_imports(self) -> Iterator[InnerImport]:
        """Every import of AgentMap's own modules inside a function or method."""
        for module, tree in self.trees.items():
            for function in ast.walk(tree):
                if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    for node in ast.walk(function):
                        if isinstance(node, ast.Import | ast.ImportFrom) and (loads := self.loads(node, module)):
                            yield InnerImport(module, node.lineno, loads)

    def needless(self) -> list[InnerImport]:
        """The inner imports that neither defer a module (importing their module loads it already) nor break a cycle
        (what they import does not import their module)."""
        return [
            inner
            for inner in self.inner_imports()
            if inner.loads <= self.closure(inner.module)
            and not any(inner.module in self.closure(loaded) for loaded in inner.loads)
        ]
