"""Which graph a `graph` node runs: the modern `workflow` Context key and the AgentMap 0.9 spellings.

Read in this order:

1. `workflow` (or `graph`): `::Inner`, `other.csv::Inner` or `other.csv`; `{workflow=::Inner}` in a file.
2. `workflow_field`: the name of a state key holding such a reference, read when the node runs.
3. `subgraph_name` (with `csv_path`): the 0.9 Context `subgraph_name:X,csv_path:Y`, read into these keys.
4. The Prompt naming the graph (`Inner`, `other.csv::Inner`), the plain-text Context holding the CSV path.

Every file path resolves against the workflow's folder and must stay under it or a root configured in
`paths.allowed_roots` (see `agentmap._paths.confine`).

`Walk` checks what a graph node calls, and what that calls in turn, once per validation: each workflow file is
read once and each graph's subgraphs are walked once, however many graph nodes reach it (a chain of 500 graphs
each calling the next is 500 steps, not 500 times 500 re-reads of the file).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap._paths import OutsideRootsError, allowed_roots, confine, widen_hint
from agentmap.errors import AgentMapError

if TYPE_CHECKING:
    from agentmap.spec.models import GraphSpec, Workflow

__all__ = ["Reference", "Walk", "current_walk", "reference", "resolve", "walking"]

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
    written, sep, name = text.partition("::")
    if written in ("", ".") and workflow_file is not None:  # `::Inner`: this file (as `parse_selector` reads it)
        return workflow_file, (name.strip() or None) if sep else None
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


_Key = tuple[Path, str]
"""A graph as the walk knows it: its file (resolved) and its name."""


@dataclass
class Walk:
    """What one validation learned about the graphs graph nodes call: each file read, each graph's verdict.

    `problem` is the one question asked of it: what is wrong below a graph node (a cycle, a file or graph that
    cannot be read), answered once per graph for the whole validation.
    """

    _files: dict[tuple[Path, tuple[Path, ...], Path | None], Workflow] = field(default_factory=dict)
    _verdicts: dict[_Key, str | None] = field(default_factory=dict)
    _resolved: dict[Path, Path] = field(default_factory=dict)
    _selected: dict[tuple[Path, str | None], tuple[_Key, GraphSpec] | Exception] = field(default_factory=dict)
    _reading: tuple[Mapping[str, Any], tuple[Path, ...], Path | None] | None = None

    def remember(self, path: Path, workflow: Workflow, settings: Mapping[str, Any]) -> None:
        """`workflow` is what `path` reads as under `settings` (the file being validated, already read)."""
        self._files[self._file_key(path, settings)] = workflow

    def problem(
        self, path: Path, graph: str | None, caller: tuple[Path | None, str], settings: Mapping[str, Any]
    ) -> str | None:
        """What is wrong with graph `graph` of `path` as called by graph `caller` (its file and name): a cycle back
        to the caller or among the graphs below, or a graph or file there that cannot be read; None when nothing.

        A reference below that names no fixed graph (`workflow_field`) or that the graph node's own check refuses
        is not followed: that node's check reports it.
        """
        try:
            key, spec = self._graph(path, graph, settings)
        except (ValueError, AgentMapError) as exc:
            return str(exc)
        above = {(self._resolve(caller[0]), caller[1])} if caller[0] is not None else set()
        if key in above:
            return _cycle(key)
        return self._search(key, _called(path, spec, settings), above, settings)

    def _search(
        self, start: _Key, calls: Iterator[tuple[Path, str | None]], above: set[_Key], settings: Mapping[str, Any]
    ) -> str | None:
        """Depth first from `start`, each graph once: the first problem found, kept for every graph on the way."""
        if start in self._verdicts:
            return self._verdicts[start]
        stack: list[tuple[_Key, Iterator[tuple[Path, str | None]]]] = [(start, calls)]
        on_path = above | {start}
        problem: str | None = None
        while stack and problem is None:
            key, below = stack[-1]
            call = next(below, None)
            if call is None:
                stack.pop()
                on_path.discard(key)
                self._verdicts[key] = None
                continue
            try:
                child, child_spec = self._graph(*call, settings)
            except (ValueError, AgentMapError) as exc:
                problem = str(exc)
                break
            if child in on_path:
                problem = _cycle(child)
            elif child not in self._verdicts:
                stack.append((child, _called(call[0], child_spec, settings)))
                on_path.add(child)
            else:
                problem = self._verdicts[child]
        for key, _ in stack:  # every graph still on the path reaches the problem
            self._verdicts[key] = problem
        return problem

    def _graph(self, path: Path, graph: str | None, settings: Mapping[str, Any]) -> tuple[_Key, GraphSpec]:
        """The graph a reference names (its key and spec), or the error selecting it raised, found once."""
        from agentmap.runtime.api import select_graph

        asked = (self._resolve(path), graph)
        if asked not in self._selected:
            try:
                spec = select_graph(self._workflow(path, settings), graph)
                self._selected[asked] = ((asked[0], spec.name), spec)
            except (ValueError, AgentMapError) as exc:
                self._selected[asked] = exc
        found = self._selected[asked]
        if isinstance(found, Exception):
            raise found
        return found

    def _workflow(self, path: Path, settings: Mapping[str, Any]) -> Workflow:
        from agentmap.spec.loader import read_workflow

        key = self._file_key(path, settings)
        if key not in self._files:
            self._files[key] = read_workflow(path, roots=key[1], prompts_dir=key[2])[0]
        return self._files[key]

    def _file_key(self, path: Path, settings: Mapping[str, Any]) -> tuple[Path, tuple[Path, ...], Path | None]:
        from agentmap.spec.prompts import prompts_folder

        if self._reading is None or self._reading[0] is not settings:  # one validation, one settings: found once
            self._reading = (settings, tuple(allowed_roots(settings)), prompts_folder(settings))
        return self._resolve(path), self._reading[1], self._reading[2]

    def _resolve(self, path: Path) -> Path:
        if path not in self._resolved:
            found = self._resolved[path] = path.resolve()
            self._resolved.setdefault(found, found)  # the resolved path, asked in turn, is found by identity
        return self._resolved[path]


def _cycle(key: _Key) -> str:
    return f"graph {key[1]!r} of {key[0].name} contains itself through graph nodes (a cycle)"


def _called(path: Path, spec: GraphSpec, settings: Mapping[str, Any]) -> Iterator[tuple[Path, str | None]]:
    """The fixed references of `spec`'s graph nodes (`spec` read from `path`), as `(file, graph)`."""
    from agentmap.agents.registry import normalize_type

    for node in spec.nodes:
        if normalize_type(node.agent_type) != "graph":
            continue
        try:
            ref = reference(node.context, node.prompt)
            if ref.state_key is None:
                yield resolve(ref.text, path.parent, path, settings)
        except ValueError:
            continue


_WALK: ContextVar[Walk | None] = ContextVar("agentmap_subgraph_walk", default=None)


@contextmanager
def walking(walk: Walk) -> Iterator[Walk]:
    """While inside, the checks of graph nodes share `walk` (see `current_walk`)."""
    token = _WALK.set(walk)
    try:
        yield walk
    finally:
        _WALK.reset(token)


def current_walk() -> Walk:
    """The walk of the validation under way, or a new one for a check made on its own."""
    return _WALK.get() or Walk()
