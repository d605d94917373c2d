"""What `agentmap validate` and `compile` check beyond the spec: agent types, routers and agents' own checks.

Nothing here imports LangGraph, so validating a workflow never loads it; the compiler builds on these.
"""

from __future__ import annotations

import copy
import gc
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmap._paths import CodeFolder, allowed_roots
from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem
from agentmap.agents.findings import ConfigWarning, EnvironmentProblem
from agentmap.agents.registry import AgentRegistry
from agentmap.agents.registry import registry as default_registry
from agentmap.errors import AgentMapError
from agentmap.runtime import node_cache
from agentmap.runtime._subgraph_refs import Walk, walking
from agentmap.runtime.functions import RouterFn, allowed_modules, load_router
from agentmap.runtime.retry import context_problem
from agentmap.runtime.tracking import ExecutionTracker
from agentmap.spec.models import FuncRef, GraphSpec, Issue, NodeSpec
from agentmap.spec.types import schema_problem
from agentmap.spec.validation import check_graph

__all__ = ["BuildOptions", "check", "check_each", "collector_paused"]


@dataclass(frozen=True)
class BuildOptions:
    """How to find what a graph refers to.

    Attributes:
        functions_dir: Where `func:name` routers live (default: `functions/` beside the workflow).
        agents_dir: A custom agents folder (default: `custom_agents/` beside the workflow).
        settings: Global settings handed to agents through `AgentEnvironment.settings`.
        registry: The agent registry (the default one unless testing).
        walk: What the checks of graph nodes learn of the graphs they call, shared by every graph checked with
            these options (one validation walks each called graph once).
    """

    functions_dir: Path | None = None
    agents_dir: Path | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    registry: AgentRegistry = default_registry
    walk: Walk = field(default_factory=Walk, compare=False, repr=False)
    _overlays: dict[Path, AgentRegistry] = field(default_factory=dict, compare=False, repr=False)
    _code: dict[tuple[str, str], CodeFolder] = field(default_factory=dict, compare=False, repr=False)
    _files: dict[str, tuple[Path, Path, AgentRegistry | None]] = field(default_factory=dict, compare=False, repr=False)
    """Per workflow file: its path, its folder and the agent types its graphs see (found once, not once per graph)."""

    def _file(self, graph: GraphSpec) -> tuple[Path, Path, AgentRegistry | None] | None:
        """What `_files` knows of the file `graph` came from, if it came from one."""
        if not graph.file:
            return None
        known = self._files.get(graph.file)
        if known is None:
            path = Path(graph.file)
            known = self._files[graph.file] = (path, path.parent, None)
        return known

    def workflow_file(self, graph: GraphSpec) -> Path | None:
        """The file `graph` came from, if any."""
        known = self._file(graph)
        return known[0] if known is not None else None

    def base_dir(self, graph: GraphSpec) -> Path:
        """The folder relative paths resolve against: the workflow file's folder."""
        known = self._file(graph)
        return known[1] if known is not None else Path.cwd()

    def functions_for(self, graph: GraphSpec) -> Path:
        """The functions folder for `graph`."""
        return self.functions_dir or self.base_dir(graph) / "functions"

    def code_folder(self, graph: GraphSpec, kind: str) -> CodeFolder:
        """Where the files of `graph`'s `functions` or `custom_agents` folder may lead (`_paths.CodeFolder`)."""
        named = self.functions_dir if kind == "functions" else self.agents_dir
        return _code_folder(self._code, self.settings, named, self.base_dir(graph), kind)

    def router(self, graph: GraphSpec, ref: FuncRef) -> RouterFn:
        """The `func:` router `ref` of `graph`, from its functions folder or an allowed module.

        Raises:
            AgentNotFoundError: As `load_router`.
        """
        return load_router(
            ref, self.functions_for(graph), allowed_modules(self.settings), self.code_folder(graph, "functions").refusal
        )

    def agent_types(self, graph: GraphSpec) -> AgentRegistry:
        """The types `graph` sees: the registry's plus its custom agents folder's, for this compile only (a
        folder file is imported when a node names a type it declares)."""
        known = self._file(graph)
        if known is not None and known[2] is not None:
            return known[2]
        folder = self.agents_dir or self.base_dir(graph) / "custom_agents"
        if folder not in self._overlays:
            # where the folder's files may lead is worked out when one is imported, not for every compile; the
            # overlay keeps what that needs, not these options (which keep the overlay: a cycle would hold every
            # graph of the file until a full garbage collection)
            code, settings, named, base = self._code, self.settings, self.agents_dir, self.base_dir(graph)
            self._overlays[folder] = self.registry.with_folder(
                folder, lambda file: _code_folder(code, settings, named, base, "custom_agents").refusal(file)
            )
        if known is not None and graph.file:
            self._files[graph.file] = (known[0], known[1], self._overlays[folder])
        return self._overlays[folder]


_paused = 0
_was_enabled = False
_pausing = threading.Lock()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a workflow is read and checked, then as it was.

    What a validation builds holds no reference cycle (it is all freed by reference counting when the validation
    returns: tests/spec/test_small_files.py), and it is long-lived while the validation runs, so each full
    collection on the way walks it again for nothing: a third of the time of a 1 MB file of 50,000 graphs. A
    validation is at most a few seconds (csv_specs/security.md), so what other threads leave to the collector
    meanwhile waits that long. Validations in several threads at once: the collector is on again when the last
    ends (the `agentmap` command keeps it off while it starts: `cli._process.collector_off`).
    """
    global _paused, _was_enabled
    with _pausing:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _pausing:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()


def _code_folder(
    known: dict[tuple[str, str], CodeFolder], settings: Mapping[str, Any], named: Path | None, base: Path, kind: str
) -> CodeFolder:
    """`BuildOptions.code_folder`: the `kind` folder (`named`, else `base / kind`), found once per options (`known`)."""
    key = (str(named or base), kind)
    if key not in known:
        known[key] = CodeFolder.of(named or base / kind, base, allowed_roots(settings), named=named is not None)
    return known[key]


def check(graph: GraphSpec, options: BuildOptions) -> list[Issue]:
    """Every finding for `graph`: the spec checks plus what needs agents and routers resolved."""
    with walking(options.walk):
        return _check(graph, options)


def check_each(graphs: Iterable[GraphSpec], options: BuildOptions) -> list[Issue]:
    """`check` of each graph, in order, under one walk (a file of 50,000 graphs enters it once, not per graph)."""
    issues: list[Issue] = []
    with walking(options.walk):
        for graph in graphs:
            issues += _check(graph, options)
    return issues


def _check(graph: GraphSpec, options: BuildOptions) -> list[Issue]:
    registry = options.agent_types(graph)
    found: dict[str, type[BaseAgent]] = {}

    def agent_class(name: str) -> type[BaseAgent] | None:
        """`registry.get(name)`, asked once per name of this graph (a type not found is asked again)."""
        cls = found.get(name)
        if cls is None:
            cls = registry.get(name)
            if cls is not None:
                found[name] = cls
        return cls

    issues = check_graph(
        graph,
        known_type=lambda name: agent_class(name) is not None,
        unknown_type_message=registry.unknown_message,
        unknown_type_fix=registry.register_hint,
        unknown_type_code=registry.unknown_code,
        calls=lambda node: _called_nodes(agent_class(node.agent_type or "default"), node),
    )
    environment = _environment(graph, options)
    for node in graph.nodes:
        for column, targets in node.next_cells():
            if isinstance(targets, FuncRef):
                try:
                    options.router(graph, targets)
                except AgentMapError as err:
                    issues.append(_issue(graph, node, column, err.code, err.message, err.hint or ""))
        retry_problem = context_problem(node.context)
        if retry_problem:
            fix = f'fix the {graph.column("Context")} cell of {node.name!r}, e.g. {{"retry": {{"max_attempts": 3}}}}'
            issues.append(_issue(graph, node, "Context", "bad-config", retry_problem, fix))
        cls = agent_class(node.agent_type or "default")
        cache_problem = _node_cache_problem(cls, node)
        if cache_problem:
            fix = f'fix the {graph.column("Context")} cell of {node.name!r}: {{"cache": {{"ttl": 3600}}}}, or no cache'
            issues.append(_issue(graph, node, "Context", "bad-config", cache_problem, fix))
        types_problem = schema_problem(node.context, node.reads) if node.context.get("schema") is not None else None
        if types_problem:
            fix = f'fix the {graph.column("Context")} cell of {node.name!r}, e.g. {{"schema": {{"qty": "integer"}}}}'
            issues.append(_issue(graph, node, "Context", "bad-config", types_problem, fix))
        if cls is not None:
            try:
                problems: Sequence[ConfigProblem] = cls.validate_config(node.prompt, _context(node), environment)
            except Exception as exc:  # a custom agent's check must not hide the other findings
                problems = [f"{cls.__name__}.validate_config raised {type(exc).__name__}: {exc}"]
            for problem in problems:
                column, message = problem if isinstance(problem, tuple) else ("Context", problem)
                cell = graph.finding_column(column)
                fix = (
                    message.fix
                    if isinstance(message, EnvironmentProblem)
                    else f"fix the {cell} cell of {node.name!r} (csv_specs/ documents each agent type)"
                    if cell
                    else f"add a {column} column to the file and fill it in for {node.name!r} (csv_specs/format.md)"
                )
                issue = _issue(graph, node, column, "bad-config", message, fix)
                if isinstance(message, ConfigWarning):  # said, but the workflow still runs
                    issue = issue.model_copy(update={"severity": "warning", "code": "config-assumed"})
                issues.append(issue)
            issues += _dialect_notes(graph, node, cls)
    return issues


def _dialect_notes(graph: GraphSpec, node: NodeSpec, cls: type[BaseAgent]) -> list[Issue]:
    """Warnings for what an agent assumed about an AgentMap 0.9 spelling (`dialect_notes(prompt, context)`)."""
    notes = getattr(cls, "dialect_notes", None)
    if notes is None:
        return []
    found: list[Issue] = []
    for column, message, modern in notes(node.prompt, _context(node)):
        issue = _issue(graph, node, column, "legacy-spelling", message, f"write {modern}")
        found.append(issue.model_copy(update={"severity": "warning"}))
    return found


def _called_nodes(cls: type[BaseAgent] | None, node: NodeSpec) -> list[str]:
    return cls.referenced_nodes(node.context) if cls is not None else []


def _node_cache_problem(cls: Any, node: NodeSpec) -> str | None:
    """What is wrong with the Context `cache` of a node the node cache would keep (types that call a model check
    their own `cache`: the LLM response cache)."""
    if "cache" not in node.context or cls is None or getattr(cls, "own_cache", False):
        return None
    problem = node_cache.cache_problem(node.context["cache"], "Context cache")
    if problem is None and node.context["cache"] and cls.may_pause(node.context):
        problem = (
            f"Context cache cannot keep {node.name!r}: a node that pauses for an answer runs every time "
            "(a kept update would skip the question)"
        )
    return problem


def _issue(graph: GraphSpec, node: NodeSpec, column: str, code: str, message: str, fix: str) -> Issue:
    return Issue(
        severity="error",
        code=code,
        message=message,
        fix=fix,
        **graph.locate(node.row, column),
        graph=graph.name,
        node=node.name,
    )


def _context(node: NodeSpec) -> dict[str, Any]:
    context = _copy(node.context)  # an agent that changes its context must not change the spec
    context["input_fields"] = list(node.inputs)
    context["output_field"] = "|".join(node.outputs)
    context.setdefault("description", node.description)
    if node.tool_source:
        context["tool_source"] = node.tool_source
    if node.available_tools:
        context["available_tools"] = list(node.available_tools)
    return context


_ATOMS = frozenset({str, int, float, bool, type(None)})


def _copy(context: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a parsed Context: a plain copy when every value is a string, number, bool or None (most
    Contexts; nothing in one can be changed), else `copy.deepcopy`."""
    if all(type(value) in _ATOMS for value in context.values()):
        return dict(context)
    return copy.deepcopy(dict(context))


def _environment(
    graph: GraphSpec, options: BuildOptions, agents: Mapping[str, BaseAgent] | None = None
) -> AgentEnvironment:
    return AgentEnvironment(
        base_dir=options.base_dir(graph),
        workflow_file=options.workflow_file(graph),
        graph_name=graph.name,
        settings=options.settings,
        agents=agents if agents is not None else {},
        compile_options={
            "functions_dir": options.functions_dir,
            "agents_dir": options.agents_dir,
            "settings": options.settings,
            "registry": options.agent_types(graph),  # a subgraph's folder comes before this one's
        },
        new_tracker=ExecutionTracker,
        handled_failures=graph.handled_failures,
    )
