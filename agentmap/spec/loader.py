"""Build a `Workflow` from a file: read the table, parse every cell, collect every problem as an `Issue`.

Reading never stops at the first mistake: each bad cell becomes an issue with its row and column, and
the rest of the file is still read, so `agentmap validate` can list everything at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmap.spec.cells import CellError, edge_overrides, parse_context, parse_fields, parse_targets, split_pipes
from agentmap.spec.columns import map_headers
from agentmap.spec.formulas import formula_like
from agentmap.spec.models import GraphSpec, Issue, NodeSpec, Targets, Workflow, construct_checked
from agentmap.spec.prompts import resolve_prompt
from agentmap.spec.readers import Table, column_letter, read_tables

__all__ = ["parse_selector", "read_workflow"]


def parse_selector(target: str | Path) -> tuple[Path, str | None]:
    """Split `path.csv::Graph` into `(Path("path.csv"), "Graph")`; no `::` means no graph named."""
    text = str(target)
    path, sep, graph = text.partition("::")
    return Path(path), (graph.strip() or None) if sep else None


def read_workflow(
    path: Path, *, roots: Sequence[Path] = (), prompts_dir: Path | None = None
) -> tuple[Workflow, list[Issue]]:
    """Read every graph of a workflow file.

    Args:
        path: The workflow file.
        roots: Extra folders `file:` prompts may be read from (the file's own folder always may).
        prompts_dir: The configured prompts folder (`file:` and `prompt:name` look there too).

    Returns:
        The workflow (rows with unusable names left out) and every problem found while reading.

    Raises:
        WorkflowFileError: The file is missing, a directory, unsupported, or not text.
    """
    tables = read_tables(path)  # rows not yet saved in place of the file's: see `readers.unsaved_tables`
    file = str(path)
    graphs: dict[str, list[NodeSpec]] = {}
    shapes: dict[str, tuple[dict[str, str], Table, dict[str, str]]] = {}
    issues: list[Issue] = []
    for sheet in tables:
        if len(tables) > 1 and sheet.sheet is not None and "Node" not in map_headers(sheet.headers).index:
            issues.append(_skipped(sheet, file))
            continue
        issues += _read_rows(sheet, file, path.parent, roots, prompts_dir, graphs, shapes)
    if not graphs and not any(i.severity == "error" for i in issues):
        issues.append(
            Issue(
                severity="error",
                code="no-graphs",
                message=f"{path} has a header row but no graph rows",
                fix="add one row per node: GraphName, Node, AgentType, ...",
                file=file,
            )
        )
    made = tuple(_graph(name, nodes, file, shapes[name]) for name, nodes in graphs.items())
    return Workflow(file=file, graphs=made), issues


def _skipped(table: Table, file: str) -> Issue:
    """A sheet of a workbook of several sheets that has no Node column (notes, data): not read, with a warning."""
    return Issue(
        severity="warning",
        code="sheet-skipped",
        message=f"sheet {table.sheet!r} has no Node column: it is not read as a workflow",
        fix="add a Node column and one row per node to make it a graph, or leave it as it is",
        file=file,
        row=table.header_line,
        sheet=table.sheet,
    )


def _graph(
    name: str, nodes: list[NodeSpec], file: str, shape: tuple[dict[str, str], Table, dict[str, str]]
) -> GraphSpec:
    """The graph of `nodes` (made as they were: already checked), sharing its table's column maps with the other
    graphs of the table (a file of 40,000 one-row graphs is not 40,000 copies of them)."""
    written, table, letters = shape
    return construct_checked(
        GraphSpec,
        {
            "name": name,
            "nodes": tuple(nodes),
            "file": file,
            "columns": written,
            "sheet": table.sheet,
            "letters": letters,
        },
    )


def _read_rows(
    table: Table,
    file: str,
    base_dir: Path,
    roots: Sequence[Path],
    prompts_dir: Path | None,
    graphs: dict[str, list[NodeSpec]],
    shapes: dict[str, tuple[dict[str, str], Table, dict[str, str]]],
) -> list[Issue]:
    """Read one table's rows into `graphs` (and each new graph's headers into `shapes`); the problems found.

    A workbook sheet without a GraphName column is one graph named after the sheet.
    """
    headers = map_headers(table.headers)
    named_by_sheet = table.sheet is not None and "GraphName" not in headers.index
    sheet = table.sheet

    def header_cell(column: str | None) -> str | None:
        stripped = [h.strip() for h in table.headers]
        if sheet is None or column is None or column not in stripped:
            return None
        return f"{column_letter(stripped.index(column))}{table.header_line}"

    issues = [
        Issue(
            severity="error" if p.severity == "error" else "warning",
            code=p.code,
            message=p.message,
            fix=p.fix,
            file=file,
            row=table.header_line,
            column=p.column,
            sheet=sheet,
            cell=header_cell(p.column),
        )
        for p in headers.problems
        if not (named_by_sheet and p.code == "missing-column" and p.column == "GraphName")
    ]
    issues += _reading_notes(table.notes, file, table.header_line)
    issues += _formula_cells(table, file)
    issues += table.issues
    if any(i.code == "missing-column" for i in issues):
        return issues

    index = headers.index
    written = headers.written
    letters = {column: column_letter(position) for column, position in index.items()} if sheet else {}
    shape = (dict(written), table, letters)  # each graph of the table: its headers, table and column letters

    columns = tuple(index.items())
    for line, row in table.rows:
        width = len(row)
        cells = {column: row[position].strip() if position < width else "" for column, position in columns}
        if named_by_sheet and sheet is not None:
            cells["GraphName"] = sheet

        def report(
            column: str,
            code: str,
            message: str,
            fix: str,
            *,
            line: int = line,
            cells: Mapping[str, str] = cells,
            warning: bool = False,
        ) -> None:
            position = index.get(column)
            issues.append(
                Issue(
                    severity="warning" if warning else "error",
                    code=code,
                    message=message,
                    fix=fix,
                    file=file,
                    row=line,
                    column=written.get(column, column),
                    graph=cells.get("GraphName") or None,
                    node=cells.get("Node") or None,
                    sheet=sheet,
                    cell=f"{column_letter(position)}{line}" if sheet is not None and position is not None else None,
                )
            )

        graph_name, node_name = cells.get("GraphName", ""), cells.get("Node", "")
        if not graph_name or not node_name:
            missing = "GraphName" if not graph_name else "Node"
            report(
                missing,
                f"missing-{'graph' if missing == 'GraphName' else 'node'}-name",
                f"this row has no {written.get(missing, missing)}",
                f"fill in the {written.get(missing, missing)} cell, or start the row with # to comment it out",
            )
            continue

        fields = _node_fields(cells, report, written, base_dir, roots, prompts_dir)
        fields["name"] = node_name
        fields["row"] = line
        graphs.setdefault(graph_name, []).append(construct_checked(NodeSpec, _with_defaults(fields)))
        shapes.setdefault(graph_name, shape)
    return issues


_DEFAULTS: dict[str, Any] = {
    name: None if name == "name" else field.get_default(call_default_factory=True)
    for name, field in NodeSpec.model_fields.items()
}
"""Every field of `NodeSpec` in its order, with its default (`name` is always given)."""


def _node_fields(
    cells: Mapping[str, str],
    report: Callable[..., None],
    written: Mapping[str, str],
    base_dir: Path,
    roots: Sequence[Path],
    prompts_dir: Path | None,
) -> dict[str, Any]:
    """A row's node fields parsed from its cells (canonical column -> its text, stripped; a column the table lacks
    is absent); each problem (or 0.9-spelling note) goes to `report`."""
    cell = cells.get
    fields: dict[str, Any] = {}
    notes: list[CellError] = []
    try:
        fields["context"] = parse_context(cell("Context", ""), notes)
    except CellError as err:
        report("Context", err.code, err.message, err.fix)
    for note in notes:
        report("Context", note.code, note.message, note.fix, warning=True)
    for column, key, rename in (("Input_Fields", "inputs", True), ("Output_Field", "outputs", False)):
        try:
            fields[key] = parse_fields(cell(column, ""), allow_rename=rename)
        except CellError as err:
            report(column, err.code, err.message, err.fix)
    for column, key in (("Edge", "edge"), ("Success_Next", "success_next"), ("Failure_Next", "failure_next")):
        try:
            targets: Targets | None = parse_targets(cell(column, ""))
        except CellError as err:
            report(column, err.code, err.message, err.fix)
        else:
            fields[key] = targets
    for note in edge_overrides(fields, written):
        report("Edge", note.code, note.message, note.fix, warning=True)
    prompt = cell("Prompt", "")
    try:
        prompt = resolve_prompt(prompt, base_dir, roots, prompts_dir)
    except CellError as err:
        report("Prompt", err.code, err.message, err.fix)
    fields.update(
        agent_type=cell("AgentType", ""),
        prompt=prompt,
        description=cell("Description", ""),
        tool_source=cell("Tool_Source", ""),
        available_tools=split_pipes(cell("Available_Tools", "")),
    )
    return fields


def _with_defaults(fields: dict[str, Any]) -> dict[str, Any]:
    """Every field of a node, in `NodeSpec`'s order: `fields`, else the field's default (a new `context` each)."""
    return {**_DEFAULTS, "context": {}, **fields}


def _reading_notes(notes: Sequence[tuple[str, str, str]], file: str, line: int) -> list[Issue]:
    """How the file was read when it was not plain UTF-8 CSV (a `;` delimiter, cp1252), as warnings."""
    return [
        Issue(severity="warning", code=code, message=message, fix=fix, file=file, row=line)
        for code, message, fix in notes
    ]


_SPREADSHEET_TEXT = (".csv", ".tsv")
"""The files whose cells a spreadsheet parses when it opens them (a workbook's text cells stay text)."""


def _formula_cells(table: Table, file: str) -> list[Issue]:
    """A warning per cell of a CSV file that a spreadsheet opening it would run as a formula (`spec.formulas`)."""
    if table.sheet is not None or Path(file).suffix.lower() not in _SPREADSHEET_TEXT:
        return []
    found = []
    for line, row in table.rows:
        for position, text in enumerate(row):
            if not formula_like(text):
                continue
            column = table.headers[position] if position < len(table.headers) else column_letter(position)
            shown = text if len(text) <= 60 else text[:57] + "..."
            found.append(
                Issue(
                    severity="warning",
                    code="formula-like-cell",
                    message=f"{column} holds {shown!r}, which a spreadsheet opening this CSV file runs as a formula "
                    "(formula injection: a formula can open links or start programs)",
                    fix="if it is text, start it otherwise (a word before the =, +, - or @); check a file someone "
                    "else sent before opening it in a spreadsheet, or keep the workflow as .xlsx, whose text "
                    "cells are never run",
                    file=file,
                    row=line,
                    column=column,
                )
            )
    return found
