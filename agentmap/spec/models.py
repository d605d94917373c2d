"""The workflow specification: `Workflow` -> `GraphSpec` -> `NodeSpec`, and validation `Issue`s.

Plain, frozen, serialisable models; nothing here knows about agents or LangGraph. `Workflow` and its
parts round-trip through JSON (`model_dump_json` / `model_validate_json`).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MIN_STEPS",
    "STEPS_PER_NODE",
    "FuncRef",
    "GraphSpec",
    "Issue",
    "NodeSpec",
    "Targets",
    "Workflow",
    "construct_checked",
    "sheet_location",
    "state_key",
]

STEPS_PER_NODE = 10
"""A run's default recursion limit, per node of its graph (`GraphSpec.step_limit`)."""
MIN_STEPS = 50
"""The least default recursion limit, for the smallest graphs (`GraphSpec.step_limit`)."""


def sheet_location(file: str | None, sheet: str, row: int | None, cell: str | None) -> str:
    """A place in a workbook as a spreadsheet names it: `flows.xlsx[Sheet]!B7`, `!7:7` (a row), or the sheet."""
    ref = cell or (f"{row}:{row}" if row is not None else "")
    return f"{file or '<workflow>'}[{sheet}]" + (f"!{ref}" if ref else "")


def state_key(field: str, *, output: bool) -> str:
    """The state key an Input_Fields entry (`output=False`) or Output_Field entry reads or writes.

    Inputs: `key`, `key:param` and `param=key` read `key`. Outputs: `key` and `key=result_key` write `key`.
    """
    if "=" in field:
        left, _, right = field.partition("=")
        return (left if output else right).strip()
    return field.partition(":")[0].strip()


_Model = TypeVar("_Model", bound=BaseModel)
_Value = TypeVar("_Value")


class _found_once(cached_property[_Value]):  # a decorator, named as `cached_property` is
    """`functools.cached_property` without the lock Python 3.11 takes on each first use (one lock for every
    instance: a cost per graph for a file of 50,000 graphs). Two threads asking at once both work out the same
    value; the models are frozen, so it is the same."""

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> _found_once[_Value]: ...

    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> _Value: ...

    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.attrname or self.func.__name__] = self.func(instance)
        return value


_CONFIG = ConfigDict(frozen=True, ignored_types=(_found_once,))


def construct_checked(model: type[_Model], values: dict[str, Any]) -> _Model:
    """What `model.model_construct(**values)` makes, for `values` naming every field of `model` in the order of its
    fields, already checked (the reader's nodes and graphs): without `model_construct`'s walk over each field's
    aliases and defaults on every call (a second for a file of 50,000 one-row graphs).

    `values` becomes the instance's `__dict__` (the caller hands it over). Only for models with no private
    attributes, no `model_post_init` and no extra fields (`NodeSpec`, `GraphSpec`).
    """
    instance = model.__new__(model)
    object.__setattr__(instance, "__dict__", values)
    object.__setattr__(instance, "__pydantic_fields_set__", set(values))
    object.__setattr__(instance, "__pydantic_extra__", None)
    object.__setattr__(instance, "__pydantic_private__", None)
    return instance


class FuncRef(BaseModel):
    """A `func:` router reference: `func:name` (from the functions folder) or `func:module:function`."""

    model_config = ConfigDict(frozen=True)

    name: str
    module: str | None = None

    def __str__(self) -> str:
        return f"func:{self.module}:{self.name}" if self.module else f"func:{self.name}"


Targets = tuple[str, ...] | FuncRef
"""A next-node cell: node names (several mean a parallel fan-out) or a router function."""


class NodeSpec(BaseModel):
    """One row of a workflow: a node of a graph.

    Attributes:
        name: The node id, unique within its graph.
        agent_type: The AgentType cell as written (empty means `default`).
        prompt: The prompt text; a `file:` prompt is already loaded.
        description: Documentation of the node.
        context: The parsed Context cell.
        inputs: Input_Fields entries (`key` or `state_key:param`).
        outputs: Output_Field keys (several mean the agent returns a dict with those keys).
        edge: Unconditional next node(s) or router.
        success_next: Next node(s) or router when the node succeeded.
        failure_next: Next node(s) or router when it failed.
        tool_source: Where the node's tools come from.
        available_tools: Tool names.
        row: The line of the row in its file (1-based), when it came from a file.
    """

    model_config = _CONFIG

    name: str
    agent_type: str = ""
    prompt: str = ""
    description: str = ""
    context: dict[str, Any] = Field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    edge: Targets | None = None
    success_next: Targets | None = None
    failure_next: Targets | None = None
    tool_source: str = ""
    available_tools: tuple[str, ...] = ()
    row: int | None = None

    @property
    def reads(self) -> tuple[str, ...]:
        """The state keys the node reads (Input_Fields without renames)."""
        return tuple(state_key(f, output=False) for f in self.inputs)

    @property
    def writes(self) -> tuple[str, ...]:
        """The state keys the node writes (Output_Field without renames)."""
        return tuple(state_key(f, output=True) for f in self.outputs)

    def next_cells(self) -> list[tuple[str, Targets]]:
        """The non-empty next columns as `(canonical column, targets)` pairs."""
        if self.edge is None and self.success_next is None and self.failure_next is None:  # a last node
            return []
        cells: list[tuple[str, Targets | None]] = [
            ("Edge", self.edge),
            ("Success_Next", self.success_next),
            ("Failure_Next", self.failure_next),
        ]
        return [(column, targets) for column, targets in cells if targets is not None]

    def successors(self) -> frozenset[str]:
        """Every node this node may go to directly (router targets are unknown statically)."""
        return self.next_nodes

    @_found_once
    def next_nodes(self) -> frozenset[str]:
        """`successors()`, found once (the checks of a graph follow each node's next nodes many times)."""
        return frozenset(name for _, t in self.next_cells() if isinstance(t, tuple) for name in t)


class GraphSpec(BaseModel):
    """One graph: its nodes in file order (the first is the entry point).

    Attributes:
        name: The graph name.
        nodes: The nodes, in the order of their rows.
        file: The file the graph came from.
        columns: Canonical column -> the header as the file spells it (for error locations).
        sheet: The `.xlsx` sheet the graph's rows are on (None for other files).
        letters: Canonical column -> its letter in that sheet (`B`), for `flows.xlsx[Sheet]!B7` locations.
    """

    model_config = _CONFIG

    name: str
    nodes: tuple[NodeSpec, ...]
    file: str | None = None
    columns: dict[str, str] = Field(default_factory=dict)
    sheet: str | None = None
    letters: dict[str, str] = Field(default_factory=dict)

    @property
    def entry(self) -> str:
        """The entry point: the first node."""
        return self.nodes[0].name

    @_found_once
    def step_limit(self) -> int:
        """The most steps a run of this graph takes when its config sets no `recursion_limit`.

        `STEPS_PER_NODE` per node, at least `MIN_STEPS` (csv_specs/cli.md, `--recursion-limit`): room for every
        node to run ten times over, while a loop with no way out stops within a second.
        """
        return max(MIN_STEPS, STEPS_PER_NODE * len(self.nodes))

    @_found_once
    def by_name(self) -> dict[str, NodeSpec]:
        """Nodes by name (the first of duplicates)."""
        found: dict[str, NodeSpec] = {}
        for node in self.nodes:
            found.setdefault(node.name, node)
        return found

    @_found_once
    def handled_failures(self) -> frozenset[str]:
        """Nodes whose failure the workflow handles: their Failure_Next names a node or a `func:` router.

        A failure there is a designed path (csv_specs/format.md, "Success policy"), not the run's failure. A
        plain Edge on the same row overrides Failure_Next (`edge-overrides-branches`), so it handles nothing.
        """
        return frozenset(
            node.name
            for node in self.nodes
            if (not node.edge or isinstance(node.edge, FuncRef))
            and (
                isinstance(node.failure_next, FuncRef)
                or any(t.strip().lower() not in ("", "end", "__end__") for t in node.failure_next or ())
            )
        )

    def column(self, canonical: str) -> str:
        """The header the file uses for a canonical column (the canonical name if absent)."""
        return self.columns.get(canonical, canonical)

    def finding_column(self, canonical: str) -> str | None:
        """Where a finding about `canonical` goes: the file's header for it, or None when a table lacks it.

        A finding is never placed on a column the file does not have; a workflow that is not a table (no
        headers) names the canonical column.
        """
        if self.columns and canonical not in self.columns:
            return None
        return self.column(canonical)

    def cell(self, row: int | None, canonical: str) -> str | None:
        """The cell of column `canonical` on `row` in the graph's sheet (`B7`); None outside a workbook."""
        letter = self.letters.get(canonical)
        return f"{letter}{row}" if self.sheet and letter and row is not None else None

    def locate(self, row: int | None, canonical: str) -> dict[str, Any]:
        """Where a finding about `canonical` on `row` is: `file`, `row`, `column`, and in a sheet `sheet`, `cell`."""
        column = self.finding_column(canonical)
        return {"file": self.file, "row": row, "column": column, "sheet": self.sheet, "cell": self.cell(row, canonical)}


class Workflow(BaseModel):
    """Every graph of one workflow file, in file order.

    Attributes:
        file: The file the workflow came from.
        graphs: The graphs.
    """

    model_config = _CONFIG

    file: str | None = None
    graphs: tuple[GraphSpec, ...] = ()

    @property
    def graph_names(self) -> list[str]:
        """The graph names, in file order."""
        return [g.name for g in self.graphs]

    def get(self, name: str) -> GraphSpec | None:
        """The graph called `name` (exact, then case-insensitive), or None."""
        exact, folded = self._by_name
        return exact.get(name) or folded.get(name.casefold())

    @_found_once
    def _by_name(self) -> tuple[dict[str, GraphSpec], dict[str, GraphSpec]]:
        """The graphs by name, and by case-folded name (the first of each), so that a lookup is not a search."""
        exact: dict[str, GraphSpec] = {}
        folded: dict[str, GraphSpec] = {}
        for graph in self.graphs:
            exact.setdefault(graph.name, graph)
            folded.setdefault(graph.name.casefold(), graph)
        return exact, folded


class Issue(BaseModel):
    """A validation finding.

    Attributes:
        severity: `error` stops compilation; `warning` does not.
        code: A stable identifier (see csv_specs/validation.md).
        message: What is wrong.
        fix: What to change.
        file: The workflow file.
        row: The 1-based line of the row.
        column: The column header as written in the file.
        graph: The graph name.
        node: The node name.
        sheet: The `.xlsx` sheet of the row (None for other files).
        cell: The cell in that sheet, `B7` (None without a column).
    """

    model_config = ConfigDict(frozen=True)

    severity: Literal["error", "warning"]
    code: str
    message: str
    fix: str = ""
    file: str | None = None
    row: int | None = None
    column: str | None = None
    graph: str | None = None
    node: str | None = None
    sheet: str | None = None
    cell: str | None = None

    @property
    def where(self) -> str:
        """`file:row:column`, as far as known; in a workbook `flows.xlsx[Sheet]!B7` (`!7:7` for a whole row)."""
        if self.sheet is not None:
            return sheet_location(self.file, self.sheet, self.row, self.cell)
        parts = [self.file or "<workflow>"]
        if self.row is not None:
            parts.append(str(self.row))
            if self.column:
                parts.append(self.column)
        elif self.column:
            parts.append(self.column)
        return ":".join(parts)

    def __str__(self) -> str:
        fix = f" -> {self.fix}" if self.fix else ""
        return f"{self.where}: {self.severity}[{self.code}]: {self.message}{fix}"
