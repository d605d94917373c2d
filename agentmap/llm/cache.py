"""The LLM response cache: a model reply kept for `ttl` seconds, keyed by the digest of its request.

An LLM node with Context `{"cache": {"ttl": 3600}}` (or every LLM node, with `llm.cache: {ttl: 3600}` in the
config) answers a request it has seen (same model, messages, tools and options: the request the call journal
digests) from the cache instead of the provider. The cache is the table `agentmap_llm_cache` of the run's
checkpoint database (SQLite or PostgreSQL), or of `.agentmap/llm_cache.db` in the working folder (in
`$AGENTMAP_STATE_DIR` when set) when the run
has another checkpointer or none. Only replies are stored, never errors; `--no-cache` (`configurable["no_cache"]`)
turns it off for a run.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmap._langgraph import CHECKPOINTER_KEY, current_config
from agentmap._paths import state_file
from agentmap.agents._saver_sql import Execute, saver_sql, sqlite_sql
from agentmap.agents.journal import digest
from agentmap.runtime.node_cache import cache_problem

__all__ = ["DEFAULT_FILE", "TABLE", "cache_problem", "lookup", "store", "ttl_of"]

TABLE = "agentmap_llm_cache"
DEFAULT_FILE = Path(".agentmap") / "llm_cache.db"
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (digest TEXT PRIMARY KEY, model TEXT NOT NULL, response TEXT NOT NULL, "
    "stored_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)"
)
_GET = f"SELECT response FROM {TABLE} WHERE digest = ? AND expires_at > ?"
_PUT = (
    f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?) ON CONFLICT (digest) DO UPDATE SET model = excluded.model, "
    "response = excluded.response, stored_at = excluded.stored_at, expires_at = excluded.expires_at"
)
_PURGE = f"DELETE FROM {TABLE} WHERE expires_at <= ?"
_FILES: dict[Path, tuple[sqlite3.Connection, threading.Lock, dict[str, Any]]] = {}
_FILES_LOCK = threading.Lock()
_logger = logging.getLogger("agentmap.llm_cache")


def ttl_of(context_value: Any, config_value: Any) -> float | None:
    """The node's cache lifetime in seconds: its Context `cache`, else `llm.cache`; None when not cached."""
    chosen = config_value if context_value is None else context_value
    if isinstance(chosen, Mapping) and isinstance(chosen.get("ttl"), (int, float)):
        return float(chosen["ttl"])
    return None


def lookup(model: str, request: Any) -> Any | None:
    """The stored reply to `request` (as JSON values) while it is fresh; None on a miss or with `--no-cache`."""
    try:
        execute = _place()
        rows = [] if execute is None else execute(_GET, (_key(model, request), time.time()))
        return json.loads(rows[0][0]) if rows else None
    except Exception as exc:  # a cache that cannot be read is a miss, not a failed node
        _logger.warning("the LLM cache could not be read (%s: %s); calling the model", type(exc).__name__, exc)
        return None


def store(model: str, request: Any, response: Any, ttl: float) -> None:
    """Keep `response` (JSON values) as the reply to `request` for `ttl` seconds (expired entries are dropped)."""
    now = time.time()
    text = json.dumps(response, ensure_ascii=False, default=str)
    try:
        execute = _place()
        if execute is not None:
            execute(_PURGE, (now,))
            execute(_PUT, (_key(model, request), model, text, now, now + ttl))
    except Exception as exc:  # the reply was paid for: keep it for the run even when it cannot be kept here
        _logger.warning("the LLM cache could not be written (%s: %s)", type(exc).__name__, exc)


def _key(model: str, request: Any) -> str:
    return digest({"cache": model, "request": request})


def _place() -> Execute | None:
    """How to run SQL on this run's cache: the checkpoint's database, else the default file; None when the run
    turned the cache off (`--no-cache`)."""
    configurable = current_config().get("configurable") or {}
    if configurable.get("no_cache"):
        return None
    return saver_sql(configurable.get(CHECKPOINTER_KEY), _CREATE) or _default_file()


def _default_file() -> Execute:
    """`llm_cache.db` of AgentMap's own folder (`$AGENTMAP_STATE_DIR`, else `.agentmap/` of the working folder),
    one connection per file."""
    path = state_file("llm_cache.db", os.getcwd())
    with _FILES_LOCK:
        if path not in _FILES:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            _FILES[path] = (conn, threading.Lock(), {})
        conn, lock, marks = _FILES[path]
    return sqlite_sql(conn, lock, marks, _CREATE)
