"""The public entry points: `load`, `validate`, `compile` and `run`.

`validate` and `compile` run the same checks (`compiler.check`); `validate` reports, `compile` raises
`WorkflowValidationError` when any finding is an error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap._paths import allowed_roots
from agentmap._sources import exists, read_bytes, recording
from agentmap.agents.registry import AgentRegistry, normalize_type
from agentmap.agents.registry import registry as default_registry
from agentmap.errors import AgentMapError, ConfigError, ErrorCode, GraphNotFoundError, WorkflowValidationError
from agentmap.runtime._subgraph_refs import reference
from agentmap.runtime.checks import BuildOptions, check, check_each, collector_paused
from agentmap.runtime.node_cache import node_cache
from agentmap.runtime.options import CompileOptions, MissingInputs, check_mode
from agentmap.spec.loader import parse_selector, read_workflow
from agentmap.spec.models import GraphSpec, Issue, Workflow
from agentmap.spec.prompts import prompts_folder
from agentmap.spec.readers import SUFFIXES as WORKFLOW_SUFFIXES  # the file suffixes `load` reads
from agentmap.spec.validation import listed, nearest

if TYPE_CHECKING:  # LangGraph is imported by `compile`, not by `validate`
    from langchain_core.runnables import RunnableConfig

    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.tracking import SuccessPolicy

__all__ = ["WORKFLOW_SUFFIXES", "compile", "load", "load_graph", "run", "select_graph", "validate"]

Source = str | Path | Workflow | GraphSpec


def _options(
    functions_dir: str | Path | None,
    agents_dir: str | Path | None,
    settings: Mapping[str, Any] | None,
    registry: AgentRegistry | None,
) -> BuildOptions:
    return BuildOptions(
        functions_dir=Path(functions_dir) if functions_dir else None,
        agents_dir=Path(agents_dir) if agents_dir else None,
        settings=dict(settings or {}),
        registry=registry or default_registry,
    )


def _read(source: str | Path | Workflow, options: BuildOptions) -> tuple[Workflow, list[Issue]]:
    """The workflow `source` reads as, remembered by the options' walk (a graph node calling a graph of the same
    file does not read it again)."""
    if isinstance(source, Workflow):
        return source, []
    path, _ = parse_selector(source)
    settings = options.settings
    workflow, issues = read_workflow(path, roots=allowed_roots(settings), prompts_dir=prompts_folder(settings))
    options.walk.remember(path, workflow, settings)
    return workflow, issues


def load(
    source: str | Path,
    *,
    functions_dir: str | Path | None = None,
    agents_dir: str | Path | None = None,
    settings: Mapping[str, Any] | None = None,
    registry: AgentRegistry | None = None,
    strict: bool = True,
) -> Workflow:
    """Read and validate every graph of a workflow file.

    Args:
        strict: False returns the workflow as read, errors and all (`validate(workflow)` lists them).

    Raises:
        WorkflowFileError: The file is missing or unreadable.
        WorkflowValidationError: Any graph has an error (`.issues` lists every finding); only when `strict`.
    """
    options = _options(functions_dir, agents_dir, settings, registry)
    workflow, issues = _read(source, options)
    if not strict:
        return workflow
    issues += check_each(workflow.graphs, options)
    if any(i.severity == "error" for i in issues):
        raise WorkflowValidationError(issues, source=str(source))
    return workflow


def select_graph(workflow: Workflow, name: str | None, *, source: str | None = None) -> GraphSpec:
    """The graph `name` of `workflow`, or its only graph when `name` is None.

    Raises:
        GraphNotFoundError: No such graph, or several graphs and no name; the message lists them.
    """
    where = source or workflow.file or "the workflow"
    graph = workflow.get(name) if name is not None else None
    if graph is not None:
        return graph
    names = listed(workflow.graph_names) or "none"
    if name is None:
        if len(workflow.graphs) == 1:
            return workflow.graphs[0]
        top = _uncalled(workflow)
        if len(top) == 1:  # the others are its subgraphs: run the one no graph calls
            return top[0]
        file = workflow.file or where
        runnable = [spec.name for spec in top] or list(workflow.graph_names)
        commands = "".join(f"\n  agentmap run {file}::{each}" for each in runnable[:12])
        commands += f"\n  ... and {len(runnable) - 12:,} more" if len(runnable) > 12 else ""
        raise GraphNotFoundError(
            f"{where} holds {len(workflow.graphs)} graphs ({names}); say which to use",
            code=ErrorCode.GRAPH_NOT_SELECTED,
            hint=f"append ::GraphName to the path; run one of them with:{commands}" if workflow.graphs else None,
        )
    close = nearest(name, workflow.graph_names)
    guess = f"; did you mean {close!r}?" if close else ""
    raise GraphNotFoundError(f"{where} has no graph {name!r}{guess} (graphs there: {names})")


def _uncalled(workflow: Workflow) -> list[GraphSpec]:
    """The graphs of `workflow` that no graph node of the same file runs (its top-level graphs)."""

    called: set[str] = set()
    here = Path(workflow.file).resolve() if workflow.file else None
    for graph in workflow.graphs:
        for node in graph.nodes:
            if normalize_type(node.agent_type or "default") != "graph":
                continue
            path, name = parse_selector(str(node.context.get("workflow") or node.context.get("graph") or ""))
            folder = Path(graph.file).parent if graph.file else Path.cwd()
            same = str(path) in ("", ".") or (here is not None and (folder / path).resolve() == here)
            if same and name:
                called.add(name)
    return [g for g in workflow.graphs if g.name not in called]


def load_graph(source: str | Path, graph: str | None = None, **options: Any) -> GraphSpec:
    """Load and validate a workflow file and return one graph (`file.csv::Graph`, or its only graph).

    Raises:
        WorkflowFileError, GraphNotFoundError, WorkflowValidationError: As `load` and `select_graph`.
    """
    path, selected = parse_selector(source)
    return select_graph(load(path, **options), graph or selected, source=str(path))


def validate(
    source: str | Path | Workflow,
    graph: str | None = None,
    *,
    functions_dir: str | Path | None = None,
    agents_dir: str | Path | None = None,
    settings: Mapping[str, Any] | None = None,
    registry: AgentRegistry | None = None,
) -> list[Issue]:
    """Every finding (errors and warnings) for a workflow file, or one graph of it. Never raises on bad input.

    Args:
        source: A path (`file.csv` or `file.csv::Graph`) or a loaded `Workflow`.
        graph: Only this graph (also selectable with `::Graph`).
    """
    try:
        with collector_paused():
            return _validate(source, graph, _options(functions_dir, agents_dir, settings, registry))
    except AgentMapError as err:
        file = str(parse_selector(source)[0]) if not isinstance(source, Workflow) else source.file
        return [Issue(severity="error", code=err.code, message=err.message, fix=err.hint or "", file=file)]


def _validate(source: str | Path | Workflow, graph: str | None, options: BuildOptions) -> list[Issue]:
    """`validate`'s findings.

    Raises:
        AgentMapError: The file cannot be read, or names no graph `graph`.
    """
    workflow, issues = _read(source, options)
    selected = graph or (parse_selector(source)[1] if not isinstance(source, Workflow) else None)
    graphs = _called_graphs(workflow, select_graph(workflow, selected)) if selected else list(workflow.graphs)
    if selected:  # the file's findings about this graph (and those it calls), or about no graph
        names = {g.name for g in graphs}
        issues = [i for i in issues if i.graph is None or i.graph in names]
    return issues + check_each(graphs, options)


_SAID_AT_RUN = ("csv-dialect", "encoding", "unknown-column")
"""The warnings a run says too (it shows no other validation warning): how a file that was not plain UTF-8 CSV was
read, and a column it ignores (a misspelt `Promt` would leave every prompt out without a word)."""


def _report_reading(issues: Sequence[Issue]) -> None:
    """Say the warnings of `_SAID_AT_RUN` on the `agentmap.spec` logger."""
    for issue in issues:
        if issue.severity == "warning" and issue.code in _SAID_AT_RUN:
            logging.getLogger("agentmap.spec").warning("%s", issue)


def _called_graphs(workflow: Workflow, spec: GraphSpec) -> list[GraphSpec]:
    """`spec` and the graphs of the same file its graph nodes call, transitively, in file order."""

    found = {spec.name}
    queue = [spec]
    while queue:
        for node in queue.pop().nodes:
            if normalize_type(node.agent_type) != "graph":
                continue
            try:
                text = reference(node.context, node.prompt).text
            except ValueError:
                continue
            path, _, name = text.strip().partition("::")
            child = workflow.get(name.strip()) if not path.strip() and name.strip() else None
            if child is not None and child.name not in found:
                found.add(child.name)
                queue.append(child)
    return [g for g in workflow.graphs if g.name in found]


def compile(
    source: Source,
    graph: str | None = None,
    *,
    checkpointer: Any = None,
    success_policy: SuccessPolicy | None = None,
    critical_nodes: Sequence[str] = (),
    functions_dir: str | Path | None = None,
    agents_dir: str | Path | None = None,
    settings: Mapping[str, Any] | None = None,
    registry: AgentRegistry | None = None,
    state_keys: Sequence[str] = (),
    tracing: Any = None,
    fuse: bool = False,
    missing_inputs: MissingInputs = "error",
    options: CompileOptions | None = None,
    **compile_kwargs: Any,
) -> CompiledWorkflow:
    """Load, validate and compile one graph into a `CompiledWorkflow`.

    Args:
        source: `file.csv`, `file.csv::Graph`, a `Workflow` or a `GraphSpec`.
        graph: The graph to compile (needed when the file holds several and no `::Graph` is given).
        checkpointer: A LangGraph checkpointer (e.g. `InMemorySaver()`), passed through, or a string:
            `"memory"`, a path ending in `.db`/`.sqlite` or `sqlite:PATH` (a `SqliteSaver` on that file), or a
            `postgresql://` URL (a `PostgresSaver`; needs the `postgres` extra). These serve sync and async
            runs alike and read checkpoints with the allow-list serializer (see `agentmap.checkpointer`).
        success_policy: `all_nodes` (default), `final_node`, `critical_nodes`, or `f(summary) -> bool`.
        critical_nodes: The nodes the `critical_nodes` policy looks at.
        functions_dir: Where `func:` routers live (default `functions/` beside the file).
        agents_dir: A custom agents folder (default `custom_agents/` beside the file).
        settings: Global settings agents read through `environment.settings`.
        registry: The agent registry (default: the global one).
        state_keys: Extra state keys to keep in the schema (keys only the caller reads or writes).
        tracing: OpenTelemetry spans for every run: `"otlp"`, `"console"`, `"file:spans.jsonl"`, True (the
            installed TracerProvider), a TracerProvider, or `{"exporter": ..., "content": bool}`; needs the
            `otel` extra (see csv_specs/tracing.md). A TracerProvider installed globally traces without it.
        fuse: Run every straight chain of nodes that cannot pause, fan out or route by a function as one
            LangGraph step: the same results, summary and stream (one update per node) in fewer steps
            (csv_specs/format.md#chain-fusion). Nodes named by `interrupt_before`/`interrupt_after` stay alone.
        missing_inputs: What a run does when its initial state lacks an input no node writes (and no node reading
            it has a Context `default`): `"error"` (the default) refuses it with `ConfigError` `missing-state`
            naming the key (and a look-alike key the state has); `"warn"` logs a warning (logger
            `agentmap.runtime`) and runs, the node reading None; `"ignore"` runs without a word. Only runs of
            the `CompiledWorkflow` are checked: its `.graph`, embedded in your own LangGraph app, takes whatever
            state LangGraph hands it.
        options: All of the above as one `CompileOptions` object, instead of the keywords.
        **compile_kwargs: Passed to `StateGraph.compile` (`interrupt_before`, `store`, `debug`, ...).

    Raises:
        WorkflowFileError, GraphNotFoundError, WorkflowValidationError: The workflow cannot be compiled.
        ConfigError: A checkpointer string names nothing known, or a file that cannot be opened.
    """
    given = CompileOptions(
        checkpointer=checkpointer,
        success_policy=success_policy,
        critical_nodes=critical_nodes,
        functions_dir=functions_dir,
        agents_dir=agents_dir,
        settings=settings,
        registry=registry,
        state_keys=state_keys,
        tracing=tracing,
        fuse=fuse,
        missing_inputs=missing_inputs,
        langgraph=compile_kwargs,
    )
    if options is None:
        options = given
    elif given != CompileOptions():
        raise TypeError("compile() takes either options=CompileOptions(...) or its keywords, not both")
    return _compile(source, graph, options)


def _compile(source: Source, graph: str | None, given: CompileOptions) -> CompiledWorkflow:
    """`compile` with its options in one object; what it reads is noted, its revision (`runtime.revisions`)."""
    with recording() as reading:
        if given.config_file is not None and exists(Path(given.config_file)):
            read_bytes(Path(given.config_file))  # the configuration is part of the revision
        app = _compile_read(source, graph, given)
    app._sources = (reading, given.config_file)
    app.options = given
    return app


def _compile_read(source: Source, graph: str | None, given: CompileOptions) -> CompiledWorkflow:
    settings = given.settings
    options = _options(given.functions_dir, given.agents_dir, settings, given.registry)
    issues: list[Issue]
    if isinstance(source, GraphSpec):
        spec, issues = source, []
    else:
        workflow, issues = _read(source, options)
        selected = graph or (parse_selector(source)[1] if not isinstance(source, Workflow) else None)
        if not workflow.graphs and any(i.severity == "error" for i in issues):
            raise WorkflowValidationError(issues, source=str(workflow.file))  # nothing readable to select from
        spec = select_graph(workflow, selected)
        # The file's findings that concern this graph (or every graph, like a bad header), then the graph's own
        issues = [i for i in issues if i.graph in (None, spec.name)]
    issues += check(spec, options)
    if any(i.severity == "error" for i in issues):
        raise WorkflowValidationError(issues, source=str(spec.file or spec.name))
    _report_reading(issues)
    from agentmap.runtime.compiler import build_state_graph
    from agentmap.runtime.runner import CompiledWorkflow

    compile_kwargs = dict(given.langgraph)
    keep = _interrupt_nodes(spec, compile_kwargs) if given.fuse else ()
    builder, agents = build_state_graph(spec, options, given.state_keys, fuse=given.fuse, keep=keep)
    checkpointer = given.checkpointer
    if isinstance(checkpointer, str):
        from agentmap.runtime.checkpoint import resolve_checkpointer

        checkpointer = resolve_checkpointer(checkpointer)
    if "cache" not in compile_kwargs and any(node.cache_policy for node in builder.nodes.values()):
        compile_kwargs["cache"] = node_cache()
    compiled = builder.compile(checkpointer=checkpointer, name=spec.name, **compile_kwargs)
    app = CompiledWorkflow(
        spec,
        compiled,
        agents,
        success_policy=given.success_policy,
        critical_nodes=given.critical_nodes,
        missing_inputs=check_mode(given.missing_inputs),
    )
    tracing = given.tracing
    if tracing is not None and tracing is not False:
        from agentmap.runtime.views import views

        try:
            observer = views().tracing(tracing)  # the otel extra, only when asked for
        except ImportError as exc:
            raise ConfigError(
                f"tracing needs OpenTelemetry, which is not installed ({exc.name})",
                code=ErrorCode.BAD_CONFIG,
                hint='pip install "agentmap[otel]"',
            ) from None
        if observer is not None:
            app.observers.append(observer)
    return app


def _interrupt_nodes(spec: GraphSpec, compile_kwargs: Mapping[str, Any]) -> set[str]:
    """The nodes `interrupt_before`/`interrupt_after` name ("*" names them all): they are never fused."""
    named: set[str] = set()
    for key in ("interrupt_before", "interrupt_after"):
        value = compile_kwargs.get(key) or ()
        named |= {n.name for n in spec.nodes} if value == "*" else set(value)
    return named


def run(
    source: Source,
    state: Mapping[str, Any] | None = None,
    *,
    config: RunnableConfig | None = None,
    graph: str | None = None,
    **options: Any,
) -> RunResult:
    """Load, validate, compile and run one graph: `agentmap.run("file.csv::Graph", {"name": "Ada"})`.

    Keys of `state` are added to the schema, so the final state carries them through. Other keyword
    arguments are `compile`'s.
    """
    keys = tuple(state or ()) + tuple(options.pop("state_keys", ()))
    app = compile(source, graph, state_keys=keys, **options)
    return app.invoke(dict(state or {}), config)
