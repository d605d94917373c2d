"""Atomic, serialised file access for the storage agents (and the studio's saves).

Every change of a file happens under that file's lock (parallel branches of one run share a process), and
is written to a temporary file in the same folder that then replaces the old one (`os.replace`), so a
reader never sees half a file and a crash never leaves one.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["file_lock", "read_csv", "read_text", "render_csv", "temporaries", "write_atomic"]

_EXTRA = "\x00extra"
_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


@contextmanager
def file_lock(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the lock of `path`: one per resolved path in this process, and an OS lock on `.<name>.lock` beside it.

    The OS lock (`flock`, where the platform has it) keeps separate processes writing one file (runs of a
    batch, two studios) in turn too; the lock file stays, empty, since removing it would race with the next
    writer. On Windows the lock holds within one process only. A process that dies holding it (killed) lets
    it go with its open files.

    Args:
        path: The file guarded.
        wait: False: do not wait for a lock someone holds; the block then runs without it, told False.

    Yields:
        Whether the lock is held (always True when `wait`).
    """
    with _locks_guard:
        lock = _locks.setdefault(path, threading.Lock())
    if not lock.acquire(blocking=wait):
        yield False
        return
    try:
        try:
            import fcntl
        except ImportError:  # Windows: within one process only
            yield True
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.parent / f".{path.name}.lock", "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        lock.release()


def write_atomic(path: Path, text: str | bytes, encoding: str = "utf-8", *, tag: str = "") -> None:
    """Replace `path` with `text` (or bytes): a temporary file in the same folder, flushed, then renamed over it.

    The temporary file is `.<name>.<tag><random>.tmp`: a writer that may be killed before its rename names it
    with a `tag` of its own (`temporaries` finds those files again).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.{tag}", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text if isinstance(text, bytes) else text.encode(encoding))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def temporaries(path: Path, tag: str) -> list[Path]:
    """The temporary files `write_atomic(path, ..., tag=tag)` left beside `path` (a writer killed before its rename).

    Only names of that exact form count (`.<name>.<tag>` and the random letters `tempfile` adds), never another
    file of the folder.
    """
    form = re.compile(re.escape(f".{path.name}.{tag}") + r"[a-z0-9_]+\.tmp")
    return sorted(entry for entry in path.parent.iterdir() if form.fullmatch(entry.name))


def read_text(path: Path, encoding: str, newline: str | None = None) -> str:
    """The text of `path` (`newline=""` keeps line endings as they are, as CSV needs).

    Raises:
        FileNotFoundError: No such file.
        ValueError: The file is not text in `encoding`.
    """
    try:
        with path.open(encoding=encoding, newline=newline) as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not {encoding} text ({exc.reason} at byte {exc.start})") from None


def read_csv(path: Path, encoding: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows (as dicts of text) of a CSV file; a missing file raises FileNotFoundError."""
    text = read_text(path, encoding, newline="")
    reader = csv.DictReader(io.StringIO(text, newline=""), restkey=_EXTRA)
    rows: list[dict[str, str]] = []
    for row in reader:
        if _EXTRA in row:  # never drop cells silently (a rewrite would lose them)
            raise ValueError(
                f"{path}: line {reader.line_num} has more cells than the header ({len(reader.fieldnames or [])}); "
                "add the missing column names to the header, or fix the row"
            )
        rows.append({k: v if v is not None else "" for k, v in row.items()})
    return list(reader.fieldnames or []), rows


def render_csv(header: Sequence[str], rows: Sequence[Mapping[str, Any]], *, with_header: bool = True) -> str:
    """CSV text with `header` (unless `with_header` is false) and `rows` (missing cells and None empty)."""
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(header), extrasaction="raise", lineterminator="\n")
    if with_header:
        writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return out.getvalue()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value
