"""Damaged or misplaced records are found and named: every record carries a checksum of its bytes and of its key.

Every value the savers AgentMap makes write (a checkpoint, a channel's value, a node's pending write) goes
through the serializer, which stores it as `(kind + "+b2k", digest + key + bytes)`: the key says where the
record was written (its thread, namespace, checkpoint and parent; a write's task, index and channel; a channel
value's channel and version), and a 16-byte BLAKE2b digest covers the key and the bytes. The saver says which
key each record gets (`binding`, around LangGraph's `put` and `put_writes`); on reading, the digest is checked
by the serializer, and the key against the row the record was read from (`check_tuple` for SQLite, whose
reads collect the keys they open, `check_row` for a PostgreSQL row). A record copied, swapped or renamed to
another key is `CorruptCheckpointError` (`corrupt-checkpoint`), like one whose bytes changed.

A PostgreSQL checkpoint row is JSON, not a record of the serializer: its metadata carries the seal of the row
(`agentmap_seal`: a digest of its key and document, and the channels whose values it keeps as records).

Records written before keys (`+b2`: a digest of the bytes alone) and before checksums (a bare kind) are read as
they are. `runtime/_heads.py` finds the rows that are missing; `runtime/_verified.py` names the damage.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError, CorruptCheckpointError

if TYPE_CHECKING:
    from langgraph.checkpoint.base import CheckpointTuple

__all__ = [
    "SEAL",
    "CorruptCheckpointError",
    "binding",
    "check_row",
    "check_tuple",
    "checkpoint_keys",
    "opening",
    "row_seal",
    "sealed",
    "unsealed",
    "write_keys",
]

_TAG = "+b2"  # a digest of the bytes (records written before keys)
_KEYED = "+b2k"  # a digest of the key and the bytes
_DIGEST = 16
SEAL = "agentmap_seal"  # the metadata key of a PostgreSQL checkpoint row's seal

_BINDING: ContextVar[list[tuple[Any, bytes]] | None] = ContextVar("agentmap_record_keys", default=None)
_OPENED: ContextVar[list[bytes | None] | None] = ContextVar("agentmap_opened_keys", default=None)


def _digest(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=_DIGEST).digest()


def _key(*parts: Any) -> bytes:
    return json.dumps(parts, separators=(",", ":")).encode("ascii")


def sealed(kind: str, raw: bytes, obj: Any = None) -> tuple[str, bytes]:
    """A serialized value with its checksum in front: of its key and bytes when the saver bound `obj` to a key
    (`binding`), else of its bytes alone."""
    key = _bound(obj)
    if key is None:
        return kind + _TAG, _digest(raw) + raw
    body = len(key).to_bytes(2, "big") + key + raw
    return kind + _KEYED, _digest(body) + body


def _bound(obj: Any) -> bytes | None:
    pairs = _BINDING.get()
    for i, (value, key) in enumerate(pairs or ()):
        if value is obj:
            del pairs[i]  # type: ignore[union-attr]
            return key if len(key) < 1 << 16 else None
    return None


def unsealed(data: tuple[str, bytes], load: Callable[[tuple[str, bytes]], Any]) -> Any:
    """`load` of the value inside `data`, its checksum checked first (a record without one is loaded as is); the
    key it was written with is handed to the read collecting them (`opening`).

    Raises:
        CorruptCheckpointError: The bytes differ from those written, or they do not decode.
    """
    kind, raw = data
    if not isinstance(kind, str) or not isinstance(raw, bytes | bytearray | memoryview):
        raise CorruptCheckpointError(
            f"a saved record is not what a saver writes (its type is {type(kind).__name__} {str(kind)[:40]!r}, "
            f"its value {type(raw).__name__})"
        )
    key: bytes | None = None
    if kind.endswith((_TAG, _KEYED)):
        raw = bytes(raw)
        digest, raw = raw[:_DIGEST], raw[_DIGEST:]
        if _digest(raw) != digest:
            raise CorruptCheckpointError("a saved record's bytes do not match the checksum they were written with")
        if kind.endswith(_KEYED):
            size = int.from_bytes(raw[:2], "big")
            key, raw = raw[2 : 2 + size], raw[2 + size :]
        kind = kind.rsplit("+", 1)[0]
    opened = _OPENED.get()
    if opened is not None:
        opened.append(key)
    try:
        return load((kind, raw))
    except ConfigError:
        raise
    except Exception as exc:  # whatever a damaged record makes the decoder raise
        raise CorruptCheckpointError(f"a saved record does not decode ({type(exc).__name__}: {exc})") from None


def _key_in(kind: str, raw: bytes) -> bytes | None:
    """The key a record was written with, read from its bytes without decoding it (None: written without)."""
    if not kind.endswith(_KEYED) or len(raw) < _DIGEST + 2:
        return None
    size = int.from_bytes(raw[_DIGEST : _DIGEST + 2], "big")
    return bytes(raw[_DIGEST + 2 : _DIGEST + 2 + size])


# -- writing: the key of each record ------------------------------------------------------------


@contextmanager
def binding(pairs: list[tuple[Any, bytes]]) -> Iterator[None]:
    """While the block runs, the serializer seals each object of `pairs` (found by identity, in order) with its
    key: the saver's `put` and `put_writes` wrap LangGraph's around it."""
    token = _BINDING.set(pairs)
    try:
        yield
    finally:
        _BINDING.reset(token)


def _inline(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _delta(value: Any) -> bool:
    return type(value).__name__ == "_DeltaSnapshot"  # LangGraph keeps a delta channel's snapshot as a record


def checkpoint_keys(
    config: Mapping[str, Any], checkpoint: Mapping[str, Any], versions: Mapping[str, Any], *, postgres: bool
) -> tuple[list[tuple[Any, bytes]], list[Any] | None]:
    """The keys of the records `put(config, checkpoint, ..., versions)` writes, and (PostgreSQL) the row's seal.

    SQLite keeps a checkpoint as one record; PostgreSQL keeps the checkpoint as JSON, its channel values that
    are not plain (str, number, bool, None) as records keyed by channel and version.
    """
    c = config["configurable"]
    thread, ns, parent = str(c["thread_id"]), str(c.get("checkpoint_ns", "")), c.get("checkpoint_id")
    if not postgres:
        return [(checkpoint, _key("checkpoint", thread, ns, checkpoint["id"], parent))], None
    values = checkpoint["channel_values"]
    records = sorted(k for k, v in values.items() if _delta(v) or not _inline(v))
    pairs = [(values[k], _key("blob", thread, ns, k, versions[k])) for k in records if k in versions]
    kept = {k: True if _delta(v) else v for k, v in values.items() if _delta(v) or _inline(v)}
    document = {**checkpoint, "channel_values": kept}
    return pairs, row_seal(thread, ns, checkpoint["id"], parent, document, records)


def write_keys(config: Mapping[str, Any], writes: Any, task_id: str) -> list[tuple[Any, bytes]]:
    """The keys of the records `put_writes(config, writes, task_id)` writes (LangGraph's index for each)."""
    from langgraph.checkpoint.base import WRITES_IDX_MAP

    c = config["configurable"]
    thread, ns, checkpoint_id = str(c["thread_id"]), str(c.get("checkpoint_ns", "")), str(c["checkpoint_id"])
    return [
        (value, _key("write", thread, ns, checkpoint_id, task_id, WRITES_IDX_MAP.get(channel, i), channel))
        for i, (channel, value) in enumerate(writes)
    ]


def _canonical(value: Any) -> Any:
    """`value` as JSON in one spelling: PostgreSQL's JSON gives 1e16 back as an integer, and keys in its order."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:
            return str(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return str(value)


def row_seal(thread: str, ns: str, checkpoint_id: str, parent: Any, document: Any, records: list[Any]) -> list[Any]:
    """The seal of a PostgreSQL checkpoint row: a digest of its key, its JSON document and the channels whose
    values it keeps as records, and those channels."""
    text = json.dumps([thread, ns, checkpoint_id, parent, _canonical(document), records], sort_keys=True)
    return [hashlib.blake2b(text.encode("ascii"), digest_size=_DIGEST).hexdigest(), records]


# -- reading: each record where it was written --------------------------------------------------


@contextmanager
def opening() -> Iterator[list[bytes | None]]:
    """The keys of the records the serializer opens while the block runs, in order (None: a record without)."""
    opened: list[bytes | None] = []
    token = _OPENED.set(opened)
    try:
        yield opened
    finally:
        _OPENED.reset(token)


def _misplaced(what: str, found: bytes) -> CorruptCheckpointError:
    """`what` (the place a record was read from) holds the record written for the key `found`."""
    try:
        parts = json.loads(found)
    except ValueError:
        parts = [found.decode("ascii", "replace")]
    named = {
        "checkpoint": "checkpoint {3} of thread {1!r}",
        "write": "a write (channel {6!r}) to checkpoint {3} of thread {1!r}",
        "blob": "channel {3!r} (version {4}) of thread {1!r}",
    }
    try:
        origin = named[parts[0]].format(*parts)
    except (KeyError, IndexError, TypeError):
        origin = "another place"
    return CorruptCheckpointError(f"{what} holds the record written for {origin}: rows were moved, swapped or renamed")


def check_tuple(item: CheckpointTuple | None, opened: list[bytes | None]) -> None:
    """Check that the records a SQLite read opened (the checkpoint, then its pending writes, in LangGraph's
    order) were written where they were read from.

    Raises:
        CorruptCheckpointError: A record was written for another key.
    """
    if item is None or len(opened) != 1 + len(item.pending_writes or ()):
        return  # another read (LangGraph's delta channels) opened these: their digests were checked
    c = item.config["configurable"]
    thread, ns, checkpoint_id = str(c["thread_id"]), str(c.get("checkpoint_ns", "")), str(c["checkpoint_id"])
    parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    expected = ["checkpoint", thread, ns, checkpoint_id, parent]
    if opened[0] is not None and opened[0] != _key(*expected):
        raise _misplaced("its row", opened[0])
    last: dict[str, int] = {}
    for (task_id, channel, _), found in zip(item.pending_writes or (), opened[1:], strict=True):
        if found is None:
            continue
        parts = json.loads(found)
        expected = ["write", thread, ns, checkpoint_id, task_id, None, channel]
        index = parts[5] if len(parts) == 7 and isinstance(parts[5], int) else None
        if index is None or [*parts[:5], None, parts[6]] != expected or index <= last.get(task_id, -(1 << 31)):
            raise _misplaced(f"its pending write (channel {channel!r}) of task {task_id}", found)
        last[task_id] = index  # LangGraph reads a task's writes by index: the order they were written in


def check_row(value: dict[str, Any]) -> None:
    """Check a PostgreSQL checkpoint row (`SELECT_SQL`'s, before LangGraph loads it): its seal, and that each
    channel value and pending write it joins was written for it; the seal is taken out of its metadata.

    Raises:
        CorruptCheckpointError: The row or a record it joins is not what was written there, or a channel value
            it kept is missing.
    """
    thread, ns, checkpoint_id = str(value["thread_id"]), str(value["checkpoint_ns"]), str(value["checkpoint_id"])
    parent, document = value["parent_checkpoint_id"], value["checkpoint"]
    metadata = dict(value["metadata"] or {})
    seal = metadata.pop(SEAL, None)
    value["metadata"] = metadata
    if seal is not None:
        records = seal[1] if isinstance(seal, list) and len(seal) == 2 and isinstance(seal[1], list) else []
        if seal != row_seal(thread, ns, checkpoint_id, parent, document, records):
            raise CorruptCheckpointError(
                f"checkpoint {checkpoint_id}'s row is not the one written there (its key, parent or state was "
                "changed, or it was moved, swapped or renamed)"
            )
    versions = document.get("channel_versions") or {}
    found = set()
    for channel, kind, raw in value["channel_values"] or ():
        name, kind_text = bytes(channel).decode(), bytes(kind).decode()
        found.add(name)
        key = _key_in(kind_text, bytes(raw or b""))
        expected = ["blob", thread, ns, name, versions.get(name)]
        if key is not None and key != _key(*expected):
            raise _misplaced(f"its value of channel {name!r}", key)
    missing = [c for c in (seal[1] if seal is not None else ()) if c not in found]
    if missing:
        raise CorruptCheckpointError(
            f"checkpoint {checkpoint_id} lost the saved value of channel {', '.join(map(repr, missing))}"
        )
    writes = value["pending_writes"] or ()
    for write in writes:
        task, channel, kind, raw = write[:4]
        key = _key_in(bytes(kind).decode(), bytes(raw))
        task_id, channel_name = bytes(task).decode(), bytes(channel).decode()
        # langgraph-checkpoint-postgres 3.0 reads a write without its index: any index it may have had
        # (LangGraph's special writes are numbered -1 to -4), so a write moved to another place is still refused
        indices = [int(bytes(write[5]).decode())] if len(write) > 5 else range(-4, len(writes))
        where = ["write", thread, ns, checkpoint_id, task_id]
        if key is not None and all(key != _key(*where, index, channel_name) for index in indices):
            raise _misplaced(f"its pending write (channel {channel_name!r}) of task {task_id}", key)
