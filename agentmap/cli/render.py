"""Rendering for the command line: error paragraphs, JSON documents and tables
(the live run view is `_live.py`).

Errors and JSON are written with the standard library only, so a failing or `--json` command never
pays for importing rich; tables and the live view import rich when they are drawn. rich honours
`NO_COLOR`; the error paragraph does too.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

    from agentmap import Issue, NodeExecution
    from agentmap.errors import AgentMapError

__all__ = [
    "command_scope",
    "console",
    "dump_json",
    "json_output",
    "print_error",
    "print_issues",
    "set_json_output",
    "shown_path",
    "summary_table",
    "use_color",
]


_JSON_OUTPUT: ContextVar[bool] = ContextVar("agentmap_json_output", default=False)
"""Whether the running command promised one JSON document on stdout (errors become `{"error": ...}` there too)."""


def set_json_output(on: bool) -> None:
    """Promise (or not) one JSON document on stdout for the rest of this command; the error handler reads it.

    Set in the command's context only: `command_scope` puts it back when the command ends, so a second command
    in the same process (or one in another thread) starts from plain output.
    """
    _JSON_OUTPUT.set(on)


def json_output() -> bool:
    """Whether the running command writes one JSON document on stdout."""
    return _JSON_OUTPUT.get()


@contextmanager
def command_scope() -> Iterator[None]:
    """One command's output mode: plain at the start, put back as it was when the command ends."""
    token = _JSON_OUTPUT.set(False)
    try:
        yield
    finally:
        _JSON_OUTPUT.reset(token)


def use_color(stream: IO[str]) -> bool:
    """Whether to colour `stream`: a terminal, and `NO_COLOR` unset (https://no-color.org)."""
    return not os.environ.get("NO_COLOR") and stream.isatty()


def _style(text: str, code: str, stream: IO[str]) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if use_color(stream) else text


def console(*, stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr); rich itself honours `NO_COLOR` and non-terminals.

    A pipe or a file has no width: there, tables take the width their cells need and lines are not wrapped (rich
    would otherwise fit everything to 80 columns, cutting cells short with `…`).
    """
    from rich.console import Console

    out = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not out.is_terminal:
        out.width = _UNBOUNDED
    return out


_UNBOUNDED = 100_000
"""The width of a console that is not a terminal: wider than any line AgentMap prints."""


def shown_path(path: str) -> str:
    """A workflow's path as the commands show it: relative to the working folder when it lies under it (so `run`
    and `resume`, whose thread remembers the absolute path, show the same), else as it is."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def dump_json(document: Any, stream: IO[str] | None = None) -> None:
    """Write `document` as indented JSON (values JSON cannot hold are written with `str`).

    A deeply nested document (any state LangGraph accepted) is written without recursion, compact below
    32 levels.
    """
    from agentmap.cli._jsonout import depth_exceeds, iter_json

    out = stream or sys.stdout
    if depth_exceeds(document, 32):
        out.writelines(iter_json(document))
        out.write("\n")
    else:
        out.write(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")
    out.flush()


def error_document(error: AgentMapError) -> dict[str, Any]:
    """The JSON form of an error: code, message, location, hint, the code's page and the exit code.

    A validation error's location is that of its first finding that has one.
    """
    from agentmap.errors import Location

    location = error.location
    issues = getattr(error, "issues", None)
    if location is None and issues:
        first = next((i for i in issues if getattr(i, "row", None) is not None), None)
        if first is not None:
            location = Location(first.file, first.row, first.column, first.sheet, first.cell)
    data: dict[str, Any] = {
        "code": error.code,
        "message": error.message,
        "location": None
        if location is None
        else {"file": location.file, "row": location.row, "column": location.column, **_in_sheet(location)},
        "hint": error.hint,
        "docs": error.docs,
    }
    if issues:
        data["issues"] = [i.model_dump() if hasattr(i, "model_dump") else str(i) for i in issues]
    return {"success": False, "exit_code": error.exit_code, "error": data}


def _in_sheet(location: Any) -> dict[str, Any]:
    """A workbook location's sheet, cell and spreadsheet reference (`flows.xlsx[Sheet]!B7`); nothing elsewhere."""
    if location.sheet is None:
        return {}
    return {"sheet": location.sheet, "cell": location.cell, "ref": str(location)}


def print_error(error: BaseException, *, debug: bool = False) -> None:
    """Write `error` to stderr as one paragraph: `error[code]: file:row:column: message`, the hint, the code's page.

    With `debug` the traceback comes first. Errors that are not AgentMap's are reported as internal.
    """
    from agentmap.errors import AgentMapError, ErrorCode

    err = sys.stderr
    if debug:
        traceback.print_exception(error, file=err)
    if isinstance(error, AgentMapError):
        label = _style(f"error[{error.code}]", "1;31", err)
        where = f"{error.location}: " if error.location else ""
        lines = [f"{label}: {where}{error.message}"]
        if error.hint:
            lines.append(f"  {_style('hint', '33', err)}: {error.hint}")
        if error.docs:
            lines.append(f"  see: {error.docs}")
    else:
        error = AgentMapError(
            f"{type(error).__name__}: {error}",
            code=ErrorCode.INTERNAL,
            hint="this is a bug in AgentMap or in a custom agent; run again with --debug to see the traceback",
        )
        label = _style(f"error[{error.code}]", "1;31", err)
        lines = [f"{label}: {error.message}"]
        if not debug:
            lines.append(f"  hint: {error.hint}")
    err.write("\n".join(lines) + "\n")
    err.flush()
    if json_output():
        dump_json(error_document(error))


def print_issues(issues: Sequence[Issue], stream: IO[str] | None = None) -> None:
    """Write validation findings, one block each: `where: severity[code]: message`, then the fix."""
    out = stream or sys.stdout
    for issue in issues:
        colour = "1;31" if issue.severity == "error" else "1;33"
        head = _style(f"{issue.severity}[{issue.code}]", colour, out)
        out.write(f"{issue.where}: {head}: {issue.message}\n")
        if issue.fix:
            out.write(f"    fix: {issue.fix}\n")
    out.flush()


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def _status(execution: NodeExecution) -> str:
    if execution.success is None:
        return "[yellow]paused[/]" if execution.metadata.get("paused") else "[yellow]running[/]"
    attempts = execution.metadata.get("attempts")
    tries = f" [dim](after {attempts} attempts)[/]" if attempts else ""
    earlier = " [dim](before resume)[/]" if execution.metadata.get("before_resume") else ""
    cached = " [dim](from the node cache)[/]" if execution.metadata.get("cached") else ""
    return ("[green]ok[/]" if execution.success else "[bold red]failed[/]") + tries + earlier + cached


def _rows(executions: Sequence[NodeExecution], depth: int = 0) -> list[tuple[str, NodeExecution]]:
    rows: list[tuple[str, NodeExecution]] = []
    for execution in executions:
        indent = "  " * depth + ("└ " if depth else "")
        rows.append((indent + execution.name, execution))
        if execution.subgraph:
            rows += _rows(execution.subgraph, depth + 1)
    return rows


def summary_table(executions: Sequence[NodeExecution], *, title: str | None = None) -> Table:
    """The execution summary as a rich table (subgraph nodes indented under their graph node)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("node")
    table.add_column("status")
    table.add_column("time", justify="right")
    rows = _rows(executions)
    metered = any("input_tokens" in e.metadata or "replayed_calls" in e.metadata for _, e in rows)
    if metered:
        table.add_column("tokens in/out", justify="right")
        table.add_column("cost", justify="right")
    table.add_column("error", overflow="fold")
    for number, (label, execution) in enumerate(rows, start=1):
        usage = _usage_cells(execution.metadata) if metered else ()
        table.add_row(
            str(number),
            escape(label),
            _status(execution),
            _seconds(execution.duration),
            *usage,
            escape(execution.error or ""),
        )
    return table


def _usage_cells(meta: Mapping[str, Any]) -> tuple[str, str]:
    """A node's tokens (`in/out`, cached ones noted) and cost cells; `replayed` for calls the journal answered,
    `from cache` for those the LLM response cache answered."""
    if "input_tokens" not in meta and "replayed_calls" not in meta:
        return "", ""
    tokens = f"{meta.get('input_tokens', 0)}/{meta.get('output_tokens', 0)}"
    tokens += cache_note(meta.get("cached_tokens"), meta.get("cache_write_tokens"))
    cost = money(meta["cost"]) if meta.get("cost") is not None else "-"
    if meta.get("replayed_calls"):
        cost += f" [dim]({meta['replayed_calls']} replayed)[/]"
    if meta.get("cache_hits"):
        cost += f" [dim]({meta['cache_hits']} from cache)[/]"
    return tokens, cost


def cache_note(read: int | None, written: int | None) -> str:
    """` (400 cached, 2000 written to the cache)`: the input tokens read from and written to the provider's prompt
    cache, each when there are some; "" without either."""
    parts = [f"{read} cached"] if read else []
    if written:
        parts.append(f"{written} written to the cache")
    return f" ({', '.join(parts)})" if parts else ""


def money(value: float) -> str:
    """USD with enough digits for a fraction of a cent (`$0.000123`, `$1.25`)."""
    return f"${value:.2f}" if value >= 1 else f"${value:.6f}".rstrip("0").rstrip(".")


def usage_line(usage: Mapping[str, Any]) -> str:
    """The run's totals under the summary: `model calls: 3 · tokens: 120 in (40 cached), 30 out · cost: $0.0012`."""
    parts = [f"model calls: {usage.get('model_calls', 0)}"]
    if usage.get("replayed_calls"):
        parts[0] += f" ({usage['replayed_calls']} replayed, no new cost)"
    if usage.get("cache_hits"):
        parts[0] += f" ({usage['cache_hits']} from the cache, no cost)"
    cached = cache_note(usage.get("cached_tokens"), usage.get("cache_write_tokens"))
    parts.append(f"tokens: {usage.get('input_tokens', 0)} in{cached}, {usage.get('output_tokens', 0)} out")
    if usage.get("cost") is not None:
        parts.append(f"cost: {money(usage['cost'])}")
    if usage.get("unpriced_models"):
        parts.append(f"no price for {', '.join(usage['unpriced_models'])}")
    return " · ".join(parts)


def state_view(state: Mapping[str, Any], *, full: bool = False) -> RenderableType:
    """The final state as pretty JSON: long strings, long lists and deep nesting cut unless `full`."""
    from rich.json import JSON
    from rich.text import Text

    from agentmap.cli._jsonout import depth_exceeds, iter_json, preview

    shown = dict(state) if full else preview(dict(state))
    if depth_exceeds(shown, 64):  # too deep to highlight (rich parses the text again): plain text
        return Text("".join(iter_json(shown)))
    return JSON(json.dumps(shown, ensure_ascii=False, default=str), indent=2, highlight=True)
