"""Where revisions are kept: two tables of the checkpoint's own database (or the in-memory saver's dicts).

`agentmap_revisions` holds one row per revision (its id, its manifest as JSON, where its workflow file was when it
was first recorded, when); `agentmap_revision_files` one row per distinct file content, keyed by its SHA-256, so a
prompt file shared by a hundred revisions is stored once. Both are written with `ON CONFLICT DO NOTHING`: the same
revision recorded by two processes at once is one row. `revisions.py` decides what a row means.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from agentmap.agents._saver_sql import Execute, kept_beside, saver_kind, saver_sql

__all__ = ["FILES", "TABLE", "Row", "can_store", "files", "put", "row", "rows"]

TABLE = "agentmap_revisions"
FILES = "agentmap_revision_files"

Row = tuple[str, str, str, float]
"""A revision's row: its id, manifest (JSON text), location (its workflow file's path then), time recorded."""


def _create(blob: str) -> tuple[str, ...]:
    return (
        f"CREATE TABLE IF NOT EXISTS {TABLE} (revision_id TEXT PRIMARY KEY, manifest TEXT NOT NULL, "
        "location TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {FILES} (digest TEXT PRIMARY KEY, content {blob} NOT NULL)",
    )


_COLUMNS = "revision_id, manifest, location, created_at"
_CREATE = {"sqlite": _create("BLOB"), "postgres": _create("BYTEA")}
_MEMORY_LOCK = threading.Lock()


def can_store(saver: Any) -> bool:
    """Whether `saver` keeps revisions (AgentMap's SQLite and PostgreSQL savers, LangGraph's, the in-memory one)."""
    return saver_kind(saver) in ("sqlite", "postgres", "memory")


def _sql(saver: Any) -> Execute | None:
    kind = saver_kind(saver)
    return saver_sql(saver, _CREATE[kind]) if kind in _CREATE else None


def _memory(saver: Any) -> tuple[dict[str, Row], dict[str, bytes]]:
    """An in-memory saver's revisions and their files, kept beside it (never set on it)."""
    return kept_beside(saver, "revisions", lambda: ({}, {}))


def row(saver: Any, revision_id: str) -> Row | None:
    """The row of revision `revision_id`, or None."""
    execute = _sql(saver)
    if execute is None:
        with _MEMORY_LOCK:
            return _memory(saver)[0].get(revision_id)
    found = execute(f"SELECT {_COLUMNS} FROM {TABLE} WHERE revision_id = ?", (revision_id,))
    return _row(found[0]) if found else None


def rows(saver: Any, prefix: str = "") -> list[Row]:
    """The rows of the revisions whose id starts with `prefix` (all of them for ""), oldest first."""
    execute = _sql(saver)
    if execute is None:
        with _MEMORY_LOCK:
            kept = list(_memory(saver)[0].values())
        return sorted((r for r in kept if r[0].startswith(prefix)), key=lambda r: r[3])
    found = execute(
        f"SELECT {_COLUMNS} FROM {TABLE} WHERE substr(revision_id, 1, ?) = ? ORDER BY created_at",
        (len(prefix), prefix),
    )
    return [_row(r) for r in found]


def _row(found: Any) -> Row:
    revision_id, manifest, location, created = found
    return str(revision_id), str(manifest), str(location), float(created)


def files(saver: Any, digests: list[str]) -> dict[str, bytes]:
    """The stored contents of `digests` (those missing are left out), unchecked."""
    execute = _sql(saver)
    if execute is None:
        with _MEMORY_LOCK:
            contents = _memory(saver)[1]
            return {d: contents[d] for d in digests if d in contents}
    found: dict[str, bytes] = {}
    for digest in dict.fromkeys(digests):
        got = execute(f"SELECT content FROM {FILES} WHERE digest = ?", (digest,))
        if got:
            content = got[0][0]
            found[digest] = bytes(content) if not isinstance(content, str) else content.encode("utf-8")
    return found


def put(saver: Any, revision_id: str, manifest: str, location: str, contents: Mapping[str, bytes]) -> None:
    """Keep a revision: the contents it lacks first, then its row (so a row never names a content not there)."""
    now = time.time()
    execute = _sql(saver)
    if execute is None:
        with _MEMORY_LOCK:
            revisions, kept = _memory(saver)
            for digest, content in contents.items():
                kept.setdefault(digest, content)
            revisions.setdefault(revision_id, (revision_id, manifest, location, now))
        return
    for digest, content in contents.items():
        execute(f"INSERT INTO {FILES} VALUES (?, ?) ON CONFLICT DO NOTHING", (digest, content))
    execute(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", (revision_id, manifest, location, now))
