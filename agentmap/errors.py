"""Errors raised by AgentMap.

Every error derives from `AgentMapError` and carries a stable `code`, a message that tells the user
what to change, and, where one exists, the `Location` (file, row, column) of the mistake. Each class
also derives from the matching builtin (`FileNotFoundError`, `ValueError`, `LookupError`, ...) so
callers can catch either.

The command line maps classes to exit codes: see `AgentMapError.exit_code`. Every code is a member of
`ErrorCode`, and has a section of `csv_specs/errors.md` (`ErrorCode.docs`) saying what it means and what to do.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "ERRORS_PAGE",
    "FILE_ERROR_CODES",
    "AgentMapError",
    "AgentNotFoundError",
    "ConfigError",
    "CorruptCheckpointError",
    "ErrorCode",
    "GraphNotFoundError",
    "Location",
    "NodeError",
    "WorkflowFileError",
    "WorkflowValidationError",
]

ERRORS_PAGE = "csv_specs/errors.md"
"""The page with one section per error code; `ErrorCode.docs` links into it."""


class ErrorCode(StrEnum):
    """Every stable error and finding code AgentMap reports, as the text it prints (`error[bad-config]`).

    A member compares equal to its text, so `err.code == "bad-config"` holds. Each has a section of
    `csv_specs/errors.md`; `ErrorCode.BAD_CONFIG.docs` is its link.
    """

    # any error (the root class's code)
    AGENTMAP_ERROR = "agentmap-error"
    # not AgentMap's own error: a bug in AgentMap or in a custom agent (exit 5)
    INTERNAL = "internal"
    # the workflow file, the state file and other files named on the command line (exit 3)
    FILE_NOT_FOUND = "file-not-found"
    NOT_A_FILE = "not-a-file"
    UNSUPPORTED_FORMAT = "unsupported-format"
    EMPTY_FILE = "empty-file"
    NOT_TEXT = "not-text"
    UNREADABLE = "unreadable"
    MISSING_EXTRA = "missing-extra"
    FILE_TOO_BIG = "file-too-big"
    STATE_FILE_NOT_FOUND = "state-file-not-found"
    NO_LOGS = "no-logs"
    AGENT_NOT_FOUND = "agent-not-found"
    # selecting a graph (exit 3)
    GRAPH_NOT_FOUND = "graph-not-found"
    GRAPH_NOT_SELECTED = "graph-not-selected"
    # validation findings (exit 4): the header row
    VALIDATION_FAILED = "validation-failed"
    MISSING_COLUMN = "missing-column"
    DUPLICATE_COLUMN = "duplicate-column"
    UNKNOWN_COLUMN = "unknown-column"
    CSV_DIALECT = "csv-dialect"
    ENCODING = "encoding"
    SHEET_SKIPPED = "sheet-skipped"
    # validation findings: cells
    MISSING_GRAPH_NAME = "missing-graph-name"
    MISSING_NODE_NAME = "missing-node-name"
    BAD_CONTEXT = "bad-context"
    BAD_FIELD = "bad-field"
    BAD_TARGET = "bad-target"
    BAD_PROMPT_FILE = "bad-prompt-file"
    CONTEXT_PLAIN_TEXT = "context-plain-text"
    CONTEXT_UNQUOTED_KEYS = "context-unquoted-keys"
    LEGACY_SUBGRAPH = "legacy-subgraph"
    LEGACY_SPELLING = "legacy-spelling"
    PATH_OUTSIDE_ROOTS = "path-outside-roots"
    UNKNOWN_PROMPT = "unknown-prompt"
    FORMULA_LIKE_CELL = "formula-like-cell"
    NO_GRAPHS = "no-graphs"
    # validation findings: graphs
    DUPLICATE_NODE = "duplicate-node"
    RESERVED_NAME = "reserved-name"
    UNKNOWN_AGENT_TYPE = "unknown-agent-type"
    EDGE_CONFLICT = "edge-conflict"
    EDGE_OVERRIDES_BRANCHES = "edge-overrides-branches"
    UNKNOWN_TARGET = "unknown-target"
    PARALLEL_WRITE = "parallel-write"
    UNREACHABLE_NODE = "unreachable-node"
    ENDLESS_LOOP = "endless-loop"
    UNSET_INPUT = "unset-input"
    UNKNOWN_FUNCTION = "unknown-function"
    BAD_ROUTER = "bad-router"
    FUNCTION_NOT_ALLOWED = "function-not-allowed"
    CODE_OUTSIDE_ROOTS = "code-outside-roots"
    CONFIG_ASSUMED = "config-assumed"
    UNCLOSED_QUOTE = "unclosed-quote"
    ROWS_IN_QUOTED_CELL = "rows-in-quoted-cell"
    CHECK_SKIPPED = "check-skipped"
    # configuration and usage (exit 2)
    BAD_CONFIG = "bad-config"
    CONFIG_NOT_FOUND = "config-not-found"
    USAGE = "usage"
    NO_WORKFLOW = "no-workflow"
    BAD_STATE = "bad-state"
    MISSING_STATE = "missing-state"
    BAD_CHECKPOINTER = "bad-checkpointer"
    NOTHING_TO_RESUME = "nothing-to-resume"
    CANNOT_WRITE = "cannot-write"
    CANNOT_EJECT = "cannot-eject"
    NOT_A_FOLDER = "not-a-folder"
    BAD_AGENT_CONFIG = "bad-agent-config"
    MISSING_API_KEY = "missing-api-key"
    TOOL_NOT_FOUND = "tool-not-found"
    TOOL_PATH_REFUSED = "tool-path-refused"
    TOOL_MODULE_REFUSED = "tool-module-refused"
    UNKNOWN_TOOL = "unknown-tool"
    MCP_UNAVAILABLE = "mcp-unavailable"
    COMMAND_NOT_ALLOWED = "command-not-allowed"
    BAD_ANSWER = "bad-answer"
    # durable runs: threads and their checkpoints (exit 2)
    UNKNOWN_THREAD = "unknown-thread"
    THREAD_BUSY = "thread-busy"
    THREAD_UNFINISHED = "thread-unfinished"
    WORKFLOW_CHANGED = "workflow-changed"
    NOT_PAUSED = "not-paused"
    AMBIGUOUS_RESUME = "ambiguous-resume"
    ALREADY_ANSWERED = "already-answered"
    UNSAFE_CHECKPOINT = "unsafe-checkpoint"
    CORRUPT_CHECKPOINT = "corrupt-checkpoint"
    # revisions: what a thread runs, moving it to another (exit 2)
    UNKNOWN_REVISION = "unknown-revision"
    REVISION_UNLOADABLE = "revision-unloadable"
    BAD_MIGRATION = "bad-migration"
    NEEDS_MIGRATION = "needs-migration"
    UNSAFE_MOVE = "unsafe-move"
    # serving (exit 2; HTTP 422 for a request)
    API_KEY_REQUIRED = "api-key-required"
    DUPLICATE_GRAPH = "duplicate-graph"
    BAD_INPUT = "bad-input"
    GRAPH_CHANGED = "graph-changed"
    DATABASE_UNAVAILABLE = "database-unavailable"
    # a request a web page could have sent, refused by serve and the studio (HTTP 401, 403, 415)
    HOST_NOT_ALLOWED = "host-not-allowed"
    FORBIDDEN_ORIGIN = "forbidden-origin"
    NOT_JSON = "not-json"
    TOKEN_REQUIRED = "token-required"
    # the users of `agentmap serve --auth` (HTTP 403, 429, 413, 500)
    FORBIDDEN = "forbidden"
    QUOTA_EXCEEDED = "quota-exceeded"
    HEADERS_TOO_LARGE = "headers-too-large"
    AUTH_FAILED = "auth-failed"
    # the studio (HTTP 409, 422)
    FILE_CHANGED = "file-changed"
    FORMULA_CELLS = "formula-cells"
    # batch runs (exit 2, or 3 for a missing input table)
    INPUT_NOT_FOUND = "input-not-found"
    BAD_PARTIAL = "bad-partial"
    OUTPUT_EXISTS = "output-exists"
    NO_BATCH = "no-batch"
    BAD_OUTPUT = "bad-output"
    RAY_UNREACHABLE = "ray-unreachable"
    # while running (exit 5)
    NODE_ERROR = "node-error"
    BAD_ROUTE = "bad-route"
    ROUTER_ERROR = "router-error"
    RECURSION_LIMIT = "recursion-limit"
    AGENT_ERROR = "agent-error"
    NO_REPLY = "no-reply"
    LLM_ERROR = "llm-error"
    LLM_RATE_LIMIT = "llm-rate-limit"
    LLM_TIMEOUT = "llm-timeout"
    LLM_BATCH_FAILED = "llm-batch-failed"
    ORCHESTRATION_FAILED = "orchestration-failed"
    WORKER_DIED = "worker-died"
    ROW_EXITED = "row-exited"
    CHECKPOINT_NOT_SAVED = "checkpoint-not-saved"
    # a spent budget (exit 6)
    BUDGET_EXCEEDED = "budget-exceeded"
    # evaluation files
    BAD_SCENARIOS = "bad-scenarios"
    BAD_EXPRESSION = "bad-expression"
    BAD_CONVERSATION_LOG = "bad-conversation-log"
    BAD_MANIFEST = "bad-manifest"

    @property
    def docs(self) -> str:
        """The link to this code's section of `csv_specs/errors.md`."""
        return f"{ERRORS_PAGE}#{self.value}"

    @classmethod
    def coerce(cls, code: str) -> str:
        """`code` as a member when it is one, else the text unchanged (a code not listed yet)."""
        try:
            return cls(code)
        except ValueError:
            return code


@dataclass(frozen=True, slots=True)
class Location:
    """Where a mistake is: the file, the 1-based row (the line in the file) and the column header.

    In an `.xlsx` workbook also the sheet and the cell (`B7`); it then reads `flows.xlsx[Sheet]!B7`.
    """

    file: str | None = None
    row: int | None = None
    column: str | None = None
    sheet: str | None = None
    cell: str | None = None

    def __str__(self) -> str:
        if self.sheet is not None:
            ref = self.cell or (f"{self.row}:{self.row}" if self.row is not None else "")
            return f"{self.file or '<input>'}[{self.sheet}]" + (f"!{ref}" if ref else "")
        parts = [self.file or "<input>"]
        if self.row is not None:
            parts.append(str(self.row))
            if self.column:
                parts.append(self.column)
        return ":".join(parts)


class AgentMapError(Exception):
    """Root of every error AgentMap raises on purpose.

    Attributes:
        code: A stable, machine-readable identifier (`"unknown-agent-type"`); never reworded. Raise sites pass an
            `ErrorCode` member (so a type checker refuses a misspelt code); text from an untyped caller becomes
            the member it names. Only the server protocol's own codes (`ProtocolCode`) stay plain text.
        message: What went wrong and what to change, in words a workflow author can act on.
        location: The file, row and column of the mistake, when there is one.
        hint: An optional extra line ("did you mean ...?").
    """

    default_code: ClassVar[ErrorCode] = ErrorCode.AGENTMAP_ERROR
    exit_code: ClassVar[int] = 5

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        location: Location | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.code: str = ErrorCode.coerce(code or self.default_code)  # a member even from untyped callers
        self.location = location
        self.hint = hint
        super().__init__(self.__str__())

    @property
    def docs(self) -> str | None:
        """The link to the section of `csv_specs/errors.md` that explains this error's code (None if unlisted)."""
        return self.code.docs if isinstance(self.code, ErrorCode) else None

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        return f"{text}\n  {self.hint}" if self.hint else text


class WorkflowFileError(AgentMapError, FileNotFoundError):
    """A workflow file is missing, is a directory, or cannot be read as a workflow."""

    default_code = ErrorCode.FILE_NOT_FOUND
    exit_code = 3


class GraphNotFoundError(AgentMapError, LookupError):
    """A `file.csv::Graph` selector names no graph in the file (or a file holds several and none was named)."""

    default_code = ErrorCode.GRAPH_NOT_FOUND
    exit_code = 3


class AgentNotFoundError(AgentMapError, LookupError):
    """An agent type, router function or custom agent class cannot be found."""

    default_code = ErrorCode.UNKNOWN_AGENT_TYPE
    exit_code = 4


class ConfigError(AgentMapError, ValueError):
    """Configuration (a file, an environment variable or an argument) is invalid."""

    default_code = ErrorCode.BAD_CONFIG
    exit_code = 2


class CorruptCheckpointError(ConfigError):
    """A saved record of a thread (a checkpoint, a pending write, a call journal entry) does not match the
    checksum it was written with, or does not decode: it is never resumed from. Raised inside a node, it ends
    the run rather than failing the node (`stops_run`)."""

    default_code = ErrorCode.CORRUPT_CHECKPOINT
    stops_run = True


class NodeError(AgentMapError, RuntimeError):
    """A node could not run at all (as opposed to an agent failing, which routes to Failure_Next).

    Attributes:
        node: The node where it happened (the one whose router raised, ...), when there is one.
    """

    default_code = ErrorCode.NODE_ERROR
    exit_code = 5

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        location: Location | None = None,
        hint: str | None = None,
        node: str | None = None,
    ) -> None:
        self.node = node
        super().__init__(message, code=code, location=location, hint=hint)


class WorkflowValidationError(AgentMapError, ValueError):
    """A workflow has validation errors; `issues` holds every finding (errors and warnings).

    The message lists the errors one per line, each prefixed with its file:row:column.
    """

    default_code = ErrorCode.VALIDATION_FAILED
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
        "file-too-big": WorkflowFileError,
        "graph-not-found": GraphNotFoundError,
        "graph-not-selected": GraphNotFoundError,
    }
)
"""Every code a `WorkflowFileError` or `GraphNotFoundError` carries, with its class.

`agentmap.validate` reports these errors about the file as a whole as issues without a row; the
command line maps such an issue back to its class (and so its exit code) through this table.
"""


if TYPE_CHECKING:
    ValidationError = WorkflowValidationError  # the deprecated name, for type checkers


def __getattr__(name: str) -> Any:
    """`ValidationError`, the former name of `WorkflowValidationError`, still works and warns (one release)."""
    if name == "ValidationError":
        warnings.warn(
            "agentmap.errors.ValidationError is renamed WorkflowValidationError (it shadowed pydantic's "
            "ValidationError); the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return WorkflowValidationError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
