"""Paths a workflow file names, confined to the folders its runner allows; and where AgentMap keeps its own files.

Every path a CSV cell names (a `file:` prompt, a subgraph file, a tool file, a storage file) goes through
`confine`: it resolves against the workflow's folder, and must then lie under that folder or one of the
extra allowed roots (configured by the person who runs the workflow, never by the file itself).

AgentMap's own files (saved runs, the decision log, the node and LLM caches, the server's and the studio's
databases) are `state_file(name)`: in `$AGENTMAP_STATE_DIR`, else in `.agentmap/` of the working folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ROOTS_VARIABLE",
    "STATE_VARIABLE",
    "CodeFolder",
    "LinkedRootError",
    "OutsideRootsError",
    "allowed_roots",
    "confine",
    "declared_folder",
    "is_under",
    "state_file",
    "widen_hint",
]

ROOTS_VARIABLE = "AGENTMAP_ALLOWED_ROOTS"
"""The environment variable of extra allowed roots, separated by `os.pathsep` (`:` on Linux and macOS)."""

STATE_VARIABLE = "AGENTMAP_STATE_DIR"
"""The environment variable naming the folder AgentMap keeps its own files in (default `.agentmap`)."""


def state_file(name: str, base: str | Path | None = None) -> Path:
    """The file `name` of AgentMap's own (`runs.db`, `decisions.db`, ...): in `$AGENTMAP_STATE_DIR` when it is set,
    else in `.agentmap/` under `base` (the working folder when None, the path then relative to it). The folder
    is not made here."""
    configured = os.environ.get(STATE_VARIABLE)
    if configured:
        return Path(configured).expanduser() / name
    return Path(base) / ".agentmap" / name if base is not None else Path(".agentmap") / name


class OutsideRootsError(ValueError):
    """A path resolves outside every allowed root. `path` is the resolved path, `roots` the allowed folders."""

    def __init__(self, text: str, path: Path, roots: Sequence[Path]) -> None:
        self.text = text
        self.path = path
        self.roots = list(roots)
        folders = ", ".join(str(r) for r in self.roots)
        super().__init__(f"{text!r} resolves to {path}, outside the allowed folders ({folders})")


class LinkedRootError(OutsideRootsError):
    """An allowed folder is a symbolic link (or lies under one) to a place outside the folder it is declared in."""

    def __init__(self, text: str, declared: Path, path: Path, roots: Sequence[Path]) -> None:
        super().__init__(text, path, roots)
        self.declared = declared
        self.args = (
            f"the folder {text!r} ({declared}) is a symbolic link to {path}, outside the folder it is declared in "
            f"({roots[0]}), so nothing is read or written through it: allow its target with `--allow-root {path}` "
            f"(or paths.allowed_roots, {ROOTS_VARIABLE}), or make it a real folder",
        )

    def __str__(self) -> str:
        return str(self.args[0])


def declared_folder(text: str | Path, anchor: Path, allowed: Sequence[str | Path] = ()) -> Path:
    """The folder `text` names (relative to `anchor`, the folder it is declared in), resolved.

    A symbolic link on the way may lead elsewhere inside `anchor`, but not out of it (a repository shipping
    `data -> /elsewhere` must not widen what its workflow reaches), unless the target lies under one of the
    `allowed` roots the person running it named (`--allow-root`). An absolute `text` is taken as it is.

    Raises:
        LinkedRootError: A link takes the folder out of `anchor`.
    """
    home = anchor.resolve()
    spelled = Path(text).expanduser()
    declared = Path(os.path.normpath(home / spelled))
    resolved = declared.resolve()
    if spelled.is_absolute() or resolved == declared or resolved.is_relative_to(home):
        return resolved
    if is_under(resolved, [(home / Path(r).expanduser()).resolve() for r in allowed]):
        return resolved
    raise LinkedRootError(str(text), declared, resolved, [home])


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


@dataclass(frozen=True)
class CodeFolder:
    """A folder of Python files a workflow may have imported (its `custom_agents/`, its `functions/`), and where
    those files may lead.

    The folder beside the workflow may be a symbolic link elsewhere inside the workflow's folder, but not out of it
    (a repository shipping `custom_agents -> /elsewhere` must not run that code), and each file in it may lead only
    into the workflow's folder, the folder itself, or an allowed root (`custom_agents/x.py -> /elsewhere/x.py` is
    not imported either), unless the person running it allows the target (`--allow-root`). A folder the person
    running it named (`agents_dir=`, `paths.custom_agents`) is taken as it is; its files are held to it likewise.
    """

    folder: Path
    refused: str | None
    """Why nothing in the folder may be imported (it is a link out of the workflow's folder), or None."""
    area: tuple[Path, ...]
    """The resolved folders the folder's files may lead into."""

    @classmethod
    def of(cls, folder: Path, base: Path, roots: Sequence[str | Path], *, named: bool) -> CodeFolder:
        """The code folder `folder` of a workflow in `base`; `named` when the person running it named the folder.

        Relative `roots` resolve against `base`.
        """
        home = base.resolve()
        allowed = [(home / Path(r).expanduser()).resolve() for r in roots]
        refused = None
        if named:
            resolved = folder.expanduser().resolve()
        else:
            try:
                resolved = declared_folder(os.path.relpath(folder, base), home, roots)
            except LinkedRootError as err:
                resolved, refused = err.path, str(err)
        return cls(folder, refused, tuple(dict.fromkeys([home, resolved, *allowed])))

    def refusal(self, file: Path) -> str | None:
        """Why the file `file` of the folder may not be imported, or None when it may."""
        if self.refused is not None:
            return self.refused
        resolved = file.resolve()
        if is_under(resolved, self.area):
            return None
        return (
            f"{file} is a symbolic link to {resolved}, outside the folders code may be imported from "
            f"({', '.join(map(str, self.area))}), so it is not imported: allow its folder with "
            f"`--allow-root {resolved.parent}` (or paths.allowed_roots, {ROOTS_VARIABLE}), or put the file itself there"
        )


def allowed_roots(settings: Mapping[str, Any] | None = None) -> list[Path]:
    """The extra allowed roots the person running a workflow configured.

    They come from `settings["paths"]["allowed_roots"]` (`paths.allowed_roots` in agentmap.yaml, or
    `--allow-root`) and from the `AGENTMAP_ALLOWED_ROOTS` variable (relative entries of the variable resolve
    against the working directory; relative settings against the workflow's folder). The workflow's own
    folder is always allowed and is not listed here.
    """
    paths = (settings or {}).get("paths")
    configured: Any = paths.get("allowed_roots") if isinstance(paths, Mapping) else None
    if isinstance(configured, str | Path):
        configured = str(configured).split(os.pathsep)
    roots = [Path(str(r)).expanduser() for r in configured or () if str(r).strip()]
    variable = os.environ.get(ROOTS_VARIABLE, "")
    roots += [Path(r.strip()).expanduser().resolve() for r in variable.split(os.pathsep) if r.strip()]
    return list(dict.fromkeys(roots))


def widen_hint(what: str) -> str:
    """How to allow a refused path: the fix shown with an `OutsideRootsError` about `what`."""
    return (
        f"move {what} under the workflow's folder, or allow its folder: `--allow-root DIR`, "
        f"`paths: {{allowed_roots: [DIR]}}` in agentmap.yaml, or {ROOTS_VARIABLE}=DIR (see csv_specs/security.md)"
    )
