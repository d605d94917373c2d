"""Checks on a parsed graph. `compile` and `validate` both run these: there is no second grammar.

Each finding is an `Issue` with the row and column to change and a fix. Agent types are checked
through a predicate the caller passes in, so this module knows nothing of agents.
"""

from __future__ import annotations

import difflib
import re
from collections import deque
from collections.abc import Callable, Collection, Iterable

from agentmap.spec._dataflow import unwritten
from agentmap.spec.cells import state_key
from agentmap.spec.models import FuncRef, GraphSpec, Issue, NodeSpec

__all__ = ["REDUCED_KEYS", "SYSTEM_KEYS", "branch_depths", "check_graph", "fan_outs", "listed", "nearest"]

SYSTEM_KEYS = frozenset({"last_action_success", "graph_success", "errors"})
"""State keys every graph has; nodes may read them without writing them first."""

REDUCED_KEYS = frozenset({"errors", "last_action_success", "graph_success", "messages"})
"""Keys with reducers, which parallel branches may write together (`messages`: a chat, appended to;
`agentmap.agents.messages`)."""

_RESERVED = re.compile(r"[|:]")
"""The characters a node name may not hold."""

_BRANCH_VISITS = 200_000
"""Nodes the parallel-write check may reach from the fan-outs of one graph, in all (each branch walked on its own):
a file of a thousand fan-outs of a thousand nodes each is not walked a million times over."""

_LISTED = 12
"""Names a message lists before it says how many more there are (a file may hold thousands of nodes)."""
_GUESS_AMONG = 500
_GUESS_LENGTH = 100
"""A "did you mean" compares the name with each candidate: among at most this many, of at most this length."""


def listed(names: Iterable[str]) -> str:
    """`a, b, c` for a message; after the first few, how many more (`a, b, ... and 988 more`)."""
    shown: list[str] = []
    more = 0
    for name in names:
        if len(shown) < _LISTED:
            shown.append(name)
        else:
            more += 1
    return ", ".join(shown) + (f", ... and {more:,} more" if more else "")


def nearest(name: str, names: Collection[str]) -> str | None:
    """The one of `names` closest to `name` (a "did you mean"), or None; none is looked for among more than a few
    hundred names, or for names longer than a line (each comparison costs the product of the two lengths)."""
    if len(names) > _GUESS_AMONG or len(name) > _GUESS_LENGTH:
        return None
    close = difflib.get_close_matches(name, [n for n in names if len(n) <= _GUESS_LENGTH], n=1, cutoff=0.6)
    return close[0] if close else None


def check_graph(
    graph: GraphSpec,
    *,
    known_type: Callable[[str], bool],
    unknown_type_message: Callable[[str], str],
    unknown_type_fix: Callable[[str], str],
    calls: Callable[[NodeSpec], Iterable[str]] = lambda node: (),
    unknown_type_code: Callable[[str], str] = lambda name: "unknown-agent-type",
) -> list[Issue]:
    """Every finding for one graph, errors and warnings, in row order.

    Args:
        graph: The graph.
        known_type: Whether an agent type name is known.
        unknown_type_message: The message for an unknown type (with a "did you mean").
        unknown_type_fix: How to make a type known.
        calls: The nodes a node calls by name rather than by an edge (an orchestrator's workers);
            they count as reachable from it.
        unknown_type_code: The code of the finding for an unknown type (`code-outside-roots` when the file that
            would declare it was refused).
    """
    checker = _Checker(graph, calls)
    checker.names_and_types(known_type, unknown_type_message, unknown_type_fix, unknown_type_code)
    checker.routing()
    checker.parallel_writes()
    checker.reachability()
    checker.endless_loops()
    checker.unset_inputs()
    return sorted(checker.issues, key=lambda i: (i.row or 0, i.severity != "error"))


class _Checker:
    def __init__(self, graph: GraphSpec, calls: Callable[[NodeSpec], Iterable[str]] = lambda node: ()) -> None:
        self.graph = graph
        self.nodes = graph.by_name
        self.issues: list[Issue] = []
        self.has_router = any(isinstance(t, FuncRef) for node in graph.nodes for _, t in node.next_cells())
        self._calls = calls
        self._called: dict[str, set[str]] | None = None

    @property
    def called(self) -> dict[str, set[str]]:
        """The nodes each node calls by name (`check_graph`'s `calls`), asked once per node."""
        if self._called is None:
            self._called = {node.name: set(self._calls(node)) for node in self.graph.nodes}
        return self._called

    def add(self, node: NodeSpec, column: str, code: str, message: str, fix: str, *, warning: bool = False) -> None:
        self.issues.append(
            Issue(
                severity="warning" if warning else "error",
                code=code,
                message=message,
                fix=fix,
                **self.graph.locate(node.row, column),
                graph=self.graph.name,
                node=node.name,
            )
        )

    def names_and_types(
        self,
        known_type: Callable[[str], bool],
        unknown_type_message: Callable[[str], str],
        unknown_type_fix: Callable[[str], str],
        unknown_type_code: Callable[[str], str] = lambda name: "unknown-agent-type",
    ) -> None:
        seen: dict[str, NodeSpec] = {}
        for node in self.graph.nodes:
            first = seen.setdefault(node.name, node)
            if first is not node:
                self.add(
                    node,
                    "Node",
                    "duplicate-node",
                    f"node {node.name!r} is defined twice in graph {self.graph.name!r} (first on row {first.row})",
                    "rename one of the two rows, or delete the duplicate",
                )
            if _RESERVED.search(node.name) or node.name in ("__start__", "__end__"):
                self.add(
                    node,
                    "Node",
                    "reserved-name",
                    f"node name {node.name!r} is reserved or contains '|' or ':'",
                    "use letters, digits, spaces, '_' or '-' in node names",
                )
            if not known_type(node.agent_type or "default"):
                self.add(
                    node,
                    "AgentType",
                    unknown_type_code(node.agent_type),
                    unknown_type_message(node.agent_type),
                    unknown_type_fix(node.agent_type),
                )

    def routing(self) -> None:
        for node in self.graph.nodes:
            if isinstance(node.edge, tuple) and (node.success_next is not None or node.failure_next is not None):
                self.add(
                    node,
                    "Edge",
                    "edge-conflict",
                    f"node {node.name!r} has both Edge and Success_Next/Failure_Next",
                    "use Edge alone for an unconditional next node, or Success_Next/Failure_Next alone "
                    "to branch on success (Edge may hold a func: router that receives both)",
                )
            for column, targets in node.next_cells():
                if isinstance(targets, FuncRef):
                    continue
                for target in targets:
                    if target not in self.nodes:
                        close = nearest(target, self.nodes)
                        guess = f"; did you mean {close!r}?" if close else ""
                        self.add(
                            node,
                            column,
                            "unknown-target",
                            f"{column} of {node.name!r} names {target!r}, which is not a node of graph "
                            f"{self.graph.name!r}{guess}",
                            f"use one of: {listed(self.nodes)}; leave the cell empty to end the graph",
                        )

    def parallel_writes(self) -> None:
        left = _BRANCH_VISITS
        for source, targets in fan_outs(self.graph):
            reaches = _reaches(self.graph, source, targets, limit=left)
            if reaches is None:
                node = self.nodes[source]
                column = next(c for c, t in node.next_cells() if t == targets)
                self.add(
                    node,
                    column,
                    "check-skipped",
                    f"parallel writes were not checked from the fan-out of {source!r} on: the branches of this "
                    f"graph's fan-outs reach more than {_BRANCH_VISITS:,} nodes in all, more than a check may walk",
                    "make sure parallel branches write different keys (a run stops where two write one key in the "
                    "same step), or split the graph into subgraphs",
                    warning=True,
                )
                return
            left -= sum(len(reach) for reach in reaches)
            depths = _unique(reaches)
            writers: dict[tuple[str, int], tuple[int, NodeSpec]] = {}
            for branch, nodes in enumerate(depths):
                for name, depth in nodes.items():
                    node = self.nodes[name]
                    for key in (state_key(f, output=True) for f in node.outputs):
                        if key in REDUCED_KEYS:
                            continue
                        other = writers.setdefault((key, depth), (branch, node))
                        if other[0] != branch:
                            self.add(
                                node,
                                "Output_Field",
                                "parallel-write",
                                f"parallel branches of {source!r} both write {key!r}: nodes "
                                f"{other[1].name!r} and {node.name!r} run at the same time",
                                "give each branch its own output field and combine them after the branches "
                                "join (a summary node reading both)",
                            )

    def reachability(self) -> None:
        called = self.called
        for node in self.graph.nodes:
            for name in sorted(n for n in called[node.name] if n not in self.nodes):
                close = nearest(name, self.nodes)
                guess = f"; did you mean {close!r}?" if close else ""
                self.add(
                    node,
                    "Context",
                    "unknown-target",
                    f"the Context of {node.name!r} names node {name!r}, which is not a node of graph "
                    f"{self.graph.name!r}{guess}",
                    f"use one of: {listed(self.nodes)}",
                )
        if self.has_router or not self.graph.nodes:
            return
        reached = _reachable(self.graph, [self.graph.entry], called)
        for node in self.graph.nodes:
            if node.name not in reached:
                self.add(
                    node,
                    "Node",
                    "unreachable-node",
                    f"node {node.name!r} can never run: no path from the entry node {self.graph.entry!r} reaches it",
                    "add an edge to it, or delete the row",
                    warning=True,
                )

    def endless_loops(self) -> None:
        """Warn at the next cell that closes a loop no node of which can end the graph.

        A node can end the graph when it may have no next node (no Edge, and Success_Next or Failure_Next
        empty); a loop that reaches no such node runs until the recursion limit. Not said for graphs with a
        `func:` router, which may leave any loop.
        """
        if self.has_router:
            return
        finishes = {
            node.name
            for node in self.graph.nodes
            if (node.edge is None and (node.success_next is None or node.failure_next is None))
            or any(t not in self.nodes for t in node.successors())  # a dangling target is reported on its own
        }
        callers: dict[str, set[str]] = {}
        for node in self.graph.nodes:
            for target in node.successors():
                callers.setdefault(target, set()).add(node.name)
        queue = list(finishes)
        while queue:
            for caller in callers.get(queue.pop(), ()):
                if caller not in finishes:
                    finishes.add(caller)
                    queue.append(caller)
        for node in self.graph.nodes:
            if node.name in finishes:
                continue
            for column, targets in node.next_cells():
                if not isinstance(targets, tuple):
                    continue
                back = [t for t in targets if (self.nodes[t].row or 0) <= (node.row or 0)]
                if back:
                    self.add(
                        node,
                        column,
                        "endless-loop",
                        f"{column} of {node.name!r} goes back to {back[0]!r}, closing a loop with no way out: no "
                        "node of it can end the graph, so a run repeats it until the recursion limit stops it "
                        f"({self.graph.step_limit} steps for this graph; `--recursion-limit STEPS` sets it)",
                        "give a node of the loop a way out (a Success_Next or Failure_Next that leaves it, or an "
                        "empty next cell that ends the graph)",
                        warning=True,
                    )

    def unset_inputs(self) -> None:
        if not self.graph.nodes:
            return
        entry = self.nodes[self.graph.entry]
        provided = {state_key(f, output=False) for f in entry.inputs} | SYSTEM_KEYS
        if self.has_router:
            provided |= {state_key(f, output=True) for n in self.graph.nodes for f in n.outputs}
        reads: dict[str, set[str]] = {}
        for node in self.graph.nodes:
            if node is not entry:
                wanted = {state_key(f, output=False) for f in node.inputs} - provided
                reads.setdefault(node.name, set()).update(wanted)
        if not any(reads.values()):  # nothing to look for (a graph of one node, say)
            return
        called = self.called
        successors: dict[str, set[str]] = {}
        writes: dict[str, set[str]] = {}
        for node in self.graph.nodes:  # a called node runs after its caller
            nexts = {n for n in node.successors() | called[node.name] if n in self.nodes}
            successors.setdefault(node.name, set()).update(nexts)
            writes.setdefault(node.name, set()).update(state_key(f, output=True) for f in node.outputs)
        unset = unwritten(list(self.nodes), successors, writes, reads)
        for node in self.graph.nodes:
            if node is entry:
                continue
            for field in node.inputs:
                key = state_key(field, output=False)
                if key in unset.get(node.name, ()):
                    self.add(
                        node,
                        "Input_Fields",
                        "unset-input",
                        f"no node before {node.name!r} writes {key!r}, and the entry node does not read it: "
                        "it must be in the initial state",
                        "check the spelling against the Output_Field of earlier nodes, or pass it in the initial state",
                        warning=True,
                    )


def fan_outs(graph: GraphSpec) -> list[tuple[str, tuple[str, ...]]]:
    """Every parallel fan-out: `(source node, its targets)` for each next cell with two or more nodes."""
    return [
        (node.name, targets)
        for node in graph.nodes
        for _, targets in node.next_cells()
        if isinstance(targets, tuple) and len(set(targets)) > 1
    ]


def branch_depths(graph: GraphSpec, source: str, targets: Iterable[str]) -> list[dict[str, int]]:
    """For each branch of a fan-out, the nodes only that branch reaches and their distance from `source`."""
    reaches = _reaches(graph, source, targets, limit=None)
    assert reaches is not None  # no limit
    return _unique(reaches)


def _reaches(
    graph: GraphSpec, source: str, targets: Iterable[str], *, limit: int | None
) -> list[dict[str, int]] | None:
    """What each branch of a fan-out reaches (by distance from `source`); None past `limit` nodes in all."""
    reaches: list[dict[str, int]] = []
    for target in targets:
        reach = _distances(graph, target, stop=source, limit=limit)
        if reach is None:
            return None
        if limit is not None:
            limit -= len(reach)
        reaches.append(reach)
    return reaches


def _unique(reaches: list[dict[str, int]]) -> list[dict[str, int]]:
    """Each branch's nodes that no other branch reaches."""
    counts: dict[str, int] = {}
    for reach in reaches:
        for name in reach:
            counts[name] = counts.get(name, 0) + 1
    return [{n: d for n, d in reach.items() if counts[n] == 1} for reach in reaches]


def _distances(graph: GraphSpec, start: str, *, stop: str, limit: int | None = None) -> dict[str, int] | None:
    """The nodes reachable from `start` without passing `stop`, by distance; None past `limit` of them."""
    nodes = graph.by_name
    if start not in nodes:
        return {}
    if limit is not None and limit < 1:
        return None
    distances = {start: 1}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for nxt in nodes[current].successors():
            if nxt in nodes and nxt != stop and nxt not in distances:
                distances[nxt] = distances[current] + 1
                queue.append(nxt)
        if limit is not None and len(distances) > limit:
            return None
    return distances


def _reachable(graph: GraphSpec, starts: list[str], called: dict[str, set[str]]) -> set[str]:
    nodes = graph.by_name
    seen = set(starts)
    queue = deque(starts)
    while queue:
        current = queue.popleft()
        for nxt in nodes[current].successors() | called.get(current, set()):
            if nxt in nodes and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen
