"""What some node may have written before each node of a graph runs: one pass over the graph, whatever its shape.

The nodes are taken in the order of the graph's strongly connected components (a loop is one component), so each
edge is followed once: a chain of 30,000 nodes written last to first is 30,000 steps, not 30,000 passes over it.
Only the keys asked about get a bit, and what is known before a component is dropped once it has been handed on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

__all__ = ["components", "unwritten"]


def unwritten(
    order: Sequence[str],
    successors: Mapping[str, set[str]],
    writes: Mapping[str, set[str]],
    reads: Mapping[str, set[str]],
) -> dict[str, set[str]]:
    """The keys each node reads that no node that may run before it writes.

    Args:
        order: The nodes, in file order.
        successors: Each node's next nodes (those named that are nodes of the graph).
        writes: The keys each node writes.
        reads: The keys each node reads that must be written before it (the entry node's and the system keys left out).

    Returns:
        For each node with such a key, those keys.
    """
    bit = {key: i for i, key in enumerate(dict.fromkeys(k for keys in reads.values() for k in keys))}
    found: dict[str, set[str]] = {}
    incoming: dict[int, int] = {}
    parts = components(order, successors)
    part = {name: index for index, members in enumerate(parts) for name in members}
    for index in range(len(parts) - 1, -1, -1):  # a component before those it leads to
        members = parts[index]
        before = incoming.pop(index, 0)
        # Each key's mask is made when it is needed: kept for every key, the masks alone would grow as the square.
        written = {name: sum(1 << bit[k] for k in writes.get(name, ()) if k in bit) for name in members}
        if len(members) > 1 or members[0] in successors.get(members[0], ()):  # a loop: each may run after the others
            for name in members:
                before |= written[name]
        for name in members:
            missing = {key for key in reads.get(name, ()) if not before >> bit[key] & 1}
            if missing:
                found[name] = missing
            for nxt in successors.get(name, ()):
                if part[nxt] != index:
                    incoming[part[nxt]] = incoming.get(part[nxt], 0) | before | written[name]
    return found


def components(order: Sequence[str], successors: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of the graph, each after every component it leads to (Tarjan's order).

    Iterative, so a chain of any length needs no deeper stack.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in order:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(successors.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            name, nexts = work[-1]
            nxt = next(nexts, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(successors.get(nxt, ()))))
                elif nxt in on_stack:
                    low[name] = min(low[name], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[name])
            if low[name] == index[name]:
                members: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == name:
                        break
                found.append(members)
    return found
