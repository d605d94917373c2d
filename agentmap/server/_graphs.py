"""The assistants a server offers: one per graph of the workflow files it was given.

Each graph is compiled twice through the public API: once with the server's checkpointer (runs on a
thread) and once without (stateless runs, which LangGraph's server forgets when they end). The assistant id
is a UUID derived from the graph id, so it is the same after a restart; clients may also use the graph id.

An assistant is also the graph at each of its revisions (`Assistant.at`: compiled from the files stored in the
checkpointer's database, whatever this replica's file holds): the versions of `_versions.py`, and the revision
each thread runs.
"""

from __future__ import annotations

import difflib
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.errors import AgentMapError, ConfigError, ErrorCode, WorkflowFileError
from agentmap.runtime.options import CompileOptions
from agentmap.runtime.values import state_problem

if TYPE_CHECKING:
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["Assistant", "Assistants", "InputError", "compile_graph", "open_checkpointer"]

_log = logging.getLogger("agentmap.server")
_NAMESPACE = uuid.UUID("6f0c1c5e-3c1b-4f57-9a55-7a6d1f0d2a11")
_SYSTEM_KEYS = ("last_action_success", "graph_success", "errors")
_STARTED = datetime.now(UTC).isoformat()


class InputError(AgentMapError, ValueError):
    """A run's input does not fit the graph (a key it does not know, or not an object)."""

    default_code = ErrorCode.BAD_INPUT
    exit_code = 2


def open_checkpointer(checkpoint: str) -> Any:
    """The LangGraph saver for `checkpoint` (a SQLite path, `sqlite:PATH`, `memory`, or what the runtime knows).

    The one place the server turns its `--checkpoint` into a saver, so a later runtime (Postgres, async
    savers) is switched in here. Runs stream on the event loop; a SQLite saver's async methods run its
    sync ones inline (see `_InlineAsync`), other savers' as they come.
    """
    from agentmap.runtime.checkpoint import resolve_checkpointer, sqlite_path

    path = sqlite_path(checkpoint)
    if path is not None and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    saver = resolve_checkpointer(checkpoint)
    conn = getattr(saver, "conn", None)
    if path is not None and conn is not None:
        # WAL with synchronous=NORMAL: a commit no longer waits for the disk (no corruption on a crash; a power
        # cut may lose the last steps). Every run would otherwise pay several fsyncs.
        with saver.lock:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        base = type(saver)
        served = type(f"Served{base.__name__}", (_InlineAsync, base), {"__module__": __name__})
        saver = served(conn, serde=saver.serde)
    return saver


class _InlineAsync:
    """The async methods of a SQLite saver, run on the event loop itself.

    Runs stream on the loop (`astream`), which reads and writes checkpoints through these. A write to a
    local SQLite file in WAL mode without fsync takes tens of microseconds: less than handing it to a thread
    and back (the saver's default). The write is done when the call returns, so a run's last checkpoint (its
    end, or its pause) is in the file before the run's response is sent.
    """

    # `self` is the SqliteSaver this class is mixed into (see `open_checkpointer`), which has the sync methods.
    async def aget_tuple(self: Any, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(self: Any, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for item in list(self.list(config, **kwargs)):
            yield item

    async def aput(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self.put(*args, **kwargs)

    async def aput_writes(self: Any, *args: Any, **kwargs: Any) -> None:
        self.put_writes(*args, **kwargs)

    async def adelete_thread(self: Any, thread_id: str) -> None:
        self.delete_thread(thread_id)


@dataclass
class Assistant:
    """One graph served as a LangGraph assistant.

    Attributes:
        graph_id: The graph's id: its name, or `prefix.Name` when two served graphs share a name.
        app: The graph compiled with the server's checkpointer.
        stateless: The same graph without a checkpointer, for runs without a thread.
        state_keys: Every key of the graph's state.
        input_keys: Keys some node reads and no node writes: what a caller should give.
    """

    graph_id: str
    app: CompiledWorkflow
    stateless: CompiledWorkflow
    state_keys: tuple[str, ...]
    input_keys: tuple[str, ...]
    assistant_id: str = field(init=False)
    prefix: str = field(default="", repr=False)
    """Qualifies `graph_id` when two served graphs share a name: the file's path under its served folder."""
    version: int | None = field(default=None, repr=False)
    """Its number among the assistant's versions (`_versions.py`); None until the server numbered it."""
    created_at: str = field(default=_STARTED, repr=False)
    """When its version was first served (the server's start, until it is numbered)."""
    _views: dict[str, Assistant] = field(default_factory=dict, repr=False, compare=False)
    _compiling: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _svg: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.assistant_id = str(uuid.uuid5(_NAMESPACE, self.graph_id))

    @property
    def revision(self) -> str | None:
        """The id of the revision it was compiled from (None: not from a file, or nothing recorded)."""
        revision = self.app.revision
        return revision.id if revision is not None else None

    def at(self, revision: str) -> Assistant:
        """This graph at `revision` (an assistant of its own, whose `app` never changes): this replica's compile of
        its file when that is the revision, else compiled from the revision's files stored in the checkpointer's
        database (at this replica's folder: its Python files run from here). Kept, so each revision compiles once.

        Raises:
            ConfigError: The database holds no such revision (`unknown-revision`), or it no longer compiles here
                (`revision-unloadable`).
            CorruptCheckpointError: A stored file of the revision does not match its digest.
        """
        with self._compiling:
            view = self._views.get(revision)
            if view is None:
                app, stateless = (self.app, self.stateless) if revision == self.revision else self._compile(revision)
                view = Assistant(self.graph_id, app, stateless, *_keys(app), prefix=self.prefix)
                self._views[revision] = view
            return view

    def views(self) -> list[Assistant]:
        """The graph at each revision compiled here so far (`at`)."""
        with self._compiling:
            return list(self._views.values())

    def compiled(self, revision: str) -> bool:
        """Whether `at(revision)` needs no compile."""
        return revision in self._views or revision == self.revision

    def _compile(self, revision: str) -> tuple[CompiledWorkflow, CompiledWorkflow]:
        from agentmap.runtime.revisions import compile_at, find_revision

        saver = self.app.graph.checkpointer
        stored = find_revision(saver, revision)
        file = Path(str(self.app.spec.file)).parent / stored.workflow
        app = compile_at(saver, revision, file, self.app.name, self.app.options)
        return app, compile_at(saver, revision, file, self.app.name, self.stateless.options)

    def refresh(self, fresh: Assistant) -> bool:
        """Take `fresh`'s compile of the file (a reload); whether its revision is another one. The views of earlier
        revisions are kept: runs and threads on them go on."""
        changed = fresh.revision != self.revision
        if changed:
            with self._compiling:
                self.app, self.stateless = fresh.app, fresh.stateless
                self.state_keys, self.input_keys = fresh.state_keys, fresh.input_keys
        return changed

    @property
    def description(self) -> str:
        """The first node's Description, or a line naming the file."""
        first = self.app.spec.nodes[0].description if self.app.spec.nodes else ""
        return first or f"graph {self.app.name} from {self.app.spec.file}"

    def to_json(self) -> dict[str, Any]:
        """The assistant as LangGraph's server returns it."""
        return {
            "assistant_id": self.assistant_id,
            "graph_id": self.graph_id,
            "name": self.graph_id,
            "description": self.description,
            "config": {},
            "context": {},
            "metadata": self.metadata(),
            "version": self.version or 1,
            "created_at": _STARTED,
            "updated_at": self.created_at,
        }

    def metadata(self) -> dict[str, Any]:
        """Its `metadata`: `file`, `input_keys`, `state_keys`, and the `revision` it is (`runtime.revisions`)."""
        return {
            "created_by": "system",
            "file": self.app.spec.file,
            "revision": self.revision,
            "input_keys": list(self.input_keys),
            "state_keys": list(self.state_keys),
        }

    def schemas(self) -> dict[str, Any]:
        """JSON schemas of the input and the state (every key may hold any JSON value)."""

        def obj(keys: Iterable[str], title: str) -> dict[str, Any]:
            properties: dict[str, Any] = {k: {} for k in keys}
            return {"title": title, "type": "object", "properties": properties, "additionalProperties": False}

        return {
            "graph_id": self.graph_id,
            "input_schema": obj(self.state_keys, f"{self.graph_id} input"),
            "output_schema": obj(self.state_keys, f"{self.graph_id} output"),
            "state_schema": obj(self.state_keys, f"{self.graph_id} state"),
            "config_schema": None,
            "context_schema": None,
        }

    def mermaid(self) -> str:
        """The graph as Mermaid text, as `agentmap export --format mermaid` writes it."""
        return self.app.draw_mermaid()

    def svg(self) -> str:
        """The graph drawn offline as SVG, as `agentmap export --format svg` writes it (drawn once)."""
        if self._svg is None:
            self._svg = self.app.draw()
        return self._svg

    def check_input(self, value: Any, where: str = "input") -> dict[str, Any]:
        """`value` as a run's input (`where` names it), or `InputError` naming the key that does not fit and the keys
        that do, or a key a run cannot start with (LangGraph's own, a system key of the wrong type)."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise InputError(
                f"the input of graph {self.graph_id!r} must be an object of state keys, not {type(value).__name__}",
                hint=f"e.g. {{{', '.join(repr(k) + ': ...' for k in self.input_keys[:2])}}}",
            )
        known = set(self.state_keys)
        for key in value:
            if key not in known:
                close = difflib.get_close_matches(str(key), self.state_keys, n=1)
                guess = f"; did you mean {close[0]!r}?" if close else ""
                raise InputError(
                    f"graph {self.graph_id!r} has no state key {key!r}{guess}",
                    hint=f"state keys: {', '.join(self.state_keys)}",
                )
        problem = state_problem(value)
        if problem is not None:
            raise InputError(problem.message(where), hint=problem.hint)
        return dict(value)


class Assistants:
    """Every assistant of a server, found by assistant id or graph id."""

    def __init__(self, assistants: Sequence[Assistant]) -> None:
        self.all = list(assistants)
        self._by_key: dict[str, Assistant] = {}
        for a in self.all:
            self._by_key[a.assistant_id] = a
            self._by_key[a.graph_id] = a

    def get(self, key: str) -> Assistant | None:
        """The assistant with this assistant id or graph id."""
        return self._by_key.get(key)

    def search(self, graph_id: str | None = None, name: str | None = None) -> list[Assistant]:
        """The assistants of a graph id, or whose name contains `name`."""
        found = self.all
        if graph_id:
            found = [a for a in found if a.graph_id == graph_id]
        if name:
            found = [a for a in found if name.casefold() in a.graph_id.casefold()]
        return found

    @classmethod
    def load(
        cls, targets: Sequence[str | Path], checkpointer: Any, *, options: CompileOptions | None = None
    ) -> Assistants:
        """Compile every graph of the given files and folders (a folder: its workflow files, subfolders included),
        with `options` (`agentmap.compile`'s; their checkpointer is `checkpointer`).

        In a folder, a file that fails to load or validate is skipped with a warning naming it and why (a data
        CSV beside the workflows, say); a file named directly must compile. Hidden folders are not read.

        Raises:
            WorkflowFileError: A target does not exist, or no graph was found.
            WorkflowValidationError, GraphNotFoundError: A file named directly does not compile.
        """
        files: list[tuple[Path, str | None, bool, str]] = []  # path, graph, named directly, id prefix
        for target in targets:
            text = str(target)
            path_text, sep, graph = text.partition("::")
            path = Path(path_text)
            if path.is_dir():
                files += [(p, None, False, _prefix(p.relative_to(path))) for p in _workflow_files(path)]
            elif path.exists():
                files.append((path, (graph.strip() or None) if sep else None, True, path.stem))
            else:
                raise WorkflowFileError(
                    f"{path} does not exist", hint="name a workflow file or a folder of workflow files"
                )
        assistants: list[Assistant] = []
        for path, selected, strict, prefix in files:
            try:
                made = _compile_file(path, selected, checkpointer, options or CompileOptions())
            except AgentMapError as err:
                if strict:
                    raise
                _log.warning("skipping %s, not served: %s", path, _why(err))
                continue
            for assistant in made:
                assistant.prefix = prefix
            assistants += made
        if not assistants:
            raise WorkflowFileError(
                f"no workflow found in {', '.join(str(t) for t in targets)}",
                code=ErrorCode.NO_WORKFLOW,
                hint="name a workflow file (e.g. graphs/hello_world.csv) or a folder holding some",
            )
        return cls(_unique_ids(assistants))


def _why(err: AgentMapError) -> str:
    """The first reason a file in a served folder does not compile, on one line."""
    errors = [i for i in getattr(err, "issues", ()) if getattr(i, "severity", "error") == "error"]
    if errors:
        more = f" (and {len(errors) - 1} more: agentmap validate shows them)" if len(errors) > 1 else ""
        return f"{errors[0].message}{more}"
    return str(err).splitlines()[0]


def _workflow_files(folder: Path) -> list[Path]:
    """The files of `folder` and its subfolders (not hidden ones) whose suffix is a workflow format's."""
    from agentmap.runtime.api import WORKFLOW_SUFFIXES

    return sorted(
        p
        for p in folder.rglob("*")
        if p.suffix.lower() in WORKFLOW_SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def _prefix(relative: Path) -> str:
    """What qualifies a graph's id when two served graphs share a name: `sub.file` for `sub/file.csv`."""
    return ".".join((*relative.parent.parts, relative.stem))


def _compile_file(path: Path, graph: str | None, checkpointer: Any, options: CompileOptions) -> list[Assistant]:
    from agentmap.runtime.api import load

    names = [graph] if graph else load(path, **options.reading()).graph_names
    return [compile_graph(path, name, checkpointer, options) for name in names]


def compile_graph(path: Path, graph: str, checkpointer: Any, options: CompileOptions) -> Assistant:
    """Graph `graph` of the file at `path` as an assistant, compiled from the file (so its revision is what it
    read: `runtime.revisions`), with and without `checkpointer`."""
    from agentmap.runtime.api import compile

    app = compile(path, graph, options=options.but(checkpointer=checkpointer))
    stateless = compile(path, graph, options=options)
    return Assistant(app.name, app, stateless, *_keys(app))


def _keys(app: CompiledWorkflow) -> tuple[tuple[str, ...], tuple[str, ...]]:
    schema = app.graph.builder.state_schema
    state = tuple(k for k in getattr(schema, "__annotations__", {}) if k not in _SYSTEM_KEYS) + _SYSTEM_KEYS
    written = {k for n in app.spec.nodes for k in n.writes}
    reads = dict.fromkeys(k for n in app.spec.nodes for k in n.reads if k not in written)
    return state, tuple(reads)


def _unique_ids(assistants: list[Assistant]) -> list[Assistant]:
    counts: dict[str, int] = {}
    for a in assistants:
        counts[a.graph_id] = counts.get(a.graph_id, 0) + 1
    for a in assistants:
        if counts[a.graph_id] > 1:
            a.graph_id = f"{a.prefix}.{a.graph_id}"
            a.__post_init__()
    ids = [a.graph_id for a in assistants]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"two served graphs share an id: {', '.join(ids)}", code=ErrorCode.DUPLICATE_GRAPH)
    return assistants
