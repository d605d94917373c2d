"""The workflow columns, their aliases, and mapping a header row onto them.

Headers match case-insensitively and ignore `_`, `-` and spaces, so `Success_Next`, `success next` and
`SuccessNext` are one column. Unknown columns are reported as warnings and otherwise ignored.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

__all__ = ["COLUMNS", "REQUIRED", "HeaderMap", "map_headers"]

COLUMNS: dict[str, tuple[str, ...]] = {
    "GraphName": ("graph_name", "Graph", "WorkflowName", "workflow_name", "workflow"),
    "Node": ("node_name", "NodeName", "Step", "StepName", "name"),
    "AgentType": ("agent_type", "Agent", "Type"),
    "Prompt": ("Instructions", "Template", "prompt_template"),
    "Description": ("desc", "Details"),
    "Context": ("Config", "Configuration"),
    "Input_Fields": ("Inputs", "InputFields"),
    "Output_Field": ("Output", "OutputField"),
    "Edge": ("next_node", "NextNode", "Target", "next"),
    "Success_Next": ("next_on_success", "SuccessTarget", "on_success"),
    "Failure_Next": ("next_on_failure", "FailureTarget", "on_failure"),
    "Tool_Source": ("ToolSource", "ToolFile", "ToolModule"),
    "Available_Tools": ("AvailableTools", "Tools", "ToolList"),
}
"""Canonical column name -> its aliases."""

REQUIRED = ("GraphName", "Node")


def _fold(header: str) -> str:
    return re.sub(r"[\s_\-]+", "", header).lower()


_LOOKUP: dict[str, str] = {}
for _canonical, _aliases in COLUMNS.items():
    for _name in (_canonical, *_aliases):
        _LOOKUP[_fold(_name)] = _canonical

_MEANINGS: dict[str, str] = {
    _fold(word): canonical
    for canonical, words in {
        "Prompt": ("Text", "Message", "Question", "Content", "Body", "PromptText", "Instruction", "System"),
        "Description": ("Notes", "Note", "Comment", "Comments", "Doc", "Documentation", "Purpose"),
        "Context": ("Settings", "Params", "Parameters", "Options", "Args", "Arguments"),
        "Input_Fields": ("Input", "Reads", "InputField", "InputKeys", "Fields"),
        "Output_Field": ("Outputs", "Writes", "OutputFields", "OutputKey", "Result", "Returns"),
        "Edge": ("Then", "GoTo", "NextStep", "To", "Route", "Edges"),
        "Success_Next": ("OnSuccess", "IfSuccess", "SuccessNode", "NextSuccess", "Success"),
        "Failure_Next": ("OnFailure", "OnError", "IfFailure", "FailureNode", "ErrorNext", "NextFailure", "Failure"),
        "AgentType": ("Kind", "Class", "AgentClass", "NodeType"),
        "Available_Tools": ("Tool", "Functions"),
    }.items()
    for word in words
}
"""Words people use for a column that are not aliases (the file still needs renaming): suggestions by meaning,
asked before suggestions by spelling, so `Text` suggests `Prompt` rather than the look-alike `next`."""


def _suggestion(header: str) -> str | None:
    """The canonical column `header` most likely means, by meaning first, then by spelling."""
    folded = _fold(header)
    if folded in _MEANINGS:
        return _MEANINGS[folded]
    close = difflib.get_close_matches(folded, list(_LOOKUP), n=1, cutoff=0.75)
    return _LOOKUP[close[0]] if close else None


@dataclass(frozen=True)
class HeaderProblem:
    """A problem with the header row: `code` is a validation code, `column` the header as written."""

    code: str
    column: str
    message: str
    fix: str
    severity: str = "error"


@dataclass(frozen=True)
class HeaderMap:
    """How one file's header row maps onto the canonical columns.

    Attributes:
        index: Canonical column -> position in each row.
        written: Canonical column -> the header exactly as the file spells it (for error locations).
        problems: Missing required columns, duplicates and unknown columns.
    """

    index: dict[str, int] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)
    problems: tuple[HeaderProblem, ...] = ()


def map_headers(headers: list[str]) -> HeaderMap:
    """Map a header row onto the canonical columns, collecting every problem."""
    index: dict[str, int] = {}
    written: dict[str, str] = {}
    problems: list[HeaderProblem] = []
    for position, raw in enumerate(headers):
        header = raw.strip()
        if not header:
            continue
        canonical = _LOOKUP.get(_fold(header))
        if canonical is None:
            meant = _suggestion(header)
            guess = f"; did you mean {meant!r}?" if meant else ""
            problems.append(
                HeaderProblem(
                    "unknown-column",
                    header,
                    f"unknown column {header!r} is ignored{guess}",
                    f"rename it to one of: {', '.join(COLUMNS)}, or remove it",
                    severity="warning",
                )
            )
            continue
        if canonical in index:
            problems.append(
                HeaderProblem(
                    "duplicate-column",
                    header,
                    f"columns {written[canonical]!r} and {header!r} both mean {canonical!r}",
                    "keep one of them and rename or remove the other",
                )
            )
            continue
        index[canonical] = position
        written[canonical] = header
    for required in REQUIRED:
        if required not in index:
            aliases = ", ".join(COLUMNS[required])
            problems.append(
                HeaderProblem(
                    "missing-column",
                    required,
                    f"the required column {required!r} is missing (headers found: {', '.join(map(repr, headers))})",
                    f"add a {required!r} column to the header row (aliases: {aliases})",
                )
            )
    return HeaderMap(index, written, tuple(problems))
