"""The run store's assistant versions: each revision of a served graph numbered once, and the version new runs take.

A version is a revision of the assistant's workflow (`runtime.revisions`; its files are in the checkpointer's
tables, where any replica reads them), numbered 1, 2, ... in the order the replicas first served it
(`agentmap_assistant_versions`); `agentmap_assistants` names the latest one, which new threads and stateless runs
take. A replica that serves a revision no replica served before makes it a new version and the latest; one that
serves a known revision changes nothing, unless it reloaded a changed file (then that revision is the latest again)
or a client chose it (`set_latest`). Numbering takes a lock on the assistant, so two replicas serving one new
revision at once make one version of it.
"""

from __future__ import annotations

import json
from typing import Any

from agentmap.server._database import Database, Tx, Where
from agentmap.server._records import VersionRecord, now

__all__ = ["VERSION_TABLES", "VersionRows"]

VERSION_TABLES = (
    "CREATE TABLE IF NOT EXISTS agentmap_assistant_versions (assistant_id TEXT, version INTEGER, graph_id TEXT, "
    "revision TEXT, description TEXT, metadata TEXT, created_at TEXT, PRIMARY KEY (assistant_id, version))",
    "CREATE UNIQUE INDEX IF NOT EXISTS agentmap_assistant_revisions ON agentmap_assistant_versions "
    "(assistant_id, revision)",
    "CREATE TABLE IF NOT EXISTS agentmap_assistants (assistant_id TEXT PRIMARY KEY, latest INTEGER, updated_at TEXT)",
)
"""The two tables, the same text for SQLite and PostgreSQL."""


class VersionRows:
    """Assistant versions: numbered as replicas serve new revisions, listed, and the latest one read and chosen."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _select(self, tx: Tx, where: Where, order: str = "") -> list[VersionRecord]:
        """The versions `where` selects (every read of versions goes through here)."""
        rows = tx.rows(f"SELECT * FROM agentmap_assistant_versions{where.sql}{order}", where.args)
        return [VersionRecord.from_row(r) for r in rows]

    def register(
        self,
        assistant_id: str,
        *,
        graph_id: str,
        revision: str,
        description: str,
        metadata: dict[str, Any],
        latest: bool,
    ) -> VersionRecord:
        """The version of `revision`, numbered now when no replica served it before (it is then the latest);
        with `latest`, it is made the latest in any case. The first version of an assistant is its latest."""
        with self._db.transaction() as tx:
            self._db.lock_thread(tx, f"assistant {assistant_id}")  # one numbering at a time, across replicas
            mine = Where().also("assistant_id = ?", assistant_id)
            found = self._select(tx, mine.also("revision = ?", revision))
            if found:
                record = found[0]
            else:
                number = tx.rows(
                    "SELECT COALESCE(MAX(version), 0) + 1 AS next FROM agentmap_assistant_versions "
                    "WHERE assistant_id = ?",
                    (assistant_id,),
                )[0]["next"]
                tx.count(
                    "INSERT INTO agentmap_assistant_versions VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (assistant_id, int(number), graph_id, revision, description, json.dumps(metadata), now()),
                )
                record = self._select(tx, mine.also("version = ?", int(number)))[0]
            self._choose(tx, assistant_id, record.version, replace=latest or not found)
        return record

    def _choose(self, tx: Tx, assistant_id: str, version: int, *, replace: bool) -> None:
        """Make `version` the latest (`replace`), or only when the assistant has none yet."""
        then = "DO UPDATE SET latest = excluded.latest, updated_at = excluded.updated_at" if replace else "DO NOTHING"
        tx.count(
            f"INSERT INTO agentmap_assistants VALUES (?, ?, ?) ON CONFLICT (assistant_id) {then}",
            (assistant_id, version, now()),
        )

    def latest(self, assistant_id: str) -> VersionRecord | None:
        """The version new runs of the assistant take (None: no replica served it yet)."""
        with self._db.transaction() as tx:
            found = self._select(
                tx,
                Where()
                .also("assistant_id = ?", assistant_id)
                .also("version = (SELECT latest FROM agentmap_assistants WHERE assistant_id = ?)", assistant_id),
            )
        return found[0] if found else None

    def get(self, assistant_id: str, version: int) -> VersionRecord | None:
        """Version `version` of the assistant, or None."""
        with self._db.transaction() as tx:
            found = self._select(tx, Where().also("assistant_id = ?", assistant_id).also("version = ?", version))
        return found[0] if found else None

    def of_revision(self, assistant_id: str, revision: str) -> VersionRecord | None:
        """The version of the assistant that is `revision`, or None."""
        with self._db.transaction() as tx:
            found = self._select(tx, Where().also("assistant_id = ?", assistant_id).also("revision = ?", revision))
        return found[0] if found else None

    def all(self, assistant_id: str) -> list[VersionRecord]:
        """Every version of the assistant, newest first."""
        with self._db.transaction() as tx:
            return self._select(tx, Where().also("assistant_id = ?", assistant_id), " ORDER BY version DESC")

    def set_latest(self, assistant_id: str, version: int) -> VersionRecord | None:
        """Make `version` the one new runs take; None (nothing changed) when the assistant has no such version."""
        with self._db.transaction() as tx:
            found = self._select(tx, Where().also("assistant_id = ?", assistant_id).also("version = ?", version))
            if not found:
                return None
            self._choose(tx, assistant_id, version, replace=True)
        return found[0]
