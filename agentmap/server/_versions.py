"""Assistant versions: each revision of a served workflow is a version of its assistants, shared by every replica.

A replica numbers the revision it compiled from each file in the run store (`_store_versions.py`), after storing
the revision's files in the checkpointer's database (`CompiledWorkflow.keep_revision`), so that any replica can
compile any version (`Assistant.at`), whatever its own copy of the file holds. Which version a run takes:

- a run on a thread that has run: the revision its checkpoints name (`runtime.revisions`), whatever the latest
  version is; a thread keeps its revision as it keeps its graph;
- a run on a new thread, or without one: the assistant's latest version, read from the store as the run is
  accepted and recorded with it (`RunRequest.payload`), so a replica that takes it over runs the same one.

A changed file becomes a new version without a restart: `reload` (`POST /assistants/reload`, or `watch` with
`agentmap serve --reload`) compiles the files again and numbers each changed revision, which becomes the latest;
`set_latest` chooses another.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter

from agentmap.errors import AgentMapError, ConfigError, ErrorCode
from agentmap.runtime.durable import Thread
from agentmap.server._bodies import api_router
from agentmap.server._graphs import Assistant, compile_graph
from agentmap.server._models import ApiError, LatestVersion, VersionSearch, refuse_unsupported
from agentmap.server._records import VersionRecord
from agentmap.server._users import Caller, CallerOf

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._auth import Action
    from agentmap.server._store import Store

__all__ = ["VERSION_FIELD", "Reloaded", "Versions", "asked_version", "version_routes"]

_log = logging.getLogger("agentmap.server")

VERSION_FIELD = "config.configurable.assistant_version"
"""Where a run names the version it runs (a number, or "latest"): `runs.create(..., config={"configurable":
{"assistant_version": 2}})`."""

Reloaded = dict[str, Any]
"""What `reload` says of one assistant: `assistant_id`, `graph_id`, `version`, `revision`, `changed`."""


class Versions:
    """The versions of a server's assistants: numbered in the run store, compiled here when a run needs one."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._numbered: dict[tuple[str, str], VersionRecord] = {}  # a revision's number never changes

    def serve(self, assistant: Assistant, *, latest: bool = False) -> None:
        """Number the revision `assistant` was compiled from here (a new one becomes the latest version; with
        `latest`, a known one too), its files stored first so every replica can compile it."""
        revision = assistant.revision
        if revision is None or assistant.app.keep_revision() is None:
            return
        view = assistant.at(revision)
        record = self._store.versions.register(
            assistant.assistant_id,
            graph_id=assistant.graph_id,
            revision=revision,
            description=view.description,
            metadata=view.metadata(),
            latest=latest,
        )
        self._named(view, record)
        assistant.version, assistant.created_at = record.version, record.created_at

    def latest(self, assistant: Assistant) -> Assistant:
        """The assistant at its latest version (compiled here from the store when this replica's file is another
        revision); itself when it has no versions (not compiled from a file)."""
        record = self._store.versions.latest(assistant.assistant_id)
        return self._named(assistant.at(record.revision), record) if record is not None else assistant

    def latest_compiled(self, assistant: Assistant) -> bool:
        """Whether the latest version is compiled here already (a run may then be accepted on the event loop)."""
        record = self._store.versions.latest(assistant.assistant_id)
        return record is None or assistant.compiled(record.revision)

    def at(self, assistant: Assistant, revision: str) -> Assistant:
        """The assistant at `revision`, numbered as one of its versions (now, when no replica had: a thread started
        by `agentmap run` on the same database, say)."""
        view = assistant.at(revision)
        key = (assistant.assistant_id, revision)
        record = self._numbered.get(key) or self._store.versions.of_revision(*key)
        if record is None:
            record = self._store.versions.register(
                assistant.assistant_id,
                graph_id=assistant.graph_id,
                revision=revision,
                description=view.description,
                metadata=view.metadata(),
                latest=False,
            )
        return self._named(view, record)

    def of_thread(self, assistant: Assistant, thread_id: str, checkpoint_id: str | None = None) -> Assistant:
        """The assistant at the revision thread `thread_id` runs (at `checkpoint_id`: the one that checkpoint
        names); its latest version for a thread that has not run, or that records no revision."""
        revision = Thread(assistant.app, thread_id, checkpoint_id).revision()
        return self._thread_at(assistant, thread_id, revision) if revision else self.latest(assistant)

    def for_run(self, assistant: Assistant, thread_id: str | None, recorded: str | None = None) -> Assistant:
        """The assistant a run executes: its thread's revision once the thread has run, else the revision the
        run was accepted with (`recorded`, a run taken over), else the latest version."""
        if thread_id is not None:
            revision = Thread(assistant.app, thread_id).revision()
            if revision:
                return self._thread_at(assistant, thread_id, revision)
        return self.at(assistant, recorded) if recorded else self.latest(assistant)

    def _thread_at(self, assistant: Assistant, thread_id: str, revision: str) -> Assistant:
        """`at(revision)` for thread `thread_id`, whose id a refusal names (its revision unknown to the database,
        damaged, or no longer compiling: nothing runs, the thread keeps waiting)."""
        try:
            return self.at(assistant, revision)
        except ConfigError as err:
            raise type(err)(f"thread {thread_id!r}: {err.message}", code=ErrorCode(err.code), hint=err.hint) from None

    def all(self, assistant: Assistant) -> list[VersionRecord]:
        """Every version of the assistant, newest first."""
        return self._store.versions.all(assistant.assistant_id)

    def set_latest(self, assistant: Assistant, version: int) -> Assistant:
        """Make `version` the one new runs take, once it compiles here; the assistant at it.

        Raises:
            ApiError: 404 `version-not-found` when the assistant has no such version.
            ConfigError: Its revision no longer compiles (`revision-unloadable`); nothing changed.
        """
        record = self._numbered_as(assistant, version, "version")
        view = assistant.at(record.revision)  # refused here, before new runs would fail on it
        chosen = self._store.versions.set_latest(assistant.assistant_id, version) or record
        _log.info("assistant %s: version %d is the latest (set by a client)", assistant.graph_id, version)
        return self._named(view, chosen)

    def named(self, assistant: Assistant, version: int | str) -> Assistant:
        """The assistant at the version a run names (`config.configurable.assistant_version`: a number, or
        "latest").

        Raises:
            ApiError: 404 `version-not-found` naming the field, when the assistant has no such version.
        """
        if version == "latest":
            return self.latest(assistant)
        record = self._numbered_as(assistant, int(version), VERSION_FIELD)
        return self._named(assistant.at(record.revision), record)

    def _numbered_as(self, assistant: Assistant, version: int, field: str) -> VersionRecord:
        """Version `version` of the assistant, or a 404 naming the request's `field` and the versions there are."""
        record = self._store.versions.get(assistant.assistant_id, version)
        if record is None:
            known = ", ".join(str(v.version) for v in self.all(assistant))
            raise ApiError(
                404,
                "version-not-found",
                f"{field}: assistant {assistant.graph_id!r} has no version {version}",
                hint=f"its versions: {known} (assistants.get_versions lists them)",
            )
        return record

    def reload(self, assistants: list[Assistant]) -> tuple[list[Reloaded], list[tuple[Assistant, AgentMapError]]]:
        """Compile each assistant's file again; a changed one is numbered (a new version, or the one it was
        before) and becomes the latest. A file that no longer compiles leaves its assistant as it was.

        Returns:
            What became of each assistant reloaded, and those not reloaded with why.
        """
        done: list[Reloaded] = []
        failed: list[tuple[Assistant, AgentMapError]] = []
        for assistant in assistants:
            try:
                changed = assistant.refresh(_recompiled(assistant))
                if changed:
                    self.serve(assistant, latest=True)
                    _log.info(
                        "assistant %s: %s changed; version %s (revision %s) is the latest, threads of earlier "
                        "versions finish on theirs",
                        assistant.graph_id,
                        assistant.app.spec.file,
                        assistant.version,
                        str(assistant.revision)[:12],
                    )
            except AgentMapError as err:
                _log.warning("assistant %s: %s was not reloaded: %s", assistant.graph_id, assistant.app.spec.file, err)
                failed.append((assistant, err))
                continue
            done.append(
                {
                    "assistant_id": assistant.assistant_id,
                    "graph_id": assistant.graph_id,
                    "version": assistant.version,
                    "revision": assistant.revision,
                    "changed": changed,
                }
            )
        return done, failed

    async def watch(self, assistants: list[Assistant], every: float) -> None:
        """Reload the assistants whose files changed on disk (looked at every `every` seconds), until cancelled."""
        seen = await asyncio.to_thread(_stamps, assistants)
        while True:
            await asyncio.sleep(every)
            now = await asyncio.to_thread(_stamps, assistants)
            changed = [a for a in assistants if now.get(a.assistant_id) != seen.get(a.assistant_id)]
            if changed:
                await asyncio.to_thread(self.reload, changed)
                now = await asyncio.to_thread(_stamps, assistants)  # the files of the new revisions
            seen = now

    @staticmethod
    def _named(view: Assistant, record: VersionRecord) -> Assistant:
        view.version, view.created_at = record.version, record.created_at
        return view


def asked_version(config: Mapping[str, Any] | None) -> int | str | None:
    """The version a run's `config` names (`VERSION_FIELD`), or None.

    Raises:
        ApiError: 422 `bad-request` naming the field, for a value that is no version number nor "latest".
    """
    asked = ((config or {}).get("configurable") or {}).get("assistant_version")
    if asked is None or asked == "latest" or (isinstance(asked, int) and not isinstance(asked, bool) and asked >= 1):
        return asked
    raise ApiError(
        422,
        "bad-request",
        f"{VERSION_FIELD}: {str(asked)[:40]!r} is no version",
        hint='give a version number (assistants.get_versions lists them) or "latest"',
    )


def _recompiled(assistant: Assistant) -> Assistant:
    """The assistant's graph compiled again from its file as it is now."""
    app = assistant.app
    return compile_graph(Path(str(app.spec.file)), app.name, app.graph.checkpointer, assistant.stateless.options)


def _stamps(assistants: list[Assistant]) -> dict[str, tuple[tuple[str, int, int], ...]]:
    """For each assistant, the modification time and size of every file its revision read (missing: -1)."""
    stamps: dict[str, tuple[tuple[str, int, int], ...]] = {}
    for assistant in assistants:
        revision, file = assistant.app.revision, Path(str(assistant.app.spec.file)).resolve()
        base = file.parent
        names = sorted({*revision.files, *revision.code}) if revision is not None else [file.name]
        found = []
        for name in names:
            try:
                stat = (base / name).stat()
                found.append((name, stat.st_mtime_ns, stat.st_size))
            except OSError:
                found.append((name, -1, -1))
        stamps[assistant.assistant_id] = tuple(found)
    return stamps


def version_routes(server: Server) -> APIRouter:
    """`assistants.get_versions`, `assistants.set_latest`, and `POST /assistants/reload`; with `--auth`, each asks
    the caller's `assistants` handlers (`read` to list the versions, `update` to choose one or reload), as LangGraph's
    server does."""
    router = api_router(tags=["assistants"])

    def allowed(assistant: Assistant, caller: Caller, action: Action, **value: Any) -> bool:
        """Whether the caller's handler lets them do `action` to the assistant (a refusal raises its 403)."""
        visible = caller.decide_now(
            "assistants", action, {"assistant_id": assistant.assistant_id, "metadata": {}, **value}
        )
        return visible is None or visible.matches(assistant.metadata())

    def assistant_for(assistant_id: str, caller: Caller, action: Action, **value: Any) -> Assistant:
        found = server.assistant(assistant_id)
        if not allowed(found, caller, action, **value):
            raise ApiError(404, "assistant-not-found", f"no assistant {assistant_id!r}")
        return found

    @router.post("/assistants/reload")
    def reload(caller: CallerOf) -> dict[str, Any]:
        """Compile the served files again: a changed one becomes a new version of its assistants, the latest (those
        the caller may update).

        Raises:
            ApiError: 422 naming the first file that no longer compiles (the others are reloaded; its assistants
                keep their versions).
        """
        mine = [a for a in server.assistants.all if allowed(a, caller, "update")]
        done, failed = server.versions.reload(mine)
        if failed:
            assistant, err = failed[0]
            raise ApiError(
                422,
                ErrorCode(err.code),  # a compile's error: always one of ErrorCode's
                f"assistant {assistant.graph_id!r} was not reloaded, {assistant.app.spec.file} does not compile: "
                f"{err.message}",
                hint=f"{err.hint or 'fix the file'}, then reload again; the server goes on with the version it had "
                f"({len(done)} other assistants reloaded)",
            )
        return {"assistants": done}

    @router.post("/assistants/{assistant_id}/versions")
    def versions(assistant_id: str, body: VersionSearch, caller: CallerOf) -> list[dict[str, Any]]:
        """The assistant's versions (each revision of its workflow served), newest first."""
        refuse_unsupported(body, "assistants.get_versions")
        wanted = body.metadata or {}
        found = [_version_json(v) for v in server.versions.all(assistant_for(assistant_id, caller, "read"))]
        found = [v for v in found if all(v["metadata"].get(k) == w for k, w in wanted.items())]
        return found[body.offset : body.offset + body.limit]

    @router.post("/assistants/{assistant_id}/latest")
    def set_latest(assistant_id: str, body: LatestVersion, caller: CallerOf) -> dict[str, Any]:
        """Make a version the one new threads and stateless runs take; the assistant at it."""
        assistant = assistant_for(assistant_id, caller, "update", version=body.version)
        return server.versions.set_latest(assistant, body.version).to_json()

    return router


def _version_json(record: VersionRecord) -> dict[str, Any]:
    """A version as LangGraph's server returns it (`AssistantVersion`)."""
    return {
        "assistant_id": record.assistant_id,
        "graph_id": record.graph_id,
        "name": record.graph_id,
        "description": record.description,
        "config": {},
        "context": {},
        "metadata": record.metadata,
        "version": record.version,
        "created_at": record.created_at,
    }
