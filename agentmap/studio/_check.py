"""Findings for the sheet as it is on screen: the rows written as the file would be, then `agentmap.validate`.

The studio has no validator of its own. The rows are rendered exactly as a save would write them, read by
the same reader (`spec`) with their line numbers, and checked by `agentmap.validate`, the function behind
`agentmap validate`; so a finding's row is the row the saved file will have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentmap._paths import allowed_roots
from agentmap.errors import ERRORS_PAGE, AgentMapError
from agentmap.runtime.api import validate
from agentmap.spec.loader import read_workflow
from agentmap.spec.models import Issue, Workflow
from agentmap.spec.prompts import prompts_folder
from agentmap.studio._workbook import Editable

__all__ = ["Checked", "check_rows", "draw_sheet"]

Rows = Sequence[tuple[int | None, Sequence[str]]]


class Checked:
    """The outcome of checking rows: each row's line in the file, the findings, and the workflow read."""

    def __init__(
        self, lines: list[int], issues: list[Issue], headers: Sequence[str], workflow: Workflow | None
    ) -> None:
        self.lines = lines
        self.issues = issues
        self.findings = [_finding(issue, headers) for issue in issues]
        self.workflow = workflow

    @property
    def valid(self) -> bool:
        """No finding is an error."""
        return self.workflow is not None and not any(f["severity"] == "error" for f in self.findings)


def check_rows(document: Editable, rows: Rows, options: Mapping[str, Any]) -> Checked:
    """Check `rows` of `document` as `agentmap validate` would check the file they make.

    Args:
        document: The file the rows came from (its folder resolves `file:` prompts, its style writes rows).
        rows: `(record index or None, cells)` in file order.
        options: `functions_dir`, `agents_dir` and `settings`, as `agentmap.validate` takes them.
    """
    settings = options.get("settings")
    path = document.path
    headers: list[str] = []
    lines = document.lines(rows)
    try:
        table = document.table(rows)
        headers = table.headers
        workflow, issues = read_workflow(
            path, roots=allowed_roots(settings), prompts_dir=prompts_folder(settings), table=table
        )
    except AgentMapError as err:
        issue = Issue(severity="error", code=err.code, message=err.message, fix=err.hint or "", file=str(path))
        return Checked(lines, [issue], headers, None)
    return Checked(lines, [*issues, *validate(workflow, **options)], headers, workflow)


def draw_sheet(workflow: Workflow, graph: str, options: Mapping[str, Any]) -> str:
    """Graph `graph` of a valid sheet drawn as `agentmap export --format svg` draws it."""
    from agentmap.observe.draw import draw_graph
    from agentmap.runtime.api import compile

    return draw_graph(compile(workflow, graph, **options))


def _finding(issue: Issue, headers: Sequence[str]) -> dict[str, Any]:
    """The finding as the page shows it: the cell it is on (1-based column), message, fix and its documentation."""
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
        "where": issue.where,
        "cell": issue.cell,
        "docs": f"{ERRORS_PAGE}#{issue.code}",
    }
