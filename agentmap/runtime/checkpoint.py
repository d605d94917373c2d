"""Checkpointers named by a string: `"memory"`, `"runs.db"`, `"sqlite:path"`.

LangGraph's savers do the storing; this module only turns a short name into one, so a config file or a
command line can ask for persistence without writing Python.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentmap.errors import ConfigError

__all__ = ["resolve_checkpointer", "sqlite_path"]

_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def sqlite_path(value: str) -> Path | None:
    """The SQLite file a checkpointer string names (`x.db`, `x.sqlite`, `sqlite:x`), or None for other strings."""
    if value.startswith("sqlite:"):
        return Path(value.removeprefix("sqlite:"))
    return Path(value) if value.lower().endswith(_SUFFIXES) else None


def resolve_checkpointer(value: Any) -> Any:
    """A LangGraph checkpointer for `value`.

    Args:
        value: `"memory"` (an `InMemorySaver`), a path ending in `.db`/`.sqlite` or `sqlite:PATH` (a
            `SqliteSaver` on that file, made when missing), or anything else, returned unchanged
            (a saver object, None, True/False for subgraphs).

    Raises:
        ConfigError: An unknown name, a file in a folder that does not exist or cannot be opened, or the
            `sqlite` extra missing.
    """
    if not isinstance(value, str):
        return value
    if value.strip().lower() == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver()
    path = sqlite_path(value.strip())
    if path is None or not str(path):
        raise ConfigError(
            f"unknown checkpointer {value!r}",
            code="bad-checkpointer",
            hint='use "memory", a SQLite file path ending in .db or .sqlite, "sqlite:PATH", or a LangGraph saver',
        )
    return _sqlite_saver(path)


def _sqlite_saver(path: Path) -> Any:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        raise ConfigError(
            f"checkpoint file {path} needs the SQLite checkpointer, which is not installed",
            code="missing-extra",
            hint='pip install "agentmap[sqlite]"',
        ) from None
    import sqlite3

    folder = path.parent
    if not folder.is_dir():
        raise ConfigError(
            f"cannot open checkpoint file {path}: the folder {folder} does not exist",
            code="bad-checkpointer",
            hint="make the folder first, or name a file in an existing folder",
        )
    if path.is_dir():
        raise ConfigError(
            f"cannot open checkpoint file {path}: it is a folder", code="bad-checkpointer", hint="name a file"
        )
    try:
        # SqliteSaver serialises access with its own lock, so one connection may serve LangGraph's threads
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
    except sqlite3.Error as exc:
        raise ConfigError(
            f"cannot open checkpoint file {path}: {exc}",
            code="bad-checkpointer",
            hint="name a SQLite file you can write to (a new file is created)",
        ) from None
    return saver
