"""Migration maps: how a thread moves to a revision that renamed the node it waits at or a key it holds.

A small CSV file (a `kind,old,new` header, then one line per rename or default)

```
kind,old,new
node,Review,Approve
key,amount,total
default,priority,normal
```

or a YAML file (`nodes: {Review: Approve}`, `keys: {amount: total}`, `defaults: {priority: normal}`). A `node` line
sends a thread waiting at the old node on at the new one; a `key` line moves a state key's value to its new name; a
`default` line gives a key the new revision needs and the thread never got (the value is JSON when it reads as JSON:
`3`, `true`, `"text"`; else the text as written). `agentmap diff` prints the lines a move needs; `agentmap resume ID
--migrate MAP` applies them.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError, ErrorCode, Location, WorkflowFileError

if TYPE_CHECKING:
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["KINDS", "Migration", "read_migration"]

KINDS = ("node", "key", "default")


@dataclass(frozen=True)
class Migration:
    """A migration map: `nodes` old node -> new node, `keys` old state key -> new key, `defaults` key -> value.

    `where` remembers each entry's place in its file (`(kind, old)` -> (line, column)), for errors.
    """

    nodes: Mapping[str, str] = field(default_factory=dict)
    keys: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    file: str | None = None
    where: Mapping[tuple[str, str], int | None] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The map as CSV lines (what a moved thread's record keeps)."""
        out = [f"node,{a},{b}" for a, b in self.nodes.items()] + [f"key,{a},{b}" for a, b in self.keys.items()]
        return out + [f"default,{k},{json.dumps(v, default=str)}" for k, v in self.defaults.items()]

    def check(self, old: CompiledWorkflow, new: CompiledWorkflow, held: frozenset[str] = frozenset()) -> None:
        """Refuse a map naming a node or a state key that does not exist (`bad-migration`): an old node not in
        `old`, a new node not in `new`, an old key neither `old` uses nor the thread holds (`held`), a new key or a
        default's key `new` does not use.

        Raises:
            ConfigError: The first such line, located (`bad-migration`).
        """
        old_keys, new_keys = _used(old) | held, _used(new)
        old_nodes, new_nodes = set(old.spec.by_name), set(new.spec.by_name)
        checks: list[tuple[str, str, str, set[str] | frozenset[str], str]] = []
        for a, b in self.nodes.items():
            checks += [("node", a, a, old_nodes, "old"), ("node", a, b, new_nodes, "new")]
        for a, b in self.keys.items():
            checks += [("key", a, a, old_keys, "old"), ("key", a, b, new_keys, "new")]
        checks += [("default", a, a, new_keys, "old") for a in self.defaults]
        for kind, entry, name, known, column in checks:
            if name in known:
                continue
            what = "node" if kind == "node" else "state key"
            where = "the new revision" if column == "new" or kind == "default" else "the thread's revision"
            if kind == "key" and column == "old":
                where += " nor in its state"
            raise self._error(kind, entry, name, column, f"{what} {name!r} is not in {where}", sorted(known))

    def _error(self, kind: str, entry: str, name: str, column: str, message: str, choices: list[str]) -> ConfigError:
        close = difflib.get_close_matches(name, choices, n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        line = self.where.get((kind, entry))
        return ConfigError(
            f"{message} (migration map, the {kind} line of {entry!r})",
            code=ErrorCode.BAD_MIGRATION,
            location=Location(file=self.file, row=line, column=column) if self.file else None,
            hint=f"{guess}{'they are' if len(choices) != 1 else 'it is'}: {', '.join(choices) or 'none'}",
        )


def _used(app: CompiledWorkflow) -> frozenset[str]:
    return frozenset(k for node in app.spec.nodes for k in (*node.reads, *node.writes))


def read_migration(path: str | Path) -> Migration:
    """The migration map in the CSV or YAML file `path`.

    Raises:
        WorkflowFileError: The file is missing (`file-not-found`).
        ConfigError: It is not a map: a bad header, an unknown kind, a line without its two values, a node or key
            named twice (`bad-migration`, located).
    """

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkflowFileError(
            f"cannot read the migration map {file}: {getattr(exc, 'strerror', None) or exc}",
            hint="name the CSV or YAML file that maps old nodes and keys to new ones (see csv_specs/versions.md)",
        ) from None
    if file.suffix.lower() in (".yaml", ".yml"):
        return _from_yaml(file, text)
    return _from_csv(file, text)


def _bad(file: Path, message: str, row: int | None = None, column: str | None = None) -> ConfigError:
    return ConfigError(
        message,
        code=ErrorCode.BAD_MIGRATION,
        location=Location(file=str(file), row=row, column=column),
        hint="a migration map is CSV with the header kind,old,new (kinds: node, key, default), or YAML with "
        "nodes:, keys: and defaults: mappings (see csv_specs/versions.md)",
    )


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _from_csv(file: Path, text: str) -> Migration:
    rows = [(n, r) for n, r in enumerate(csv.reader(io.StringIO(text)), start=1) if r and any(c.strip() for c in r)]
    rows = [(n, r) for n, r in rows if not r[0].lstrip().startswith("#")]
    if not rows or [c.strip().lower() for c in rows[0][1]] != ["kind", "old", "new"]:
        raise _bad(file, "the migration map's first line must be the header kind,old,new", rows[0][0] if rows else 1)
    entries: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
    where: dict[tuple[str, str], int | None] = {}
    for line, row in rows[1:]:
        cells = [c.strip() for c in row] + ["", ""]
        kind, old, new = cells[0].lower(), cells[1], cells[2]
        if kind not in KINDS:
            raise _bad(file, f"unknown kind {cells[0]!r}: a line moves a node, a key, or gives a default", line, "kind")
        if not old or (not new and kind != "default"):
            raise _bad(file, f"this {kind} line needs both its old and new value", line, "old" if not old else "new")
        if old in entries[kind]:
            raise _bad(file, f"{kind} {old!r} is mapped twice", line, "old")
        entries[kind][old] = _value(new) if kind == "default" else new
        where[(kind, old)] = line
    return Migration(entries["node"], entries["key"], entries["default"], str(file), where)


def _from_yaml(file: Path, text: str) -> Migration:
    import yaml

    try:
        data: Any = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise _bad(file, f"the migration map is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping) or set(data) - {"nodes", "keys", "defaults"}:
        raise _bad(file, "the migration map must be a mapping of nodes:, keys: and defaults:")
    parts: dict[str, dict[str, Any]] = {}
    for section in ("nodes", "keys", "defaults"):
        value = data.get(section) or {}
        if not isinstance(value, Mapping):
            raise _bad(file, f"{section}: must map old names to new ones (name: value)", column=section)
        parts[section] = {str(k): (v if section == "defaults" else str(v)) for k, v in value.items()}
    where = {(kind, name): None for kind, section in zip(KINDS, parts, strict=True) for name in parts[section]}
    return Migration(parts["nodes"], parts["keys"], parts["defaults"], str(file), where)
