"""What saving the sheet on screen does to the threads waiting on its file: shown by the page before it saves.

The threads are those of the studio's checkpoint (`StudioConfig.checkpoint`, where its runs keep them) whose
workflow is this file and that have not finished: each keeps the revision it started on when the file is saved
(`runtime.revisions`), and the page says, for each, whether moving it to the sheet on screen would be `safe`,
`needs-migration` (with the lines of the map) or `unsafe` (why), as `agentmap diff --thread` says it
(`runtime.changes`), and what changed since the revision it runs.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.errors import AgentMapError
from agentmap.runtime.changes import VERDICTS, compare
from agentmap.runtime.checkpoint import checkpoint_exists, checkpointer
from agentmap.runtime.threads import ThreadInfo, threads
from agentmap.spec.readers import unsaved_tables

if TYPE_CHECKING:
    from agentmap.runtime.options import CompileOptions
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.studio._check import Checked

__all__ = ["WAITING", "impact"]

WAITING = ("paused", "interrupted", "failed")
"""The statuses of a thread that has not finished (`agentmap resume` goes on with it)."""


def impact(path: Path, checked: Checked, checkpoint: str, options: CompileOptions) -> dict[str, Any]:
    """The threads of `checkpoint` waiting on the workflow file at `path`, and what the rows `checked` (the sheet
    on screen, not saved yet) would do to each if it were moved to them.

    Returns:
        `waiting` (how many), `threads` (each: `thread`, `graph`, `revision`, `at`, `status`, `verdict` (None while
        the sheet has errors), `reasons`, `map`), `revisions` (each revision they run: its threads and the changes
        from it to the sheet) and `verdicts` (how many threads of each).
    """
    if not checkpoint_exists(checkpoint):
        return _document([], {})
    saver = checkpointer(checkpoint)
    try:
        mine = [t for t in threads(saver, options=options) if _waits_on(t, path)]
        return _judged(mine, checked, saver, options)
    finally:
        conn = getattr(saver, "conn", None)
        if isinstance(conn, sqlite3.Connection):  # a SQLite file's own connection (not a shared pool)
            conn.close()


def _waits_on(thread: ThreadInfo, path: Path) -> bool:
    if thread.workflow is None or thread.status not in (*WAITING, "unknown"):
        return False
    return Path(thread.workflow).resolve() == path.resolve()


def _judged(mine: list[ThreadInfo], checked: Checked, saver: Any, options: CompileOptions) -> dict[str, Any]:
    """Each waiting thread judged against the sheet, and the changes from each revision they run."""
    compiled: dict[str, CompiledWorkflow | None] = {}
    revisions: dict[str, dict[str, Any]] = {}
    found = []
    for info in mine:
        graph = str(info.graph)
        if graph not in compiled:
            compiled[graph] = _sheet_graph(checked, graph, saver, options)
        new = compiled[graph]
        judged: dict[str, Any] = {
            "thread": info.thread_id,
            "graph": graph,
            "revision": (info.revision or "")[:12] or None,
            "at": list(info.next),
            "status": info.status,
            "verdict": None,
            "reasons": [],
            "map": [],
        }
        if info.error:
            judged["reasons"] = [info.error]
        elif new is None:
            judged["reasons"] = [_no_graph(checked, graph)]
        else:
            try:
                thread = new.thread(info.thread_id)
                verdict = thread.plan_move()
                judged.update(verdict=verdict.verdict, reasons=list(verdict.reasons), map=list(verdict.lines))
                key = f"{graph}@{judged['revision']}"
                if key not in revisions:
                    changes = compare(thread.app, new).changes
                    revisions[key] = {"graph": graph, "revision": judged["revision"], "threads": 0}
                    revisions[key]["changes"] = [c.text for c in changes]
                revisions[key]["threads"] += 1
            except AgentMapError as err:  # its revision no longer compiles, or is damaged
                judged["reasons"] = [err.message]
        found.append(judged)
    return _document(found, revisions)


def _sheet_graph(checked: Checked, graph: str, saver: Any, options: CompileOptions) -> CompiledWorkflow | None:
    """Graph `graph` of the sheet on screen, compiled with the threads' saver (None: the sheet has errors, or no
    such graph)."""
    from agentmap.runtime.api import compile

    if not checked.valid or checked.workflow is None or graph not in checked.workflow.graph_names:
        return None
    with unsaved_tables(checked.unsaved):
        return compile(checked.workflow, graph, options=options.but(checkpointer=saver))


def _no_graph(checked: Checked, graph: str) -> str:
    if not checked.valid or checked.workflow is None:
        return "the sheet has errors: what saving it does to this thread is told once they are fixed"
    return f"graph {graph!r}, which it runs, is not in the sheet: it finishes on its own revision, and cannot move"


def _document(found: list[dict[str, Any]], revisions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    counts = {name: sum(1 for t in found if t["verdict"] == name) for name in VERDICTS}
    return {"waiting": len(found), "threads": found, "revisions": list(revisions.values()), "verdicts": counts}
