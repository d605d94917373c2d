"""Revisions: what a workflow was when a thread started, kept so that the thread finishes on it.

A revision is the workflow file's bytes and every file the workflow reads as part of its definition (the prompt
files its `file:` cells name, the prompt registry, the configuration file, the workflow files its `graph` nodes
call; a workbook's other sheets are in its bytes), each stored once per distinct content (by its SHA-256) in the
thread's checkpoint database (`_revision_rows.py`), and the SHA-256 of each Python file it imports (custom agents,
`func:` routers, tool files), which is not stored: Python code runs from where it is. A revision's id is the
SHA-256 of that manifest; it is shown by its first 12 characters, as a git commit is.

A run that starts a thread records its revision (`keep`, once per database and revision: a lookup when the content
is there already) and names it in every checkpoint's metadata (`REVISION_KEY`). Continuing the thread compiles the
workflow from the stored bytes (`compile_at`), at the file's own path, whatever the file holds now; a Python file
that changed since is named in a warning with both digests, one that is gone makes the revision unloadable
(`revision-unloadable`). Bytes that do not match their digest are `corrupt-checkpoint`.

The one owner of revisions is the runtime: `CompiledWorkflow.revision` is the revision a compile read,
`CompiledWorkflow.thread(id).app` the workflow compiled at the thread's own revision, `Thread.move` moves it to
another (see `runtime.durable`), and `runtime.changes` says what an edit does to the threads waiting.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap._sources import Reading, recording, sha256, stored
from agentmap.agents._saver_sql import kept_beside
from agentmap.config import load_settings
from agentmap.errors import AgentMapError, ConfigError, CorruptCheckpointError, ErrorCode
from agentmap.runtime import _revision_rows
from agentmap.runtime.api import compile
from agentmap.runtime.threads import FILE_KEY, GRAPH_KEY, saved_keys, thread_config

if TYPE_CHECKING:
    from agentmap.runtime.options import CompileOptions
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = [
    "MOVED_FROM_KEY",
    "REVISION_KEY",
    "CodeChange",
    "Revision",
    "can_store",
    "compile_at",
    "find_revision",
    "keep",
    "load_revision",
    "revision_of",
    "revisions",
    "thread_app",
]

REVISION_KEY = "agentmap_revision"
"""The checkpoint metadata key naming the revision a thread's run ran (its full id)."""
MOVED_FROM_KEY = "agentmap_moved_from"
"""The metadata key of the checkpoint that moved a thread to another revision: the revision it moved from."""
MIGRATION_KEY = "agentmap_migration"
"""The metadata key of that checkpoint: the migration map's lines that moved it (empty for `--latest`)."""

_SHORT = 12
_log = logging.getLogger("agentmap.runtime")


@dataclass(frozen=True)
class Revision:
    """One revision of a workflow.

    Attributes:
        id: The SHA-256 of its manifest (hex, 64 characters).
        workflow: The workflow file's name (its path relative to its own folder).
        files: Each definition file, by its path relative to the workflow file's folder: its SHA-256.
        code: Each Python file imported, by its path relative to the same folder: its SHA-256 (None: unreadable).
        config: The configuration file among `files` (None: the settings came from no file).
        location: Where the workflow file was when the revision was first recorded (absolute).
        recorded: When it was first recorded (seconds since the epoch; 0 when not stored yet).
    """

    id: str
    workflow: str
    files: Mapping[str, str]
    code: Mapping[str, str | None] = field(default_factory=dict)
    config: str | None = None
    location: str | None = None
    recorded: float = 0.0

    @property
    def short(self) -> str:
        """The id's first 12 characters (what listings show; any unique prefix names it)."""
        return self.id[:_SHORT]

    def manifest(self) -> str:
        """The manifest its id is the SHA-256 of (canonical JSON)."""
        return _manifest(self.workflow, self.files, self.code, self.config)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return {
            "revision": self.id,
            "short": self.short,
            "workflow": self.workflow,
            "location": self.location,
            "files": dict(self.files),
            "code": dict(self.code),
            "config": self.config,
        }


def _manifest(workflow: str, files: Mapping[str, str], code: Mapping[str, str | None], config: str | None) -> str:
    document = {"workflow": workflow, "files": dict(sorted(files.items())), "code": dict(sorted(code.items()))}
    document["config"] = config  # type: ignore[assignment]
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def _relative(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path, base)).as_posix()


@dataclass(frozen=True)
class CodeChange:
    """A Python file of a revision that is not what it was: `now` is None when it is gone."""

    path: str
    then: str | None
    now: str | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return {"file": self.path, "recorded": self.then, "now": self.now}


def revision_of(
    file: str | Path, reading: Reading, config_file: str | Path | None = None
) -> tuple[Revision, dict[str, bytes]] | None:
    """The revision of the workflow file `file` made of what a compile read, and its contents by digest (None when
    the compile did not read `file`: rows not saved, a `GraphSpec` compiled from Python)."""
    path = Path(file).resolve()
    if path not in reading.files:
        return None
    base = path.parent
    files: dict[str, str] = {}
    contents: dict[str, bytes] = {}
    for read, data in reading.files.items():
        digest = sha256(data)
        files[_relative(read, base)] = digest
        contents[digest] = data
    code = {_relative(p, base): d for p, d in reading.code.items()}
    config = None
    if config_file is not None and Path(config_file).resolve() in reading.files:
        config = _relative(Path(config_file).resolve(), base)
    workflow = _relative(path, base)
    manifest = _manifest(workflow, files, code, config)
    revision = Revision(sha256(manifest.encode("utf-8")), workflow, files, code, config, str(path))
    return revision, contents


def can_store(saver: Any) -> bool:
    """Whether `saver` keeps revisions (the SQLite, PostgreSQL and in-memory savers; not a saver of another kind)."""
    return _revision_rows.can_store(saver)


def keep(saver: Any, revision: Revision, contents: Mapping[str, bytes]) -> None:
    """Store `revision` in `saver`'s database unless it is there (once per saver object: a set lookup after)."""
    kept: set[str] = kept_beside(saver, "kept revisions", set)
    if revision.id in kept:
        return
    if _revision_rows.row(saver, revision.id) is None:
        location = revision.location or revision.workflow
        _revision_rows.put(saver, revision.id, revision.manifest(), location, contents)
    kept.add(revision.id)


def _from_row(found: _revision_rows.Row) -> Revision:
    revision_id, manifest, location, recorded = found
    try:
        document = json.loads(manifest)
        revision = Revision(
            revision_id,
            str(document["workflow"]),
            dict(document["files"]),
            dict(document.get("code") or {}),
            document.get("config"),
            location,
            recorded,
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptCheckpointError(
            f"revision {revision_id[:_SHORT]}'s record does not read ({type(exc).__name__}: {exc})",
            hint="restore the checkpoint database from a copy",
        ) from None
    if sha256(manifest.encode("utf-8")) != revision_id:
        raise CorruptCheckpointError(
            f"revision {revision_id[:_SHORT]}'s record does not match its id (it was changed after it was written)",
            hint="restore the checkpoint database from a copy, or move the thread to the file as it is now "
            "(agentmap resume ID --latest)",
        )
    return revision


def revisions(saver: Any) -> list[Revision]:
    """Every revision `saver`'s database holds, oldest first (their records checked, their files not read)."""
    if not can_store(saver):
        return []
    return [_from_row(r) for r in _revision_rows.rows(saver)]


def find_revision(saver: Any, text: str) -> Revision:
    """The revision whose id is `text` or starts with it (at least 4 characters).

    Raises:
        ConfigError: No revision has such an id, or several do (`unknown-revision`).
    """
    prefix = text.strip().lower()
    found = _revision_rows.rows(saver, prefix) if can_store(saver) and len(prefix) >= 4 else []
    if len(found) == 1:
        return _from_row(found[0])
    if len(found) > 1:
        named = ", ".join(r[0][:_SHORT] for r in found)
        raise ConfigError(
            f"revision {text!r} is ambiguous: {len(found)} revisions start so ({named})",
            code=ErrorCode.UNKNOWN_REVISION,
            hint="give more of its id",
        )
    raise ConfigError(
        f"the checkpoint holds no revision {text!r}",
        code=ErrorCode.UNKNOWN_REVISION,
        hint="`agentmap threads` shows each thread's revision (pass the --checkpoint the runs used); a revision "
        "id has at least 4 of its characters",
    )


def load_revision(saver: Any, revision_id: str) -> tuple[Revision, dict[str, bytes]]:
    """Revision `revision_id` and its files' contents by path (relative to the workflow's folder), checked.

    Raises:
        ConfigError: The database holds no such revision (`unknown-revision`).
        CorruptCheckpointError: Its record or one of its files does not match its digest, or a file is missing.
    """
    found = _revision_rows.row(saver, revision_id) if can_store(saver) else None
    if found is None:
        raise ConfigError(
            f"the checkpoint holds no revision {revision_id[:_SHORT]}",
            code=ErrorCode.UNKNOWN_REVISION,
            hint="pass the --checkpoint the runs used (`agentmap threads` lists each thread's revision)",
        )
    revision = _from_row(found)
    contents = _revision_rows.files(saver, list(revision.files.values()))
    by_path: dict[str, bytes] = {}
    for path, digest in revision.files.items():
        content = contents.get(digest)
        if content is None:
            problem = "is missing from the database"
        elif sha256(content) != digest:
            problem = "does not match its SHA-256 (it was changed after it was written)"
        else:
            by_path[path] = content
            continue
        raise CorruptCheckpointError(
            f"revision {revision.short}: its copy of {path} {problem}",
            hint="restore the checkpoint database from a copy, or move the thread to the file as it is now "
            "(agentmap resume ID --latest)",
        )
    return revision, by_path


def compile_at(
    saver: Any,
    revision_id: str,
    file: str | Path,
    graph: str | None,
    options: CompileOptions,
    *,
    thread_id: str | None = None,
) -> CompiledWorkflow:
    """Graph `graph` of workflow `file` compiled from revision `revision_id`'s stored files (its Python files run
    from where they are, each that changed named in a warning), with checkpointer `saver`.

    The revision's configuration file, when it had one, gives the settings (the environment still counts).

    Raises:
        ConfigError: No such revision (`unknown-revision`); the workflow no longer compiles at it, a Python file it
            imports being gone, say (`revision-unloadable`).
        CorruptCheckpointError: A stored file does not match its digest.
    """

    revision, by_path = load_revision(saver, revision_id)
    base = Path(file).resolve().parent
    held = {base / path: content for path, content in by_path.items()}
    whose = f"thread {thread_id!r} runs revision" if thread_id else "revision"
    try:
        with stored(held), recording() as now:
            app = compile(Path(file), graph, options=_settings_at(revision, base, options))
    except AgentMapError as err:
        raise _unloadable(revision, base, err, whose) from None
    app._pin(revision, held, _code_changes(revision, now, base))
    for change in app.code_changes:
        what = "is gone" if change.now is None else f"changed since (sha256 {change.then} then, {change.now} now)"
        _log.warning(
            "%s %s of %s: its Python file %s %s; Python code is not stored with a revision, so the code as it is "
            "now runs",
            whose,
            revision.short,
            Path(file).name,
            base / change.path,
            what,
        )
    return app


def thread_app(asked: CompiledWorkflow, thread_id: str, checkpoint_id: str | None = None) -> CompiledWorkflow:
    """The workflow thread `thread_id` of `asked`'s checkpointer runs (`Thread.app`): `asked` itself when the
    thread runs `asked`'s revision or records none, else `asked`'s graph compiled at the thread's revision (with
    `asked`'s options; kept in `asked.at_revisions`, so each revision compiles once).

    Raises:
        ConfigError: The revision is unknown (`unknown-revision`) or no longer compiles (`revision-unloadable`).
        CorruptCheckpointError: A stored file of the revision does not match its digest.
    """

    saver: Any = asked.graph.checkpointer
    saved = saver.get_tuple(thread_config(thread_id, checkpoint_id=checkpoint_id))
    meta = (saved.metadata or {}) if saved is not None else {}
    revision, file = meta.get(REVISION_KEY), meta.get(FILE_KEY)
    mine = asked.revision
    if saved is None or not revision or not file or (mine is not None and mine.id == revision):
        return asked
    keys = tuple(dict.fromkeys((*asked.options.state_keys, *saved_keys(saved.checkpoint.get("channel_values", {})))))
    key = (str(revision), keys)
    if key not in asked.at_revisions:
        options = asked.options.but(checkpointer=saver, state_keys=keys)
        graph = str(meta.get(GRAPH_KEY) or asked.name)
        asked.at_revisions[key] = compile_at(saver, str(revision), str(file), graph, options, thread_id=thread_id)
    return asked.at_revisions[key]


def _settings_at(revision: Revision, base: Path, options: CompileOptions) -> CompileOptions:
    """`options` with the settings of the revision's configuration file (read from its stored copy)."""
    if revision.config is None:
        return options

    settings = load_settings(base / revision.config)
    return options.but(
        settings=settings.agent_settings(),
        config_file=base / revision.config,
        **settings.policy_options(),
    )


def _code_changes(revision: Revision, now: Reading, base: Path) -> tuple[CodeChange, ...]:
    read_now = {_relative(p, base): d for p, d in now.code.items()}
    changes = []
    for path, then in sorted(revision.code.items()):
        current = read_now.get(path) if path in read_now else _digest_of(base / path)
        if current != then:
            changes.append(CodeChange(path, then, current))
    return tuple(changes)


def _digest_of(path: Path) -> str | None:
    try:
        return sha256(path.read_bytes())
    except OSError:
        return None


def _unloadable(revision: Revision, base: Path, err: AgentMapError, whose: str) -> ConfigError:
    gone = [p for p, d in sorted(revision.code.items()) if d is not None and _digest_of(base / p) is None]
    because = f"; it imports {', '.join(str(base / p) for p in gone)}, which is gone" if gone else ""
    put_back = (
        f"put {', '.join(f'{base / p} back (sha256 {revision.code[p]})' for p in gone)}"
        if gone
        else "put back what it needs"
    )
    return ConfigError(
        f"{whose} {revision.short} of {base / revision.workflow}, which no longer compiles{because}: {err.message}",
        code=ErrorCode.REVISION_UNLOADABLE,
        hint=f"{put_back}, or move the thread to the file as it is now: agentmap resume ID --latest "
        "(agentmap diff --thread ID says whether that is safe)",
    )
