"""Errors raised by AgentMap.

Every error derives from `AgentMapError` and carries a stable `code`, a message that tells the user
what to change, and, where one exists, the `Location` (file, row, column) of the mistake. Each class
also derives from the matching builtin (`FileNotFoundError`, `ValueError`, `LookupError`, ...) so
callers can catch either.

The command line maps classes to exit codes: see `AgentMapError.exit_code`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "FILE_ERROR_CODES",
    "AgentMapError",
    "AgentNotFoundError",
    "ConfigError",
    "GraphNotFoundError",
    "Location",
    "NodeError",
    "ValidationError",
    "WorkflowFileError",
]


@dataclass(frozen=True, slots=True)
class Location:
    """Where a mistake is: the file, the 1-based row (the line in the file) and the column header."""

    file: str | None = None
    row: int | None = None
    column: str | None = None

    def __str__(self) -> str:
        parts = [self.file or "<input>"]
        if self.row is not None:
            parts.append(str(self.row))
            if self.column:
                parts.append(self.column)
        return ":".join(parts)


class AgentMapError(Exception):
    """Root of every error AgentMap raises on purpose.

    Attributes:
        code: A stable, machine-readable identifier (`"unknown-agent-type"`); never reworded.
        message: What went wrong and what to change, in words a workflow author can act on.
        location: The file, row and column of the mistake, when there is one.
        hint: An optional extra line ("did you mean ...?").
    """

    default_code: ClassVar[str] = "agentmap-error"
    exit_code: ClassVar[int] = 5

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        location: Location | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.code = code or self.default_code
        self.location = location
        self.hint = hint
        super().__init__(self.__str__())

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        return f"{text}\n  {self.hint}" if self.hint else text


class WorkflowFileError(AgentMapError, FileNotFoundError):
    """A workflow file is missing, is a directory, or cannot be read as a workflow."""

    default_code = "file-not-found"
    exit_code = 3


class GraphNotFoundError(AgentMapError, LookupError):
    """A `file.csv::Graph` selector names no graph in the file (or a file holds several and none was named)."""

    default_code = "graph-not-found"
    exit_code = 3


class AgentNotFoundError(AgentMapError, LookupError):
    """An agent type, router function or custom agent class cannot be found."""

    default_code = "unknown-agent-type"
    exit_code = 4


class ConfigError(AgentMapError, ValueError):
    """Configuration (a file, an environment variable or an argument) is invalid."""

    default_code = "bad-config"
    exit_code = 2


class NodeError(AgentMapError, RuntimeError):
    """A node could not run at all (as opposed to an agent failing, which routes to Failure_Next)."""

    default_code = "node-error"
    exit_code = 5


class ValidationError(AgentMapError, ValueError):
    """A workflow has validation errors; `issues` holds every finding (errors and warnings).

    The message lists the errors one per line, each prefixed with its file:row:column.
    """

    default_code = "validation-failed"
    exit_code = 4

    def __init__(self, issues: Sequence[object], *, source: str | None = None) -> None:
        self.issues: list[Any] = list(issues)
        errors = [i for i in self.issues if getattr(i, "severity", "error") == "error"]
        where = f" in {source}" if source else ""
        lines = [f"{len(errors)} validation error{'s' if len(errors) != 1 else ''}{where}:"]
        lines += [f"  {i}" for i in errors]
        super().__init__("\n".join(lines))


FILE_ERROR_CODES: Mapping[str, type[AgentMapError]] = MappingProxyType(
    {
        **dict.fromkeys(
            ("file-not-found", "not-a-file", "unsupported-format", "empty-file", "not-text", "unreadable"),
            WorkflowFileError,
        ),
        "missing-extra": WorkflowFileError,
        "graph-not-found": GraphNotFoundError,
        "graph-not-selected": GraphNotFoundError,
    }
)
"""Every code a `WorkflowFileError` or `GraphNotFoundError` carries, with its class.

`agentmap.validate` reports these errors about the file as a whole as issues without a row; the
command line maps such an issue back to its class (and so its exit code) through this table.
"""
