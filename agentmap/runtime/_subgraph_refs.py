"""Which graph a `graph` node runs: the modern `workflow` Context key and the AgentMap 0.9 spellings.

Read in this order:

1. `workflow` (or `graph`): `::Inner`, `other.csv::Inner` or `other.csv`; `{workflow=::Inner}` in a file.
2. `workflow_field`: the name of a state key holding such a reference, read when the node runs.
3. `subgraph_name` (with `csv_path`): the 0.9 Context `subgraph_name:X,csv_path:Y`, read into these keys.
4. The Prompt naming the graph (`Inner`, `other.csv::Inner`), the plain-text Context holding the CSV path.

Every file path resolves against the workflow's folder and must stay under it or a root configured in
`paths.allowed_roots` (see `agentmap._paths.confine`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentmap._paths import OutsideRootsError, allowed_roots, confine, widen_hint

__all__ = ["Reference", "reference", "resolve"]

_GRAPH_NAME = re.compile(r"^[\w.\-/\\ ]*::\s*[\w.\-]+\s*$|^[\w.\-]+$")
_NEEDS = (
    'a graph node needs Context {"workflow": "::GraphName"} or {"workflow": "file.csv::GraphName"} '
    '(or {"workflow_field": "state_key"} to read it from the state)'
)


@dataclass(frozen=True)
class Reference:
    """What a graph node names: a fixed `file.csv::Graph` text, or the state key holding one.

    Attributes:
        text: The reference (`::Inner`, `other.csv::Inner`), empty for a dynamic one.
        state_key: The state key read at run time (`workflow_field`), or None.
        spelling: How the file wrote it, for messages.
    """

    text: str = ""
    state_key: str | None = None
    spelling: str = ""


def reference(context: Mapping[str, Any], prompt: str) -> Reference:
    """The reference a graph node's Context and Prompt make.

    Raises:
        ValueError: Nothing names a graph, or `workflow_field` is not a state key name.
    """
    for key in ("workflow", "graph"):
        value = str(context.get(key) or "").strip()
        if value:
            return Reference(text=value, spelling=f"{key}={value}")
    field = str(context.get("workflow_field") or "").strip()
    if field:
        if not field.isidentifier():
            raise ValueError(f"workflow_field={field!r} must name a state key (letters, digits, _)")
        return Reference(state_key=field, spelling=f"workflow_field={field}")
    name = str(context.get("subgraph_name") or "").strip()
    if name:
        path = str(context.get("csv_path") or "").strip()
        return Reference(
            text=f"{path}::{name}", spelling=f"subgraph_name:{name}" + (f",csv_path:{path}" if path else "")
        )
    title = prompt.strip()
    if title and _GRAPH_NAME.match(title):
        plain = str(context.get("context") or "").strip()
        if "::" in title:
            return Reference(text=title, spelling=f"Prompt {title}")
        return Reference(text=f"{plain}::{title}", spelling=f"Prompt {title}" + (f" with CSV {plain}" if plain else ""))
    raise ValueError(_NEEDS)


def resolve(
    text: str, base_dir: Path, workflow_file: Path | None, settings: Mapping[str, Any]
) -> tuple[Path, str | None]:
    """`(file, graph)` for a reference text; the file confined to the workflow's folder and allowed roots.

    Raises:
        ValueError: The reference is empty, names the same file without one, or leaves the allowed folders.
    """
    from agentmap.spec.loader import parse_selector

    text = text.strip()
    if not text:
        raise ValueError(_NEEDS)
    path, graph = parse_selector(text)
    if not str(path) or str(path) == ".":
        if workflow_file is None:
            raise ValueError(f"{text!r} refers to the same file, but this graph did not come from a file")
        return workflow_file, graph
    try:
        found = confine(str(path), base_dir, allowed_roots(settings))
    except OutsideRootsError as err:
        raise ValueError(
            f"subgraph file {str(path)!r} resolves to {err.path}, outside the folders a workflow may use "
            f"({', '.join(map(str, err.roots))}): {widen_hint('the subgraph file')}"
        ) from None
    if not found.exists():
        raise ValueError(_missing(path, found))
    return found, graph


def _missing(written: Path, found: Path) -> str:
    """Why `written` (as the cell has it, `found` resolved) is no file: the few nearest names, as written."""
    from agentmap.spec.readers import SUFFIXES

    message = f"subgraph file {str(written)!r} does not exist"
    folder = written.parent
    where = "the workflow's folder" if str(folder) == "." else f"{str(folder)!r}"
    try:
        names = [p.name for p in found.parent.iterdir() if p.suffix.lower() in SUFFIXES and p.is_file()]
    except OSError:
        return f"{message}: there is no folder {where} next to the workflow file"
    if not names:
        return f"{message}: {where} holds no workflow file"
    stems = {Path(name).stem: name for name in names}  # compare stems: a shared ".csv" is no likeness
    close = difflib.get_close_matches(written.stem, list(stems), n=3, cutoff=0.6)
    nearest = close or difflib.get_close_matches(written.stem, list(stems), n=3, cutoff=0.0)
    shown = [repr(str(folder / stems[stem])) for stem in nearest]
    if close:
        return f"{message}; did you mean {' or '.join(shown)}?"
    return f"{message}; the nearest names in {where}: {', '.join(shown)}"
