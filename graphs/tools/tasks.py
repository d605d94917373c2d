"""Task-management tools for `graphs/task_assistant.csv`: tasks kept in a SQLite file.

The file is `$AGENTMAP_TASKS_DB`, or `tasks.db` beside AgentMap's own files (`$AGENTMAP_STATE_DIR`, else
`.agentmap/` under the working directory). Each tool is a
plain typed function; AgentMap turns its signature and docstring into the schema the model sees. The
`user_id` parameter is filled by AgentMap with the user the assistant serves (the model never sees
it), so each user has their own list. A tool that cannot do its job raises `ValueError` with a reason
the assistant can relay.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Literal

__all__ = ["add_task", "complete_task", "delete_task", "list_tasks", "update_task"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    title TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0
)
"""


def _db() -> sqlite3.Connection:
    folder = Path(os.environ.get("AGENTMAP_STATE_DIR") or Path.cwd() / ".agentmap")
    path = Path(os.environ.get("AGENTMAP_TASKS_DB") or folder / "tasks.db")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute(_SCHEMA)
    return conn


def _task(row: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": row[0], "title": row[1], "done": bool(row[2])}


def _get(conn: sqlite3.Connection, task_id: int, user_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT id, title, done FROM tasks WHERE id = ? AND user_id = ?", (task_id, user_id)).fetchone()
    if row is None:
        raise ValueError(f"there is no task {task_id}; list the tasks to see their numbers")
    return _task(row)


def add_task(title: str, user_id: str = "default") -> dict[str, Any]:
    """Add a new task to the to-do list.

    Args:
        title: What has to be done.
        user_id: Filled in by AgentMap.
    """
    if not title.strip():
        raise ValueError("a task needs a title")
    with closing(_db()) as conn, conn:
        cursor = conn.execute("INSERT INTO tasks (user_id, title) VALUES (?, ?)", (user_id, title.strip()))
        return _get(conn, int(cursor.lastrowid or 0), user_id)


def list_tasks(status: Literal["all", "open", "done"] = "all", user_id: str = "default") -> list[dict[str, Any]]:
    """List the tasks on the to-do list.

    Args:
        status: Which tasks to show: all, open or done.
        user_id: Filled in by AgentMap.
    """
    where = {"all": "", "open": " AND done = 0", "done": " AND done = 1"}[status]
    with closing(_db()) as conn:
        sql = f"SELECT id, title, done FROM tasks WHERE user_id = ?{where} ORDER BY id"
        rows = conn.execute(sql, (user_id,)).fetchall()
    return [_task(r) for r in rows]


def update_task(task_id: int, title: str, user_id: str = "default") -> dict[str, Any]:
    """Change the title of a task.

    Args:
        task_id: The task's number.
        title: The new title.
        user_id: Filled in by AgentMap.
    """
    with closing(_db()) as conn, conn:
        _get(conn, task_id, user_id)
        conn.execute("UPDATE tasks SET title = ? WHERE id = ?", (title.strip(), task_id))
        return _get(conn, task_id, user_id)


def complete_task(task_id: int, user_id: str = "default") -> dict[str, Any]:
    """Mark a task as done.

    Args:
        task_id: The task's number.
        user_id: Filled in by AgentMap.
    """
    with closing(_db()) as conn, conn:
        if _get(conn, task_id, user_id)["done"]:
            raise ValueError(f"task {task_id} is already done")
        conn.execute("UPDATE tasks SET done = 1 WHERE id = ?", (task_id,))
        return _get(conn, task_id, user_id)


def delete_task(task_id: int, user_id: str = "default") -> dict[str, Any]:
    """Delete a task from the to-do list for good.

    Args:
        task_id: The task's number.
        user_id: Filled in by AgentMap.
    """
    with closing(_db()) as conn, conn:
        task = _get(conn, task_id, user_id)
        conn.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
        return {"deleted": task}
