"""The decision log (csv_specs/engine.md observability): every decision and tool call, stored in SQLite.

The engine writes a decision row as `PENDING` before it calls the model and updates the same row with
the outcome afterwards; each tool call adds a row to `tool_invocations`. Read them back with
`SQLiteDecisionLog.list_decisions` / `get_tool_invocations` (`agentmap logs` prints them).

The database is a plain SQLite file: an explicit path, the `llm.decision_log` setting,
`$AGENTMAP_DECISION_LOG`, by default `decisions.db` in `$AGENTMAP_STATE_DIR`, else in `.agentmap/` under the working
directory.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentmap._paths import state_file

__all__ = [
    "DecisionLogService",
    "DecisionRecord",
    "SQLiteDecisionLog",
    "ToolInvocationRecord",
    "configured_log_path",
    "default_log_path",
    "dumps",
]

ENV_VAR = "AGENTMAP_DECISION_LOG"
_OFF = ("off", "false", "none", "no", "")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    decision_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    message TEXT NOT NULL,
    intent_type TEXT NOT NULL,
    decision_type TEXT NOT NULL,
    outcome_category TEXT NOT NULL,
    duration_ms REAL NOT NULL,
    response_text TEXT,
    error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_conversation ON decisions (conversation_id, created_at);
CREATE TABLE IF NOT EXISTS tool_invocations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    decision_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    parameters TEXT NOT NULL,
    result TEXT,
    success INTEGER NOT NULL,
    error_code TEXT,
    error_message TEXT,
    duration_ms REAL NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_invocations_decision ON tool_invocations (decision_id, id);
"""

_DECISION_COLUMNS = (
    "decision_id, conversation_id, user_id, message, intent_type, decision_type, outcome_category, "
    "duration_ms, response_text, error, created_at, updated_at"
)

_UPSERT_DECISION = """
INSERT INTO decisions (decision_id, conversation_id, user_id, message, intent_type, decision_type,
    outcome_category, duration_ms, response_text, error, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (decision_id) DO UPDATE SET
    intent_type = excluded.intent_type, decision_type = excluded.decision_type,
    outcome_category = excluded.outcome_category, duration_ms = excluded.duration_ms,
    response_text = excluded.response_text, error = excluded.error, updated_at = excluded.updated_at
"""

_INSERT_TOOL = """
INSERT INTO tool_invocations (decision_id, tool_name, parameters, result, success, error_code,
    error_message, duration_ms, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


@runtime_checkable
class DecisionLogService(Protocol):
    """What the engine needs of a logging service: the two calls of the engine contract, with exactly its
    keyword arguments. A service may also offer `write_decision_details(*, decision_id, response_text, error)`;
    the engine then records the reply's text and the error there (`SQLiteDecisionLog` does)."""

    async def write_decision_log(
        self,
        *,
        decision_id: str,
        conversation_id: str,
        user_id: str,
        message: str,
        intent_type: str,
        decision_type: str,
        outcome_category: str,
        duration_ms: float,
    ) -> None:
        """Insert the decision row, or update it when `decision_id` was written before."""

    async def write_tool_invocation_log(
        self,
        *,
        decision_id: str,
        tool_name: str,
        parameters: dict[str, Any],
        result: Any,
        success: bool,
        error_code: str | None,
        error_message: str | None,
        duration_ms: float,
    ) -> None:
        """Record one tool call made while deciding `decision_id`."""


@dataclass(frozen=True)
class ToolInvocationRecord:
    """One logged tool call."""

    decision_id: str
    tool_name: str
    parameters: dict[str, Any]
    result: Any
    success: bool
    error_code: str | None
    error_message: str | None
    duration_ms: float
    created_at: datetime


@dataclass(frozen=True)
class DecisionRecord:
    """One logged decision (`decision_type` and `outcome_category` are `PENDING` until it finishes)."""

    decision_id: str
    conversation_id: str
    user_id: str
    message: str
    intent_type: str
    decision_type: str
    outcome_category: str
    duration_ms: float
    response_text: str | None
    error: str | None
    created_at: datetime
    updated_at: datetime


def default_log_path(base_dir: str | Path | None = None) -> Path:
    """Where the decision log lives: `$AGENTMAP_DECISION_LOG`, else `decisions.db` of AgentMap's own folder:
    `$AGENTMAP_STATE_DIR`, else `<base_dir or cwd>/.agentmap/`."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    return state_file("decisions.db", base_dir or Path.cwd())


def configured_log_path(settings: Mapping[str, Any] | None = None) -> Path | None:
    """The decision log the settings choose: `llm.decision_log` (nested or dotted) or `decision_log`,
    relative to the working directory; else `default_log_path()`. None when set to false/"off"."""
    value: Any = None
    if settings:
        llm = settings.get("llm")
        if isinstance(llm, Mapping):
            value = llm.get("decision_log")
        for key in ("llm.decision_log", "decision_log"):
            value = settings.get(key) if value is None else value
    if value is None:
        return default_log_path()
    if value is False or str(value).strip().lower() in _OFF:
        return None
    return Path(str(value)).expanduser()


def _now() -> str:
    return datetime.now(UTC).isoformat()


def dumps(value: Any) -> str:
    """JSON text of a logged value (non-JSON values as their str)."""
    return json.dumps(value, default=str, ensure_ascii=False)


class SQLiteDecisionLog:
    """A `DecisionLogService` writing to one SQLite file.

    The file and its folder are created on the first write. Writes take a few tens of microseconds
    (WAL journal), so they run inline rather than in a thread. One instance may be shared by several
    engines and threads.

    Args:
        path: The database file; None means `default_log_path()`.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_log_path()
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    # -- connection ----------------------------------------------------------------------------

    @contextmanager
    def _connection(self, *, create: bool) -> Iterator[sqlite3.Connection | None]:
        with self._lock:
            if self._conn is None:
                if not create and not self.path.exists():
                    yield None
                    return
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.executescript(_SCHEMA)
                self._conn = conn
            yield self._conn

    def close(self) -> None:
        """Close the database connection (it reopens on the next call)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SQLiteDecisionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------

    async def write_decision_log(
        self,
        *,
        decision_id: str,
        conversation_id: str,
        user_id: str,
        message: str,
        intent_type: str,
        decision_type: str,
        outcome_category: str,
        duration_ms: float,
        response_text: str | None = None,
        error: str | None = None,
    ) -> None:
        """Insert the decision row, or update its outcome when `decision_id` was written before."""
        now = _now()
        row = (
            decision_id,
            conversation_id,
            user_id,
            message,
            intent_type,
            decision_type,
            outcome_category,
            float(duration_ms),
            response_text,
            error,
            now,
            now,
        )
        with self._connection(create=True) as conn:
            assert conn is not None
            with conn:
                conn.execute(_UPSERT_DECISION, row)

    async def write_decision_details(
        self, *, decision_id: str, response_text: str | None = None, error: str | None = None
    ) -> None:
        """Record the reply's text and the error of a decision written before (beyond the contract's columns)."""
        with self._connection(create=True) as conn:
            assert conn is not None
            with conn:
                conn.execute(
                    "UPDATE decisions SET response_text = ?, error = ?, updated_at = ? WHERE decision_id = ?",
                    (response_text, error, _now(), decision_id),
                )

    async def write_tool_invocation_log(
        self,
        *,
        decision_id: str,
        tool_name: str,
        parameters: dict[str, Any],
        result: Any,
        success: bool,
        error_code: str | None,
        error_message: str | None,
        duration_ms: float,
    ) -> None:
        """Record one tool call made while deciding `decision_id` (values stored as JSON)."""
        row = (
            decision_id,
            tool_name,
            dumps(parameters),
            dumps(result),
            int(success),
            error_code,
            error_message,
            float(duration_ms),
            _now(),
        )
        with self._connection(create=True) as conn:
            assert conn is not None
            with conn:
                conn.execute(_INSERT_TOOL, row)

    # -- reading -------------------------------------------------------------------------------

    def list_decisions(
        self,
        *,
        conversation_id: str | None = None,
        user_id: str | None = None,
        limit: int | None = 50,
    ) -> list[DecisionRecord]:
        """The latest decisions, oldest first, optionally of one conversation or user."""
        where, args = [], []
        if conversation_id is not None:
            where.append("conversation_id = ?")
            args.append(conversation_id)
        if user_id is not None:
            where.append("user_id = ?")
            args.append(user_id)
        sql = f"SELECT {_DECISION_COLUMNS} FROM decisions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._connection(create=False) as conn:
            if conn is None:
                return []
            rows = conn.execute(sql, args).fetchall()
        return [_decision(r) for r in reversed(rows)]

    def get_decision(self, decision_id: str) -> DecisionRecord | None:
        """The decision logged under `decision_id`, or None."""
        with self._connection(create=False) as conn:
            if conn is None:
                return None
            row = conn.execute(
                f"SELECT {_DECISION_COLUMNS} FROM decisions WHERE decision_id = ?", (decision_id,)
            ).fetchone()
        return _decision(row) if row else None

    def get_tool_invocations(self, decision_id: str) -> list[ToolInvocationRecord]:
        """The tool calls made while deciding `decision_id`, in the order they ran."""
        with self._connection(create=False) as conn:
            if conn is None:
                return []
            rows = conn.execute(
                "SELECT decision_id, tool_name, parameters, result, success, error_code, error_message, "
                "duration_ms, created_at FROM tool_invocations WHERE decision_id = ? ORDER BY id",
                (decision_id,),
            ).fetchall()
        return [
            ToolInvocationRecord(
                r[0],
                r[1],
                json.loads(r[2]),
                json.loads(r[3]) if r[3] else None,
                bool(r[4]),
                r[5],
                r[6],
                r[7],
                datetime.fromisoformat(r[8]),
            )
            for r in rows
        ]


def _decision(r: tuple[Any, ...]) -> DecisionRecord:
    return DecisionRecord(
        decision_id=r[0],
        conversation_id=r[1],
        user_id=r[2],
        message=r[3],
        intent_type=r[4],
        decision_type=r[5],
        outcome_category=r[6],
        duration_ms=r[7],
        response_text=r[8],
        error=r[9],
        created_at=datetime.fromisoformat(r[10]),
        updated_at=datetime.fromisoformat(r[11]),
    )
