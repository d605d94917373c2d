"""What an edit does: the changes between two revisions of a graph, and what they mean for a thread waiting.

`compare(old, new)` lists every change (a node added, removed or renamed: the same row content under a new name;
its agent type, prompt, Context, inputs, outputs, edges; state keys added, removed or renamed; a definition file or
a Python file changed) and, for a thread paused or interrupted at a node of `old`, whether moving it to `new` is

- `safe`: it goes on at `new` as it is (a changed prompt, edge or agent is what the edit is for);
- `needs-migration`: a migration map says how (`runtime.migration`), and the lines that would do it are given: the
  node it waits at was renamed (`node,Old,New`), a state key it holds was renamed (`key,old,new`), or `new` needs an
  input the thread never got (`default,key,VALUE`);
- `unsafe`, and why: the node it waits at is gone, no longer asks the question it waits on, or runs a subgraph whose
  saved steps would be lost, or a node finished beside it in the step it waits in (moving would run it again).

`agentmap diff` prints it; `Thread.move` refuses what is not safe (or made safe by a map).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentmap.agents.registry import normalize_type
from agentmap.runtime.inputs import missing_inputs
from agentmap.spec.models import FuncRef, GraphSpec, NodeSpec, Targets
from agentmap.spec.validation import SYSTEM_KEYS

if TYPE_CHECKING:
    from agentmap.runtime.migration import Migration
    from agentmap.runtime.revisions import Revision
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["VERDICTS", "Change", "Changes", "Position", "Verdict", "compare"]

VerdictName = Literal["safe", "needs-migration", "unsafe"]
VERDICTS: tuple[VerdictName, ...] = ("safe", "needs-migration", "unsafe")


@dataclass(frozen=True)
class Change:
    """One change: its `kind` (`node-added`, `node-removed`, `node-renamed`, `agent-type`, `prompt`, `context`,
    `inputs`, `outputs`, `edges`, `description`, `tools`, `key-added`, `key-removed`, `key-renamed`, `file`, `code`),
    the node (or key, or file) it is about, the old and new values, and a sentence."""

    kind: str
    subject: str
    old: Any
    new: Any
    text: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return {"kind": self.kind, "subject": self.subject, "old": self.old, "new": self.new, "text": self.text}


@dataclass(frozen=True)
class Position:
    """Where a thread waits on `old`: its next nodes, whether it is paused (a question waits), the state keys it
    holds (None: unknown, those that may have been written before), and the nodes that finished beside it in the
    step it waits in, and whether it waits at a join of branches naming `joins`."""

    nodes: tuple[str, ...]
    paused: bool
    keys: frozenset[str] | None = None
    finished: tuple[str, ...] = ()
    joins: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """What moving a thread waiting at `nodes` to `new` would do: `verdict`, the reasons, and the lines of a
    migration map that would make it safe (for `needs-migration`)."""

    nodes: tuple[str, ...]
    verdict: VerdictName
    reasons: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return {"at": list(self.nodes), "verdict": self.verdict, "reasons": list(self.reasons), "map": list(self.lines)}


@dataclass(frozen=True)
class Changes:
    """The changes from `old` to `new` (see the module docstring), and what they mean for threads waiting."""

    old: CompiledWorkflow
    new: CompiledWorkflow
    changes: tuple[Change, ...]
    renamed_nodes: Mapping[str, str] = field(default_factory=dict)
    renamed_keys: Mapping[str, str] = field(default_factory=dict)

    def verdict(self, position: Position, migration: Migration | None = None) -> Verdict:
        """What moving a thread waiting at `position` to `new` would do (with `migration`, if given)."""
        unsafe: list[str] = []
        needed: list[tuple[str, str]] = []  # (reason, map line)
        nodes = dict(migration.nodes) if migration is not None else {}
        targets = [self._node_verdict(name, position.paused, nodes, unsafe, needed) for name in position.nodes]
        for name in position.finished:
            unsafe.append(f"node {name!r} finished in the step the thread waits in; moving would run it again")
        for name in position.joins:
            if name not in self.new.spec.by_name or name in self.renamed_nodes:
                unsafe.append(f"it waits at a join of branches with node {name!r}, which {self._gone(name)}")
        needed += self._key_needs(position, [t for t in targets if t is not None], migration)
        if unsafe:
            return Verdict(position.nodes, "unsafe", tuple(unsafe))
        if needed:
            reasons, lines = zip(*needed, strict=True)
            return Verdict(position.nodes, "needs-migration", reasons, lines)
        return Verdict(position.nodes, "safe")

    def _gone(self, name: str) -> str:
        renamed = self.renamed_nodes.get(name)
        return f"was renamed {renamed!r}" if renamed else "is not in the new revision"

    def _node_verdict(
        self, name: str, paused: bool, mapped: Mapping[str, str], unsafe: list[str], needed: list[tuple[str, str]]
    ) -> str | None:
        """The node of `new` a thread waiting at `name` goes on at (None: none), what is unsafe or needed there."""
        old_node = self.old.spec.by_name.get(name)
        if old_node is not None and normalize_type(old_node.agent_type) == "graph":
            unsafe.append(f"node {name!r} runs a subgraph, whose saved steps would be lost")
            return None
        target = mapped.get(name)
        if target is None and name in self.new.spec.by_name:
            target = name
        if target is None:
            renamed = self.renamed_nodes.get(name)
            if renamed is None:
                unsafe.append(
                    f"node {name!r}, where it waits, is not in the new revision (a map line `node,{name},NODE` "
                    "names the node it goes on at)"
                )
                return None
            needed.append((f"node {name!r}, where it waits, was renamed {renamed!r}", f"node,{name},{renamed}"))
            target = renamed
        twin = self.new.spec.by_name.get(target)
        before = normalize_type(old_node.agent_type) if old_node is not None else None
        after = normalize_type(twin.agent_type) if twin is not None else None
        if paused and before != after and target not in self.new.pausing_nodes():
            unsafe.append(
                f"node {name!r} waits on a question, which node {target!r} of the new revision (agent type "
                f"{after}, not {before}) does not ask"
            )
        return target

    def _key_needs(
        self, position: Position, targets: Sequence[str], migration: Migration | None
    ) -> list[tuple[str, str]]:
        """What the thread needs of its state to go on at `targets` of `new`: renamed keys it holds under the old
        name, and keys a node still to run reads that nothing still to run writes and the thread never got (which
        it would have got going on at `old`)."""
        held = position.keys if position.keys is not None else self._may_hold(position.nodes)
        keys = dict(migration.keys) if migration is not None else {}
        defaults = dict(migration.defaults) if migration is not None else {}
        needed: list[tuple[str, str]] = []
        renamed_to: set[str] = set()
        for old_key, new_key in self.renamed_keys.items():
            if old_key in held and new_key not in held and keys.get(old_key) != new_key:
                needed.append((f"state key {old_key!r} it holds was renamed {new_key!r}", f"key,{old_key},{new_key}"))
            if old_key in held:
                renamed_to.add(new_key)
        have = {*held, *keys.values(), *defaults, *renamed_to}
        lacking_then = _never_written(self.old.spec, position.nodes, held)
        for key, readers in _never_written(self.new.spec, targets, have).items():
            if key in lacking_then:
                continue  # it would read None going on at the old revision too: moving changes nothing there
            nodes = ", ".join(repr(n) for n in readers)
            reason = f"the new revision needs state key {key!r} (read by {nodes}), which the thread never got"
            needed.append((reason, f"default,{key},VALUE"))
        return needed

    def _may_hold(self, nodes: Sequence[str]) -> frozenset[str]:
        """The state keys a thread waiting at `nodes` of `old` may hold: the inputs it started with and what the
        nodes before them write."""
        spec = self.old.spec
        before: set[str] = set()
        queue = list(nodes)
        while queue:
            name = queue.pop()
            for node in spec.nodes:
                if name in _targets_of(node) and node.name not in before:
                    before.add(node.name)
                    queue.append(node.name)
        written = {k for n in spec.nodes if n.name in before for k in n.writes}
        return frozenset(written | set(missing_inputs(spec, {})))

    def positions(self) -> list[Position]:
        """A thread waiting at each node of `old` (paused at those that pause, interrupted at the others)."""
        pausing = set(self.old.pausing_nodes())
        return [Position((n.name,), n.name in pausing) for n in self.old.spec.nodes]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (the changes and the renames found)."""
        return {
            "changes": [c.to_dict() for c in self.changes],
            "renamed_nodes": dict(self.renamed_nodes),
            "renamed_keys": dict(self.renamed_keys),
        }


def _targets_of(node: NodeSpec) -> set[str]:
    return set(node.successors())


def _to_run(spec: GraphSpec, start: Iterable[str]) -> set[str]:
    """The nodes of `spec` a thread going on at `start` may run (all of them past a `func:` router, whose targets
    are known only when it runs)."""
    found: set[str] = set()
    queue = [n for n in start if n in spec.by_name]
    while queue:
        name = queue.pop()
        if name in found:
            continue
        found.add(name)
        node = spec.by_name[name]
        if any(isinstance(targets, FuncRef) for _, targets in node.next_cells()):
            return set(spec.by_name)
        queue += [t for t in node.successors() if t in spec.by_name]
    return found


def _never_written(spec: GraphSpec, start: Iterable[str], held: Iterable[str]) -> dict[str, list[str]]:
    """The keys nodes of `spec` still to run after `start` read, that none of them writes and `held` lacks: {key:
    [nodes reading it]}, in row order."""
    to_run = _to_run(spec, start)
    written = {k for node in spec.nodes if node.name in to_run for k in node.writes} | set(held) | SYSTEM_KEYS
    missing: dict[str, list[str]] = {}
    for node in spec.nodes:
        if node.name in to_run:
            for key in node.reads:
                if key not in written:
                    missing.setdefault(key, []).append(node.name)
    return missing


def _signature(node: NodeSpec) -> str:
    """A node's row without its name, row number and next cells (what a rename keeps)."""
    return json.dumps(
        [
            normalize_type(node.agent_type),
            node.prompt,
            node.description,
            node.context,
            list(node.inputs),
            list(node.outputs),
            node.tool_source,
            list(node.available_tools),
        ],
        sort_keys=True,
        default=str,
    )


def _renames(old: GraphSpec, new: GraphSpec) -> dict[str, str]:
    removed = [n for n in old.nodes if n.name not in new.by_name]
    added = [n for n in new.nodes if n.name not in old.by_name]
    renames: dict[str, str] = {}
    for node in removed:
        match = next((a for a in added if a.name not in renames.values() and _signature(a) == _signature(node)), None)
        if match is not None:
            renames[node.name] = match.name
    return renames


def _keys(graph: GraphSpec) -> list[str]:
    found: dict[str, None] = {}
    for node in graph.nodes:
        found.update(dict.fromkeys(k for k in (*node.reads, *node.writes) if k not in SYSTEM_KEYS))
    return list(found)


def _key_renames(old: GraphSpec, new: GraphSpec, nodes: Mapping[str, str]) -> dict[str, str]:
    """Keys of `old` gone from `new` that a node kept (by name or rename) reads or writes in their place."""
    old_keys, new_keys = set(_keys(old)), set(_keys(new))
    seen: dict[str, set[str]] = {}
    for node in old.nodes:
        twin = new.by_name.get(nodes.get(node.name, node.name))
        if twin is None:
            continue
        for before, after in ((node.reads, twin.reads), (node.writes, twin.writes)):
            if len(before) != len(after):
                continue
            for a, b in zip(before, after, strict=True):
                if a != b and a not in new_keys and b not in old_keys:
                    seen.setdefault(a, set()).add(b)
    return {a: next(iter(b)) for a, b in seen.items() if len(b) == 1}


def _targets_text(targets: Targets | None) -> str:
    if targets is None:
        return ""
    return str(targets) if not isinstance(targets, tuple) else "|".join(targets)


def _edges(node: NodeSpec, renames: Mapping[str, str]) -> dict[str, str]:
    """The next cells of `node`, targets renamed as the edit renamed them (so a rename alone changes no edge)."""
    cells = {}
    for column, targets in node.next_cells():
        if isinstance(targets, tuple):
            targets = tuple(renames.get(t, t) for t in targets)
        cells[column] = _targets_text(targets)
    return cells


_FIELDS: tuple[tuple[str, str], ...] = (
    ("agent-type", "agent type"),
    ("prompt", "prompt"),
    ("context", "Context"),
    ("inputs", "Input_Fields"),
    ("outputs", "Output_Field"),
    ("description", "Description"),
    ("tools", "tools"),
)


def _field(node: NodeSpec, kind: str) -> Any:
    return {
        "agent-type": normalize_type(node.agent_type),
        "prompt": node.prompt,
        "context": node.context,
        "inputs": list(node.inputs),
        "outputs": list(node.outputs),
        "description": node.description,
        "tools": [node.tool_source, *node.available_tools],
    }[kind]


def _node_changes(old: GraphSpec, new: GraphSpec, renames: Mapping[str, str]) -> Iterable[Change]:
    for node in old.nodes:
        name = renames.get(node.name, node.name)
        twin = new.by_name.get(name)
        if twin is None:
            yield Change("node-removed", node.name, node.name, None, f"node {node.name!r} removed")
            continue
        if name != node.name:
            yield Change("node-renamed", node.name, node.name, name, f"node {node.name!r} renamed {name!r}")
        for kind, label in _FIELDS:
            before, after = _field(node, kind), _field(twin, kind)
            if before != after:
                yield Change(kind, name, before, after, f"node {name!r}: {label} changed")
        edges_before, edges_after = _edges(node, renames), _edges(twin, {})
        if edges_before != edges_after:
            yield Change("edges", name, edges_before, edges_after, f"node {name!r}: next nodes changed")
    for node in new.nodes:
        if node.name not in old.by_name and node.name not in renames.values():
            yield Change("node-added", node.name, None, node.name, f"node {node.name!r} added")


def _key_changes(old: GraphSpec, new: GraphSpec, renamed: Mapping[str, str]) -> Iterable[Change]:
    old_keys, new_keys = _keys(old), _keys(new)
    for key in old_keys:
        if key in renamed:
            yield Change("key-renamed", key, key, renamed[key], f"state key {key!r} renamed {renamed[key]!r}")
        elif key not in new_keys:
            yield Change("key-removed", key, key, None, f"state key {key!r} removed")
    for key in new_keys:
        if key not in old_keys and key not in renamed.values():
            yield Change("key-added", key, None, key, f"state key {key!r} added")


def _file_changes(old: Revision | None, new: Revision | None) -> Iterable[Change]:
    if old is None or new is None:
        return
    for kind, before, after, label in (
        ("file", old.files, new.files, "file"),
        ("code", old.code, new.code, "Python file"),
    ):
        for path in sorted({*before, *after}):
            if path == old.workflow or path == new.workflow:
                continue
            if before.get(path) != after.get(path):
                what = "added" if path not in before else "removed" if path not in after else "changed"
                yield Change(kind, path, before.get(path), after.get(path), f"{label} {path} {what}")


def compare(old: CompiledWorkflow, new: CompiledWorkflow) -> Changes:
    """The changes from `old` to `new` (two compiled revisions of a graph; see the module docstring)."""
    renames = _renames(old.spec, new.spec)
    keys = _key_renames(old.spec, new.spec, renames)
    found = (
        *_node_changes(old.spec, new.spec, renames),
        *_key_changes(old.spec, new.spec, keys),
        *_file_changes(old.revision, new.revision),
    )
    return Changes(old, new, tuple(found), renames, keys)
