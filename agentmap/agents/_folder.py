"""Which agent types each file of a custom agents folder declares, read without running the file.

A file declares the types named by its file name (`weather.py`, `weather_agent.py`), by the classes it
defines (`class WeatherAgent`) and by the names it registers (`@agentmap.agent("forecast")`,
`registry.register("forecast", ...)`). The registry imports a file only when a workflow names one of
them, so an unrelated or broken script in the folder stops nothing else.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentmap._pysource import parse_module

__all__ = ["FolderIndex", "compact"]


def compact(key: str) -> str:
    """A type key without underscores: `loud_echo`, `LoudEcho` and `loud_echo_agent.py` all match `loudecho`."""
    return key.replace("_", "")


@dataclass
class FolderIndex:
    """The `.py` files of one folder (not starting with `_`) by the compact keys of the types they declare.

    Args:
        folder: The custom agents folder.
        normalize: The registry's type key of a name (`WeatherAgent` -> `weather`).
    """

    folder: Path
    normalize: Callable[[str], str]
    refusal: Callable[[Path], str | None] = lambda path: None
    """Why a file may not be imported (a link out of where code may come from): then it is not read either."""
    files: dict[str, list[Path]] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)
    """Type keys named by a class or a registration (for "did you mean"; file names are not types)."""
    _parsed: dict[Path, tuple[int, set[str]]] = field(default_factory=dict)

    def refresh(self) -> None:
        """Read the folder again; only files added or changed since the last time are parsed."""
        files: dict[str, list[Path]] = {}
        declared: set[str] = set()
        parsed: dict[Path, tuple[int, set[str]]] = {}
        for path in sorted(self.folder.glob("*.py")) if self.folder.is_dir() else []:
            if path.name.startswith("_"):
                continue
            if self.refusal(path) is not None:  # listed by its name only, so a node naming it hears why
                parsed[path] = (0, set())
            else:
                mtime = path.stat().st_mtime_ns
                known = self._parsed.get(path)
                parsed[path] = known if known is not None and known[0] == mtime else (mtime, _names(path))
            names = parsed[path][1]
            declared.update(self.normalize(n) for n in names)
            for key in {compact(self.normalize(n)) for n in {path.stem, *names}}:
                files.setdefault(key, []).append(path)
        self.files, self.declared, self._parsed = files, declared, parsed

    def candidates(self, key: str) -> list[Path]:
        """The files that may define the type `key` (a normalized type key)."""
        return self.files.get(compact(key), [])


def _names(path: Path) -> set[str]:
    """Class names and registered type names of a Python file (none when it does not parse)."""
    try:
        tree = parse_module(path.read_bytes(), str(path))
    except (SyntaxError, ValueError, OSError):
        return set()  # importing it reports the error, if a workflow names the file
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Call) and _called(node) in ("agent", "register") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
    return names


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
