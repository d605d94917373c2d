"""diff, resume --migrate: what an edit of a workflow does to the threads waiting on it, and migration maps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap.runtime.changes import Position
    from agentmap.runtime.migration import Migration
    from agentmap.runtime.options import CompileOptions
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["diff_workflows", "read_migration"]


def read_migration(path: str) -> Migration:
    """resume --migrate, diff --migrate: the migration map in a CSV or YAML file (old node -> new node, old state
    key -> new key, defaults for new keys), read and checked for form (`bad-migration`, located)."""
    from agentmap.runtime.migration import read_migration

    return read_migration(path)


def diff_workflows(
    old: str | None,
    new: str | None,
    *,
    thread: str | None,
    checkpoint: str | None,
    migration: Migration | None,
    options: CompileOptions,
) -> dict[str, Any]:
    """diff: the changes from OLD to NEW (each a workflow file, `file::Graph`, or a revision id of the checkpoint;
    with `thread`, OLD is the thread's revision and NEW its file as it is now), and for a thread waiting at each
    node of OLD (or the one thread) whether moving it is safe, needs a migration map or is unsafe.

    Returns the document `agentmap diff --json` prints; its `verdict` is the worst of `threads`.

    Raises:
        ConfigError: A revision the checkpoint does not hold (`unknown-revision`), a thread it does not hold, or a
            map naming what does not exist (`bad-migration`).
        WorkflowFileError, WorkflowValidationError: A file that cannot be compiled.
    """
    from agentmap.runtime.changes import VERDICTS, compare

    if thread is not None:
        before, after, positions, described = _thread_sides(thread, checkpoint, migration, options)
    else:
        before, described_old = _side(str(old), checkpoint, options)
        after, described_new = _side(str(new), checkpoint, options)
        if migration is not None:
            migration.check(before, after)
        described = {"old": described_old, "new": described_new}
        positions = None
    changes = compare(before, after)
    verdicts = [changes.verdict(p, migration) for p in (positions or changes.positions())]
    worst = max((VERDICTS.index(v.verdict) for v in verdicts), default=0)
    return {
        **described,
        "changes": [c.to_dict() for c in changes.changes],
        "threads": [v.to_dict() for v in verdicts],
        "verdict": VERDICTS[worst],
    }


def _saver(checkpoint: str | None) -> Any:
    from agentmap.runtime.checkpoint import checkpoint_exists, checkpoint_target, checkpointer

    if not checkpoint_exists(checkpoint):
        from agentmap.errors import ConfigError, ErrorCode

        raise ConfigError(
            f"there is no checkpoint file {checkpoint_target(checkpoint, create=False)} here to hold revisions",
            code=ErrorCode.UNKNOWN_REVISION,
            hint="pass the --checkpoint the runs used, or compare two workflow files",
        )
    return checkpointer(checkpoint)


def _side(text: str, checkpoint: str | None, options: CompileOptions) -> tuple[CompiledWorkflow, dict[str, Any]]:
    """A workflow file (`file::Graph`) compiled as it is, or a revision id of the checkpoint compiled from its
    stored files; and how the diff names it."""
    from agentmap.runtime.api import WORKFLOW_SUFFIXES, compile
    from agentmap.spec.loader import parse_selector

    path, graph = parse_selector(text)
    if Path(path).is_file() or Path(path).suffix.lower() in WORKFLOW_SUFFIXES:  # a file (a missing one: named so)
        app = compile(text, options=options)
        return app, _named(app, str(path), "file")
    from agentmap.runtime.revisions import compile_at, find_revision

    saver = _saver(checkpoint)
    revision = find_revision(saver, str(path))
    location = revision.location or revision.workflow
    app = compile_at(saver, revision.id, location, graph, options.but(checkpointer=saver))
    return app, _named(app, location, "revision")


def _named(app: CompiledWorkflow, file: str, kind: str) -> dict[str, Any]:
    revision = app.revision
    return {"file": file, "graph": app.name, "kind": kind, "revision": revision.id if revision else None}


def _thread_sides(
    thread: str, checkpoint: str | None, migration: Migration | None, options: CompileOptions
) -> tuple[CompiledWorkflow, CompiledWorkflow, list[Position], dict[str, Any]]:
    """The thread's revision, its file as it is now, where it waits, and how the diff names them."""
    from agentmap.errors import ConfigError, ErrorCode
    from agentmap.runtime._moving import position
    from agentmap.runtime.api import compile
    from agentmap.runtime.durable import open_thread

    saver = _saver(checkpoint)
    opened = open_thread(saver, thread, options=options)
    saved = saver.get_tuple(opened.config())
    file, graph = opened.app.spec.file, opened.app.name
    now = compile(str(file), graph, options=options.but(checkpointer=saver, state_keys=opened.app.options.state_keys))
    where = position(opened.snapshot(), saved)
    if not where.nodes:
        raise ConfigError(
            f"thread {thread!r} waits at no node (it has finished): there is nothing to move",
            code=ErrorCode.NOTHING_TO_RESUME,
            hint="compare two revisions instead: agentmap diff OLD NEW",
        )
    if migration is not None:
        migration.check(opened.app, now, where.keys or frozenset())
    described = {
        "old": _named(opened.app, str(file), "revision"),
        "new": _named(now, str(file), "file"),
        "thread": thread,
    }
    return opened.app, now, [where], described
