"""Paths a workflow file names, confined to the folders its runner allows.

Every path a CSV cell names (a `file:` prompt, a subgraph file, a tool file, a storage file) goes through
`confine`: it resolves against the workflow's folder, and must then lie under that folder or one of the
extra allowed roots (configured by the person who runs the workflow, never by the file itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["OutsideRootsError", "confine", "is_under"]


class OutsideRootsError(ValueError):
    """A path resolves outside every allowed root. `path` is the resolved path, `roots` the allowed folders."""

    def __init__(self, text: str, path: Path, roots: Sequence[Path]) -> None:
        self.text = text
        self.path = path
        self.roots = list(roots)
        folders = ", ".join(str(r) for r in self.roots)
        super().__init__(f"{text!r} resolves to {path}, outside the allowed folders ({folders})")


def is_under(path: Path, roots: Sequence[Path]) -> bool:
    """True when the resolved `path` lies in (or is) one of the resolved `roots`."""
    return any(path.is_relative_to(root) for root in roots)


def confine(text: str, base: Path, roots: Sequence[str | Path] = ()) -> Path:
    """`text` resolved against `base` (symlinks and `..` followed), when it lies under `base` or a root.

    Args:
        text: The path as the file spells it (relative to `base`, or absolute; `~` is expanded).
        base: The workflow's folder; always allowed.
        roots: Extra allowed folders (relative ones resolve against `base`).

    Raises:
        OutsideRootsError: The path leaves every allowed folder.
    """
    base = base.resolve()
    allowed = list(dict.fromkeys([base, *((base / Path(r).expanduser()).resolve() for r in roots)]))
    path = Path(text.strip()).expanduser()
    resolved = (path if path.is_absolute() else base / path).resolve()
    if not is_under(resolved, allowed):
        raise OutsideRootsError(text, resolved, allowed)
    return resolved
