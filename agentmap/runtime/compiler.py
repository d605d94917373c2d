"""Compile a `GraphSpec` into a LangGraph `StateGraph` of `BaseAgent` nodes.

Each node is a small `Runnable` that calls `BaseAgent.run` (or `arun` for async agents); the agent finds
the run's `ExecutionTracker` in the LangGraph config the runner passes (`configurable[TRACKER_KEY]`).
The state schema has one key per field any node reads or writes, plus `last_action_success` (false if
any branch of a step failed), `graph_success` and `errors` (appended to across nodes and parallel branches).
"""

from __future__ import annotations

import copy
import inspect
import logging
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.channels import LastValue
from langgraph.graph import END, START, StateGraph

from agentmap.agents._run_context import TRACKER_KEY
from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem
from agentmap.agents.findings import ConfigWarning
from agentmap.agents.registry import AgentRegistry, normalize_type
from agentmap.agents.registry import registry as default_registry
from agentmap.errors import AgentMapError
from agentmap.runtime.retry import RetrySettings, context_problem, settings_for
from agentmap.runtime.routing import Route, RouterFn, allowed_modules, load_router, plan_joins
from agentmap.runtime.tracking import ExecutionTracker
from agentmap.spec.cells import state_key
from agentmap.spec.models import FuncRef, GraphSpec, Issue, NodeSpec
from agentmap.spec.validation import check_graph

__all__ = ["TRACKER_KEY", "BuildOptions", "build_state_graph", "check"]

logger = logging.getLogger("agentmap.agents")


@dataclass(frozen=True)
class BuildOptions:
    """How to find what a graph refers to.

    Attributes:
        functions_dir: Where `func:name` routers live (default: `functions/` beside the workflow).
        agents_dir: A custom agents folder (default: `custom_agents/` beside the workflow).
        settings: Global settings handed to agents through `AgentEnvironment.settings`.
        registry: The agent registry (the default one unless testing).
    """

    functions_dir: Path | None = None
    agents_dir: Path | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    registry: AgentRegistry = default_registry

    def base_dir(self, graph: GraphSpec) -> Path:
        """The folder relative paths resolve against: the workflow file's folder."""
        return Path(graph.file).parent if graph.file else Path.cwd()

    def functions_for(self, graph: GraphSpec) -> Path:
        """The functions folder for `graph`."""
        return self.functions_dir or self.base_dir(graph) / "functions"

    def load_custom_agents(self, graph: GraphSpec) -> None:
        """Register the custom agents folder's classes (once per folder)."""
        self.registry.load_folder(self.agents_dir or self.base_dir(graph) / "custom_agents")


def check(graph: GraphSpec, options: BuildOptions) -> list[Issue]:
    """Every finding for `graph`: the spec checks plus what needs agents and routers resolved."""
    options.load_custom_agents(graph)
    registry = options.registry
    issues = check_graph(
        graph,
        known_type=lambda name: registry.get(name) is not None,
        unknown_type_message=registry.unknown_message,
        unknown_type_fix=registry.register_hint,
        calls=lambda node: _called_nodes(registry, node),
    )
    environment = _environment(graph, options)
    for node in graph.nodes:
        for column, targets in node.next_cells():
            if isinstance(targets, FuncRef):
                try:
                    load_router(targets, options.functions_for(graph), allowed_modules(options.settings))
                except AgentMapError as err:
                    issues.append(_issue(graph, node, column, err.code, err.message, err.hint or ""))
        retry_problem = context_problem(node.context)
        if retry_problem:
            fix = f'fix the {graph.column("Context")} cell of {node.name!r}, e.g. {{"retry": {{"max_attempts": 3}}}}'
            issues.append(_issue(graph, node, "Context", "bad-config", retry_problem, fix))
        cls = registry.get(node.agent_type or "default")
        if cls is not None:
            try:
                problems: Sequence[ConfigProblem] = cls.validate_config(node.prompt, _context(node), environment)
            except Exception as exc:  # a custom agent's check must not hide the other findings
                problems = [f"{cls.__name__}.validate_config raised {type(exc).__name__}: {exc}"]
            for problem in problems:
                column, message = problem if isinstance(problem, tuple) else ("Context", problem)
                fix = f"fix the {graph.column(column)} cell of {node.name!r} (csv_specs/ documents each agent type)"
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


def _called_nodes(registry: AgentRegistry, node: NodeSpec) -> list[str]:
    cls = registry.get(node.agent_type or "default")
    return cls.referenced_nodes(node.context) if cls is not None else []


def _issue(graph: GraphSpec, node: NodeSpec, column: str, code: str, message: str, fix: str) -> Issue:
    return Issue(
        severity="error",
        code=code,
        message=message,
        fix=fix,
        file=graph.file,
        row=node.row,
        column=graph.column(column),
        graph=graph.name,
        node=node.name,
    )


def _context(node: NodeSpec) -> dict[str, Any]:
    context = copy.deepcopy(node.context)  # an agent that changes its context must not change the spec
    context["input_fields"] = list(node.inputs)
    context["output_field"] = "|".join(node.outputs)
    context.setdefault("description", node.description)
    if node.tool_source:
        context["tool_source"] = node.tool_source
    if node.available_tools:
        context["available_tools"] = list(node.available_tools)
    return context


def _environment(
    graph: GraphSpec, options: BuildOptions, agents: Mapping[str, BaseAgent] | None = None
) -> AgentEnvironment:
    return AgentEnvironment(
        base_dir=options.base_dir(graph),
        workflow_file=Path(graph.file) if graph.file else None,
        graph_name=graph.name,
        settings=options.settings,
        agents=agents if agents is not None else {},
        compile_options={
            "functions_dir": options.functions_dir,
            "agents_dir": options.agents_dir,
            "settings": options.settings,
            "registry": options.registry,
        },
        new_tracker=ExecutionTracker,
    )


class _AgentNode(Runnable[Any, Any]):
    """A graph node: runs one agent with the run's tracker, then routes (for dynamic nodes)."""

    def __init__(self, agent: BaseAgent, route: Route | None, retry: RetrySettings | None = None) -> None:
        self.agent = agent
        self.route = route
        self.name = agent.name
        self.retry = retry

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.retry is None:
            update = self.agent.run(input)
        else:
            update = self.retry.run(self.agent, input, config, lambda: self.agent.run(input))
        return update if self.route is None else self.route(input, update)


class _AsyncAgentNode(_AgentNode):
    """A node whose agent is async: `ainvoke` awaits `arun` on the event loop."""

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.retry is None:
            update = await self.agent.arun(input)
        else:
            update = await self.retry.arun(self.agent, input, config, lambda: self.agent.arun(input))
        return update if self.route is None else self.route(input, update)


class _AllOfStep(LastValue[bool]):
    """`last_action_success`: the last step's outcome, false if any parallel branch of that step failed."""

    def update(self, values: Sequence[bool]) -> bool:
        if not values:
            return False
        self.value = all(values)
        return True


class _LastOfStep(LastValue[bool]):
    """`graph_success`: written by failing nodes; parallel failures in one step agree, so keep the last."""

    def update(self, values: Sequence[bool]) -> bool:
        if not values:
            return False
        self.value = values[-1]
        return True


def state_schema(graph: GraphSpec, agents: Mapping[str, BaseAgent], extra: Sequence[str] = ()) -> type:
    """A TypedDict with every key the graph reads or writes, plus the system keys and their reducers."""
    keys: dict[str, Any] = {}
    for node in graph.nodes:
        for f in node.inputs:
            keys[state_key(f, output=False)] = Any
        for f in node.outputs:
            keys[state_key(f, output=True)] = Any
    for agent in agents.values():
        for key in agent.state_keys():
            keys[key] = Any
    for key in extra:
        keys.setdefault(key, Any)
    keys["last_action_success"] = Annotated[bool, _AllOfStep(bool)]
    keys["graph_success"] = Annotated[bool, _LastOfStep(bool)]
    keys["errors"] = Annotated[list[str], operator.add]
    schema: type = TypedDict(f"{_identifier(graph.name)}State", keys, total=False)  # type: ignore[misc]
    return schema


def _identifier(name: str) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in name)
    return cleaned if cleaned[:1].isalpha() else f"G_{cleaned}"


def _construct(cls: type[BaseAgent], node: NodeSpec, environment: AgentEnvironment) -> BaseAgent:
    """Build the node's agent, environment included; the run's tracker reaches it through the run's config."""
    if _takes_environment(cls):
        return cls(node.name, node.prompt, _context(node), logger, None, environment=environment)
    agent = cls(node.name, node.prompt, _context(node), logger, None)  # an __init__ written to the contract's
    agent.environment = environment  # five arguments: set the environment afterwards
    return agent


def _takes_environment(cls: type[BaseAgent]) -> bool:
    try:
        parameters = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "environment" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def build_state_graph(
    graph: GraphSpec, options: BuildOptions, extra_keys: Sequence[str] = ()
) -> tuple[StateGraph[Any, Any, Any, Any], dict[str, BaseAgent]]:
    """Build (not compile) the LangGraph `StateGraph` for a graph that passed `check`.

    Returns:
        The builder and the agents by node name.
    """
    agents: dict[str, BaseAgent] = {}
    environment = _environment(graph, options, agents)  # agents fill in below; the env sees them all
    for node in graph.nodes:
        cls = options.registry.resolve(node.agent_type or "default")
        agents[node.name] = _construct(cls, node, environment)

    routers: dict[FuncRef, RouterFn] = {}
    for node in graph.nodes:
        for _, targets in node.next_cells():
            if isinstance(targets, FuncRef) and targets not in routers:
                routers[targets] = load_router(targets, options.functions_for(graph), allowed_modules(options.settings))

    edges, deferred = plan_joins(graph)
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(state_schema(graph, agents, extra_keys))
    for node in graph.nodes:
        agent = agents[node.name]
        dynamic = isinstance(node.edge, FuncRef) or node.success_next is not None or node.failure_next is not None
        own_route = getattr(agent, "own_route", None)  # an agent that picks its next node (0.9 orchestrator)
        route = own_route(node) if callable(own_route) else Route(graph, node, routers) if dynamic else None
        node_cls = _AsyncAgentNode if agent.is_async() else _AgentNode
        retry = settings_for(node.context, own_timeout=type(agent).own_timeout)
        builder.add_node(
            node.name,
            node_cls(agent, route, retry),
            retry_policy=retry.policy() if retry is not None and retry.max_attempts > 1 else None,
            defer=node.name in deferred,
            destinations=route.destinations if route is not None else None,
            metadata={"agent_type": normalize_type(node.agent_type or "default")},
        )
    builder.add_edge(START, graph.entry)
    routed_by_agent = {name for name, agent in agents.items() if callable(getattr(agent, "own_route", None))}
    for source, target in edges:
        if not (isinstance(source, str) and source in routed_by_agent):
            builder.add_edge(source, target)
    for node in graph.nodes:
        if not node.next_cells() and not callable(getattr(agents[node.name], "own_route", None)):
            builder.add_edge(node.name, END)
    return builder, agents
