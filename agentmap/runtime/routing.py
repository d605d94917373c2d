"""Routing: where a node goes next, and `func:` router functions.

Edge-only nodes get static LangGraph edges (drawn as solid lines, with waiting joins after a fan-out).
Nodes with Success_Next / Failure_Next or a router decide inside the node and return a LangGraph
`Command(goto=...)`, so parallel branches each route on their own outcome, not on a merged flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentmap.errors import ErrorCode, Location, NodeError
from agentmap.runtime.functions import RouterFn, allowed_modules, load_router
from agentmap.spec.models import FuncRef, GraphSpec, NodeSpec, Targets
from agentmap.spec.validation import branch_depths, fan_outs

__all__ = ["Route", "allowed_modules", "load_router", "plan_joins", "static_edges"]

_END_NAMES = frozenset({"", "end", "__end__"})


def static_edges(graph: GraphSpec) -> list[tuple[str | list[str], str]]:
    """The graph's static edges: `(source, target)`, or `([sources], target)` for a waiting join.

    A node that several parallel branches of one fan-out lead into (one predecessor exclusive to each
    branch, all by plain Edge, each certain to run once its branch starts) gets a waiting join, so it
    runs once, after every branch.
    """
    return plan_joins(graph)[0]


def plan_joins(graph: GraphSpec) -> tuple[list[tuple[str | list[str], str]], set[str]]:
    """The static edges (see `static_edges`) and the deferred joins.

    A deferred join is any other node that two or more branches of one fan-out may reach (through any
    next column) and that leads into no other such node. It is added with LangGraph's `defer=True`:
    reached by any branch, it runs once, when no other node is left to run (at once on a single path).
    A barrier cannot serve it: a branch may route elsewhere (Success_Next / Failure_Next, or end
    early), and a barrier would wait for it forever.
    """
    plain = [
        (node.name, target)
        for node in graph.nodes
        if isinstance(node.edge, tuple) and _is_plain(node)
        for target in dict.fromkeys(node.edge)
    ]
    fans = fan_outs(graph)
    if not fans:
        return list[tuple[str | list[str], str]](plain), set()
    predecessors: dict[str, list[str]] = {}
    for source, target in plain:
        predecessors.setdefault(target, []).append(source)
    callers: dict[str, set[str]] = {}
    for node in graph.nodes:
        for target in node.successors():
            callers.setdefault(target, set()).add(node.name)
    barriers: dict[str, list[str]] = {}
    deferred: set[str] = set()
    for source, targets in fans:
        unique = tuple(dict.fromkeys(targets))
        branches = branch_depths(graph, source, unique)
        for target, preds in predecessors.items():
            owners = [next((b for b in branches if p in b), None) for p in preds]
            if (
                len(preds) == len(branches)
                and len({id(b) for b in owners if b is not None}) == len(preds)
                and all(b is not None and _certain(graph, b, p, callers) for p, b in zip(preds, owners, strict=True))
            ):
                barriers[target] = preds
        for target, sources in callers.items():
            reached = {i for i, b in enumerate(branches) if target == unique[i] or not sources.isdisjoint(b)}
            if len(reached) > 1:
                deferred.add(target)
    edges: list[tuple[str | list[str], str]] = [(s, t) for s, t in plain if t not in barriers]
    edges += [(preds, target) for target, preds in barriers.items()]
    deferred -= barriers.keys()
    # Deferred nodes are released together, so an inner join leading into an outer one would let the
    # outer one run early: only the outermost is deferred, an inner one runs per arrival as before.
    return edges, {name for name in deferred if deferred.isdisjoint(_reach(graph, name) - {name})}


def _reach(graph: GraphSpec, start: str) -> set[str]:
    seen: set[str] = set()
    queue = [start]
    while queue:
        for name in graph.by_name[queue.pop()].successors():
            if name not in seen and name in graph.by_name:
                seen.add(name)
                queue.append(name)
    return seen


def _is_plain(node: NodeSpec) -> bool:
    return isinstance(node.edge, tuple) and node.success_next is None and node.failure_next is None


def _certain(graph: GraphSpec, branch: Mapping[str, int], node: str, callers: Mapping[str, set[str]]) -> bool:
    """Whether `node` runs whenever its branch starts: every branch node on a path to it goes on by Edge."""
    seen = {node}
    queue = [node]
    while queue:
        for caller in callers.get(queue.pop(), ()):
            if caller in branch and caller not in seen:
                seen.add(caller)
                queue.append(caller)
    return all(_is_plain(graph.by_name[name]) for name in seen)


class Route:
    """Decides a dynamic node's next node(s) from its own outcome and returns a `Command`."""

    def __init__(self, graph: GraphSpec, node: NodeSpec, routers: Mapping[FuncRef, RouterFn]) -> None:
        self.node = node
        self.graph = graph
        self.routers = routers
        named = [t for _, cell in node.next_cells() if isinstance(cell, tuple) for t in cell]
        if any(isinstance(cell, FuncRef) for _, cell in node.next_cells()):
            named += [n.name for n in graph.nodes if n.name != node.name]  # a router may pick any node
        self.destinations = tuple(dict.fromkeys(named))
        """Where the node may go: drawn as conditional edges (a router's targets are not known statically)."""

    def __call__(self, state: Mapping[str, Any], update: dict[str, Any]) -> Any:
        """Return `Command(update=update, goto=next nodes)`."""
        from langgraph.graph import END  # here, not at import: validating a workflow needs no LangGraph
        from langgraph.types import Command

        node = self.node
        success = update.get("last_action_success", True) is not False
        if isinstance(node.edge, FuncRef):
            goto = self._call(node.edge, "Edge", state, update)
        else:
            cell = node.success_next if success else node.failure_next
            column = "Success_Next" if success else "Failure_Next"
            goto = self._call(cell, column, state, update) if isinstance(cell, FuncRef) else list(cell or ())
        return Command(update=update, goto=goto or END)

    def _location(self, column: str) -> Location:
        graph, row = self.graph, self.node.row
        return Location(graph.file, row, graph.column(column), graph.sheet, graph.cell(row, column))

    def _call(self, ref: FuncRef, column: str, state: Mapping[str, Any], update: dict[str, Any]) -> list[str]:
        merged = {**state, **update}
        if "errors" in update:
            merged["errors"] = [*(state.get("errors") or ()), *update["errors"]]
        try:
            result = self.routers[ref](merged, _cell_text(self.node.success_next), _cell_text(self.node.failure_next))
        except Exception as exc:  # the workflow's own function failed: say which, where
            raise NodeError(
                f"router {ref} of node {self.node.name!r} raised {type(exc).__name__}: {exc}",
                code=ErrorCode.ROUTER_ERROR,
                location=self._location(column),
                hint=f"fix the function {ref.name!r} (run again with --debug to see the traceback)",
                node=self.node.name,
            ) from exc
        names = [result] if isinstance(result, str) or result is None else list(result)
        targets: list[str] = []
        for name in names:
            text = "" if name is None else str(name).strip()
            if text.lower() in _END_NAMES:
                continue
            for part in text.split("|"):
                if part.strip() not in self.graph.by_name:
                    raise NodeError(
                        f"router {ref} of node {self.node.name!r} returned {part.strip()!r}, which is not a node of "
                        f"graph {self.graph.name!r} (nodes: {', '.join(self.graph.by_name)})",
                        code=ErrorCode.BAD_ROUTE,
                        location=self._location(column),
                        node=self.node.name,
                        hint="return a node name, a list of names for a fan-out, or None to end the graph",
                    )
                targets.append(part.strip())
        return targets


def _cell_text(targets: Targets | None) -> str | None:
    if targets is None:
        return None
    return str(targets) if isinstance(targets, FuncRef) else "|".join(targets)
