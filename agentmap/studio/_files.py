"""The files a studio may open and save: the one it was started on, or the workflow files of its folder.

A workbook is opened a sheet at a time: its sheets are listed as `flows.xlsx[Sheet]`.

A save is never blind, also when another studio (another process) saves the same file: under the file's lock
(`storage.file_lock`: `flock` on `.<name>.lock` beside it) it reads the file's version (a hash of its bytes),
compares it with the version the sheet was edited from, writes a temporary file, flushes it and renames it over
the file. A save killed before its rename leaves its temporary file (`.<name>.studio-<random>.tmp`); the next
studio started on the folder removes it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from agentmap.errors import ErrorCode, WorkflowFileError
from agentmap.storage._files import file_lock, temporaries, write_atomic
from agentmap.studio._document import Document, version_of
from agentmap.studio._workbook import Editable, SheetDocument, sheet_names, split_sheet

__all__ = ["FileChangedError", "Files"]

Rows = Sequence[tuple[int | None, Sequence[str]]]

_EDITABLE = (".csv", ".tsv", ".xlsx")
_TAG = "studio-"
"""What names a studio's temporary files (`.flows.csv.studio-k2j4x9ab.tmp`), so only those are ever removed."""


class FileChangedError(WorkflowFileError):
    """The file on disk is not the version the sheet was edited from (someone else saved it meanwhile)."""

    default_code = ErrorCode.FILE_CHANGED


class Files:
    """The workflow files under one target, each opened as a `Document`, saved atomically and never blindly.

    Args:
        target: A workflow file, or a folder whose workflow files (and its subfolders') may be opened.
    """

    def __init__(self, target: Path) -> None:
        self.target = target.resolve()
        self.root = self.target if self.target.is_dir() else self.target.parent
        self._open: dict[str, Editable] = {}
        self._lock = threading.Lock()
        if not self.target.exists():
            raise WorkflowFileError(f"{target} does not exist", hint="name a workflow file or a folder of them")
        if self.target.is_file() and self.target.suffix.lower() not in _EDITABLE:
            raise WorkflowFileError(
                f"the studio edits .csv, .tsv and .xlsx files, not {self.target.name}",
                code=ErrorCode.UNSUPPORTED_FORMAT,
                hint="save the sheet as CSV (UTF-8) or .xlsx to edit it here",
            )

    def names(self) -> list[str]:
        """The files that may be opened, relative to the root, in order."""
        if self.target.is_file():
            return self._named(self.target.name)
        kept = sorted(str(p.relative_to(self.root)) for p in self._files())
        return [name for file in kept for name in self._named(file)]

    def _files(self) -> list[Path]:
        """The workflow files under the target (the target itself when it is a file)."""
        if self.target.is_file():
            return [self.target]
        found = [p for p in self.root.rglob("*") if p.suffix.lower() in _EDITABLE and p.is_file()]
        return [p for p in found if not any(part.startswith(".") for part in p.relative_to(self.root).parts)]

    def remove_stale_temporaries(self) -> list[Path]:
        """Remove the temporary files of saves killed before their rename (a studio's own, beside each workflow
        file); a temporary file of a save under way in another studio (whose lock is held) is left. The removed."""
        removed = []
        for path in self._files():
            for temporary in temporaries(path, _TAG):
                with file_lock(path, wait=False) as held:
                    if held:  # no save of this file is under way: its temporary file is stale
                        temporary.unlink(missing_ok=True)
                        removed.append(temporary)
        return removed

    def _named(self, file: str) -> list[str]:
        """`file`, or each sheet of it as `file[Sheet]` when it is a workbook (none when it cannot be read)."""
        if not file.lower().endswith(".xlsx"):
            return [file]
        try:
            return [f"{file}[{sheet}]" for sheet in sheet_names(self.root / file)]
        except WorkflowFileError:
            return []

    def sheets(self, name: str) -> list[str]:
        """The names of every sheet of the workbook `name` is a sheet of (none for a CSV file)."""
        file, sheet = split_sheet(name)
        return self._named(file) if sheet is not None else []

    def path(self, name: str) -> Path:
        """The path of the file `name` (one of `names()`).

        Raises:
            WorkflowFileError: `name` is not a file this studio may open.
        """
        file, sheet = split_sheet(name)
        path = (self.root / file).resolve()
        inside = path == self.target if self.target.is_file() else path.is_relative_to(self.root)
        visible = not any(part.startswith(".") for part in Path(file).parts)
        workbook = path.suffix.lower() == ".xlsx"
        if not (inside and visible and path.suffix.lower() in _EDITABLE and path.is_file() and workbook == bool(sheet)):
            raise WorkflowFileError(
                f"{name!r} is not a workflow file this studio opened",
                code=ErrorCode.FILE_NOT_FOUND,
                hint="open one of: " + ", ".join(self.names()),
            )
        return path

    def open(self, name: str) -> Editable:
        """Read `name` from disk (again), keeping it as the version edits are based on."""
        path, sheet = self.path(name), split_sheet(name)[1]
        document = Document.read(path) if sheet is None else SheetDocument.read(path, sheet)
        with self._lock:
            self._open[name] = document
        return document

    def document(self, name: str) -> Editable:
        """The document last opened for `name` (read now if never opened)."""
        with self._lock:
            found = self._open.get(name)
        return found if found is not None else self.open(name)

    def version(self, name: str) -> str:
        """The version of the file on disk now."""
        return version_of(self.path(name).read_bytes())

    def save(self, name: str, rows: Rows, base: str, *, force: bool = False) -> Editable:
        """Write `rows` over `name` atomically, unless the file changed on disk since version `base`.

        Raises:
            FileChangedError: The file on disk is not version `base` (and `force` is not set).
        """
        path = self.path(name)
        document = self.document(name)
        with file_lock(path):  # another studio's save of this file waits, then finds the version changed
            now = version_of(path.read_bytes())
            if now != base and not force:
                raise FileChangedError(
                    f"{name} changed on disk since it was opened; saving would overwrite those changes",
                    hint="reload it to see the other changes, or save again to overwrite them",
                )
            mode = path.stat().st_mode & 0o7777
            write_atomic(path, document.data(rows), tag=_TAG)
            os.chmod(path, mode)  # the temporary file was private (0600); the file keeps who may read it
        return self.open(name)
