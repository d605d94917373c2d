"""The files a workflow's definition is read from: noted while a compile reads them, or served from a stored revision.

A workflow is more than its file: the prompt files its `file:` cells name, the prompt registry, the configuration
file, the workflow files its `graph` nodes call, and the Python files it imports (custom agents, `func:` routers,
tool files). Every read of those goes through this module, so that

- `recording()` collects what one compile read (the bytes of each definition file, the digest of each Python file):
  a thread records them as its revision (`runtime/revisions.py`);
- `stored(files)` makes the reads of those paths return the bytes a revision stored instead of what the disk holds
  now: a thread resumed on its revision compiles from them, at its file's own path, so that `functions/` and
  `custom_agents/` still resolve beside it (Python code is never stored: it is run from where it is).

```python
with recording() as read:
    app = compile("review.csv")          # read.files: {path: bytes}, read.code: {path: sha256}
with stored(read.files):
    again = compile("review.csv")        # the same bytes, whatever review.csv holds now
```

Both are context variables: each compile (and each thread, each asyncio task) sees its own.
"""

from __future__ import annotations

import contextvars
import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Reading", "exists", "is_stored", "note_code", "read_bytes", "recording", "sha256", "stored"]


def sha256(data: bytes) -> str:
    """The SHA-256 of `data`, hex (how a revision names a file's content)."""
    return hashlib.sha256(data).hexdigest()


@dataclass
class Reading:
    """What one compile read: `files` the definition files' bytes, `code` the Python files' SHA-256 (None: gone)."""

    files: dict[Path, bytes] = field(default_factory=dict)
    code: dict[Path, str | None] = field(default_factory=dict)


_RECORDING: contextvars.ContextVar[tuple[Reading, ...]] = contextvars.ContextVar("agentmap_recording", default=())
_STORED: contextvars.ContextVar[Mapping[Path, bytes] | None] = contextvars.ContextVar("agentmap_stored", default=None)


@contextmanager
def recording() -> Iterator[Reading]:
    """While inside, every definition file read and every Python file imported is noted in the `Reading` given
    (and in those of the recordings around it: a subgraph's files are its parent's too)."""
    reading = Reading()
    token = _RECORDING.set((*_RECORDING.get(), reading))
    try:
        yield reading
    finally:
        _RECORDING.reset(token)


@contextmanager
def stored(files: Mapping[Path, bytes]) -> Iterator[None]:
    """While inside, reading one of `files` (absolute paths) returns its bytes there, not the disk's."""
    token = _STORED.set({path.resolve(): data for path, data in files.items()})
    try:
        yield
    finally:
        _STORED.reset(token)


def _held(path: Path) -> bytes | None:
    held = _STORED.get()
    return None if held is None else held.get(path.resolve())


def is_stored(path: Path) -> bool:
    """Whether `path` is read from a stored revision (it may be gone from the disk)."""
    return _held(path) is not None


def exists(path: Path) -> bool:
    """Whether the definition file `path` can be read: held by a stored revision, or a file on disk."""
    return _held(path) is not None or path.is_file()


def read_bytes(path: Path) -> bytes:
    """The bytes of the definition file `path` (a stored revision's, else the disk's), noted when recording.

    Raises:
        OSError: The file cannot be read.
    """
    data = _held(path)
    if data is None:
        data = path.read_bytes()
    readings = _RECORDING.get()
    if readings:
        resolved = path.resolve()
        for reading in readings:
            reading.files[resolved] = data
    return data


def note_code(path: Path) -> None:
    """Note the Python file `path` a compile imports (its SHA-256, None when it cannot be read), when recording."""
    readings = _RECORDING.get()
    if not readings:
        return
    resolved = path.resolve()
    if all(resolved in reading.code for reading in readings):
        return
    try:
        digest: str | None = sha256(resolved.read_bytes())
    except OSError:
        digest = None
    for reading in readings:
        reading.code.setdefault(resolved, digest)
