"""Findings for the sheet as it is on screen: the rows written as the file would be, then `agentmap.validate`.

The studio has no validator of its own. The rows are rendered exactly as a save would write them, read by
the same reader (`spec`) with their line numbers, and checked by `agentmap.validate`, the function behind
`agentmap validate`; so a finding's row is the row the saved file will have. The whole file is checked: a
workbook's other sheets as saved, with the sheet on screen in place of its saved rows, and every read the
checks make of the file (a `graph` node calling a graph of another sheet, or of the same one) sees the rows
on screen too. So the findings are those `agentmap validate` gives once the sheet is saved, also those on
other sheets (a graph renamed here that a node there calls), which name their sheet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmap._paths import allowed_roots
from agentmap.errors import ERRORS_PAGE, AgentMapError
from agentmap.runtime.api import compile, validate
from agentmap.runtime.options import CompileOptions
from agentmap.spec.loader import read_workflow
from agentmap.spec.models import Issue, Workflow
from agentmap.spec.prompts import prompts_folder
from agentmap.spec.readers import Table, unsaved_tables
from agentmap.studio._workbook import Editable, SheetDocument

__all__ = ["Checked", "check_rows", "draw_sheet"]

Rows = Sequence[tuple[int | None, Sequence[str]]]


class Checked:
    """The outcome of checking rows: each row's line in the file, the findings, and the workflow read."""

    def __init__(
        self,
        lines: list[int],
        issues: list[Issue],
        headers: Sequence[str],
        workflow: Workflow | None,
        *,
        sheet: str | None = None,
        unsaved: Mapping[Path, Sequence[Table]] | None = None,
    ) -> None:
        self.lines = lines
        self.issues = issues
        self.findings = [_finding(issue, headers if issue.sheet == sheet else ()) for issue in issues]
        self.workflow = workflow
        self.sheet = sheet
        self.unsaved = unsaved or {}

    @property
    def valid(self) -> bool:
        """No finding of this sheet (or of the whole file) is an error."""
        here = [f for f in self.findings if f["sheet"] in (None, self.sheet)]
        return self.workflow is not None and not any(f["severity"] == "error" for f in here)


def check_rows(document: Editable, rows: Rows, options: CompileOptions) -> Checked:
    """Check `rows` of `document` as `agentmap validate` would check the file they make.

    Args:
        document: The file the rows came from (its folder resolves `file:` prompts, its style writes rows).
        rows: `(record index or None, cells)` in file order.
        options: The compile options; `agentmap.validate` takes their folders, settings and registry.
    """
    settings = options.settings
    path = document.path
    sheet = document.sheet if isinstance(document, SheetDocument) else None
    headers: list[str] = []
    lines = document.lines(rows)
    try:
        tables = document.tables(rows)
        headers = next(t.headers for t in tables if t.sheet == sheet)
        with unsaved_tables({path: tables}):
            workflow, issues = read_workflow(path, roots=allowed_roots(settings), prompts_dir=prompts_folder(settings))
            issues += validate(workflow, **options.reading())
    except AgentMapError as err:
        issue = Issue(severity="error", code=err.code, message=err.message, fix=err.hint or "", file=str(path))
        return Checked(lines, [issue], headers, None, sheet=sheet)
    return Checked(lines, issues, headers, workflow, sheet=sheet, unsaved={path: tables})


def draw_sheet(checked: Checked, graph: str, options: CompileOptions) -> str:
    """Graph `graph` of a valid sheet drawn as `agentmap export --format svg` draws it."""
    from agentmap.observe.draw import draw_graph

    assert checked.workflow is not None
    with unsaved_tables(checked.unsaved):
        return draw_graph(compile(checked.workflow, graph, options=options))


def _finding(issue: Issue, headers: Sequence[str]) -> dict[str, Any]:
    """The finding as the page shows it: the cell it is on (1-based column of `headers`, the sheet's on screen;
    none for a finding on another sheet), message, fix and its documentation."""
    column = None
    if issue.column is not None:
        wanted = issue.column.strip().lower()
        column = next((i + 1 for i, h in enumerate(headers) if h.strip().lower() == wanted), None)
    return {
        "severity": issue.severity,
        "code": issue.code,
        "message": issue.message,
        "fix": issue.fix,
        "row": issue.row,
        "column": column,
        "column_name": issue.column,
        "graph": issue.graph,
        "node": issue.node,
        "sheet": issue.sheet,
        "where": issue.where,
        "cell": issue.cell,
        "docs": f"{ERRORS_PAGE}#{issue.code}",
    }
