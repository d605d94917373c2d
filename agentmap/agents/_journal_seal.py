"""Whether a journal entry read back is what was written: each row is sealed with a checksum of its key, status,
request digest and response, and a task's entries are counted (`agentmap_journal_heads`): an entry changed or
deleted is `corrupt-checkpoint`, never a call made again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from agentmap.agents._journal_rows import CallKey, JournalRow, JournalRows
from agentmap.agents._node_calls import NODE
from agentmap.errors import CorruptCheckpointError

__all__ = ["check_task", "intact", "opened", "seal", "unsealed"]

_SEAL = "b3:"  # no JSON text starts so: a response written before checksums is read as it is
_SEAL_V2 = "b2:"  # the checksum of entries written before it covered the key
_STATUSES = ("started", "queued", "finished", "failed")


def _checksum(key: tuple[Any, ...] | None, status: str, request_digest: str, text: str | None) -> str:
    fields = (*(str(k) for k in key or ()), status, request_digest, text or "")
    return hashlib.blake2b("\x00".join(fields).encode("utf-8"), digest_size=16).hexdigest()


def seal(key: CallKey, status: str, request_digest: str, text: str | None) -> str:
    """The response column: a checksum of the entry's key (thread, namespace, step, node, task, call index),
    status, request digest and response, then the response."""
    return f"{_SEAL}{_checksum(key, status, request_digest, text)}:{text or ''}"


def unsealed(text: str | None) -> str | None:
    """The response inside a response column, unchecked (for listing)."""
    if text is None or not text.startswith((_SEAL, _SEAL_V2)):
        return text
    return text[len(_SEAL) + 33 :] or None


def intact(row: JournalRow) -> bool:
    """Whether an entry read back is what was written (an entry written before checksums is taken as it is)."""
    text = row.response
    if row.status not in _STATUSES:
        return False
    if text is None or not text.startswith((_SEAL, _SEAL_V2)):  # written before checksums
        return True
    inner = unsealed(text)
    version = None if text.startswith(_SEAL_V2) else row.key
    return text == f"{text[:3]}{_checksum(version, row.status, row.digest, inner)}:{inner or ''}"


def opened(row: JournalRow) -> str | None:
    """The response of the entry `row` read back, its checksum checked.

    Raises:
        CorruptCheckpointError: The entry is not what was written (its status, request digest or response
            changed on disk): it is never replayed, and the call is never made again on its account.
    """
    if not intact(row):
        raise _damaged(row.key)
    return unsealed(row.response)


def check_task(rows: JournalRows, key: CallKey) -> None:
    """At a node's first call the journal has no entry for (`key`), check its task's entries: one whose key was
    damaged on disk (its thread, step, node, task or call index) is not found by its key, and one deleted is not
    found at all (fewer entries than the task wrote): the call it recorded would be made again without a word.

    Raises:
        CorruptCheckpointError: An entry of the task does not match its checksum, or is missing.
    """
    node = NODE.get()
    if node is None or node.checked:
        return
    node.checked = True
    found = rows.task_rows(key)
    if not all(intact(row) for row in found.rows):
        raise _damaged(key)
    if found.written is not None and len(found.rows) < found.written:
        raise _damaged(key, f"holds {len(found.rows)} of the {found.written} entries it wrote (deleted)")


def _damaged(key: CallKey, what: str = "") -> CorruptCheckpointError:
    thread, _, step, node, _, index = key
    found = (
        f"the call journal of node {node!r} (step {step}) {what}; no call was made again"
        if what
        else f"the call journal's entry for call {index} of node {node!r} (step {step}) is damaged; it was not replayed"
    )
    return CorruptCheckpointError(
        f"thread {thread!r}: {found}",
        hint=f"`agentmap threads show {thread}` lists the thread's checkpoints: continue from the one before that "
        f"step with agentmap resume {thread} --from-checkpoint ID",
    )
