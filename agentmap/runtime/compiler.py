"""Compile a `GraphSpec` into a LangGraph `StateGraph` of `BaseAgent` nodes.

Each node is a small `Runnable` that runs its agent with `agents.runner.run_node` (or `arun_node`), given
the run's `ExecutionTracker` from the LangGraph config the runner passes (`agents.runner.with_tracker`).
The state schema has one key per field any node reads or writes, plus `last_action_success` (false if
any branch of a step failed), `graph_success` and `errors` (appended to across nodes and parallel branches).
"""

from __future__ import annotations

import functools
import inspect
import logging
import operator
import weakref
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.channels import LastValue
from langgraph.graph import END, START, StateGraph

from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.agents.registry import normalize_type
from agentmap.agents.runner import arun_node, input_keys, run_node, tracker_in
from agentmap.runtime.checks import BuildOptions, _context, _environment, check
from agentmap.runtime.functions import RouterFn
from agentmap.runtime.fusion import ChainRun, Link, exits_early, plan_chains
from agentmap.runtime.retry import RetrySettings, settings_for
from agentmap.runtime.routing import Route, plan_joins
from agentmap.spec.cells import state_key
from agentmap.spec.models import FuncRef, GraphSpec, NodeSpec

if TYPE_CHECKING:
    from langgraph.types import CachePolicy

__all__ = ["BuildOptions", "build_state_graph", "check"]

logger = logging.getLogger("agentmap.agents")


class _AgentNode(Runnable[Any, Any]):
    """A graph node: runs one agent with the run's tracker, then routes (for dynamic nodes).

    In an async run (`ainvoke`, `astream`), a node marked `inline` (a built-in agent that only computes: no
    I/O, no waiting, no retry) runs on the event loop; any other synchronous node runs in a worker thread, as
    LangGraph does for every synchronous node.
    """

    def __init__(
        self, agent: BaseAgent, route: Route | None, retry: RetrySettings | None = None, *, inline: bool = False
    ) -> None:
        self.agent = agent
        self.route = route
        self.name = agent.name
        self.retry = retry
        self.inline = inline and retry is None

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.retry is None:
            update = run_node(self.agent, input, tracker_in(config))
        else:
            update = self.retry.run(self.agent, input, config, lambda: self.agent.run(input))
        return update if self.route is None else self.route(input, update)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.inline:  # microseconds of work: cheaper than handing it to a thread and back
            return self.invoke(input, config, **kwargs)
        return await super().ainvoke(input, config, **kwargs)


def _computes_only(agent: BaseAgent, node: NodeSpec) -> bool:
    """An agent whose type declares it only computes (`BaseAgent.computes_only`), routed without a `func:` router."""
    return type(agent).computes_only and not isinstance(node.edge, FuncRef)


class _AsyncAgentNode(_AgentNode):
    """A node whose agent is async: `ainvoke` awaits `arun` on the event loop."""

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.retry is None:
            update = await arun_node(self.agent, input, tracker_in(config))
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


class _FusedNode(Runnable[Any, Any]):
    """A chain of CSV nodes run as one LangGraph node (see `runtime.fusion`); `inline` as for `_AgentNode`."""

    def __init__(self, links: Sequence[Link], then: Sequence[str] | None, *, inline: bool = False) -> None:
        self.links = links
        self.then = then
        self.name = links[0][0].name
        self.inline = inline

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        walk, state = ChainRun(self.links, self.then), input
        for index, (agent, _) in enumerate(self.links):
            done = walk.step(index, state, run_node(agent, state, tracker_in(config)))
            if done is not None:
                return done
            state = walk.state
        raise AssertionError("unreachable: the last link always ends the chain")

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.inline:
            return self.invoke(input, config, **kwargs)
        return await super().ainvoke(input, config, **kwargs)


class _AsyncFusedNode(_FusedNode):
    """A fused chain holding an async agent: `ainvoke` awaits the async ones on the event loop."""

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        walk, state = ChainRun(self.links, self.then), input
        for index, (agent, _) in enumerate(self.links):
            update = (
                await arun_node(agent, state, tracker_in(config))
                if agent.is_async()
                else run_node(agent, state, tracker_in(config))
            )
            done = walk.step(index, state, update)
            if done is not None:
                return done
            state = walk.state
        raise AssertionError("unreachable: the last link always ends the chain")


def _reads_only_inputs(agent: BaseAgent) -> bool:
    """Whether the agent sees nothing of the state but its Input_Fields (its type says so, and it keeps no state
    keys of its own)."""
    return type(agent).reads_only_inputs() and not agent.state_keys()


@functools.lru_cache(maxsize=1024)
def _inputs_schema(keys: tuple[str, ...]) -> type:
    """A node input schema of plain state keys (shared by every node, of any graph, that reads these keys)."""
    schema: type = TypedDict("NodeInput", dict.fromkeys(keys, Any), total=False)  # type: ignore[misc]
    return schema


def _narrowed(agent: BaseAgent, route: Route | None, retry: RetrySettings | None, schema: type) -> type | None:
    """The input schema of a node that needs only its Input_Fields, else None (it gets the whole state).

    LangGraph reads a node's input from every channel of its input schema at every step; a node given only
    the keys its agent reads does the same work for a fraction of the reads. Routers, retries, hooks and
    agents with a `run` of their own may look at the whole state, so they get it.
    """
    if route is not None or retry is not None or not _reads_only_inputs(agent):
        return None
    fields = schema.__annotations__
    keys = tuple(key for key in input_keys(agent) if key in fields)
    if any(fields[key] is not Any for key in keys):  # a system key (errors, ...) keeps its reducer: not narrowed
        return None
    return _inputs_schema(keys)


def _cache_policy(agent: BaseAgent, node: NodeSpec) -> CachePolicy[Any] | None:
    """LangGraph's `CachePolicy` for a node whose Context asks for `cache` (runtime/node_cache.py); None for a
    type that gives `cache` its own meaning (`own_cache`: the LLM response cache) or a node that may pause."""
    if "cache" not in node.context or getattr(type(agent), "own_cache", False) or agent.may_pause(node.context):
        return None
    from agentmap.runtime.node_cache import policy_for

    return policy_for(node, input_keys(agent) if _reads_only_inputs(agent) else None)


def _edge_targets(node: NodeSpec) -> tuple[str, ...]:
    """The nodes a node's Edge names (none for a router or an empty Edge)."""
    return tuple(str(name) for name in node.edge) if isinstance(node.edge, tuple) else ()


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


_TAKES_ENVIRONMENT: weakref.WeakKeyDictionary[type[BaseAgent], bool] = weakref.WeakKeyDictionary()
"""`_takes_environment` by agent class: reading a signature costs more than the rest of building a node."""


def _takes_environment(cls: type[BaseAgent]) -> bool:
    known = _TAKES_ENVIRONMENT.get(cls)
    if known is None:
        try:
            parameters = list(inspect.signature(cls.__init__).parameters.values())
        except (TypeError, ValueError):
            parameters = []
        known = any(p.name == "environment" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
        _TAKES_ENVIRONMENT[cls] = known
    return known


def build_state_graph(
    graph: GraphSpec,
    options: BuildOptions,
    extra_keys: Sequence[str] = (),
    *,
    fuse: bool = False,
    keep: Collection[str] = (),
) -> tuple[StateGraph[Any, Any, Any, Any], dict[str, BaseAgent]]:
    """Build (not compile) the LangGraph `StateGraph` for a graph that passed `check`.

    Args:
        fuse: Run each straight chain of nodes as one LangGraph node (`runtime.fusion`).
        keep: Nodes never fused (those named by `interrupt_before`/`interrupt_after`).

    Returns:
        The builder and the agents by node name.
    """
    agents: dict[str, BaseAgent] = {}
    environment = _environment(graph, options, agents)  # agents fill in below; the env sees them all
    types = options.agent_types(graph)
    for node in graph.nodes:
        cls = types.resolve(node.agent_type or "default")
        agents[node.name] = _construct(cls, node, environment)

    routers: dict[FuncRef, RouterFn] = {}
    for node in graph.nodes:
        for _, targets in node.next_cells():
            if isinstance(targets, FuncRef) and targets not in routers:
                routers[targets] = options.router(graph, targets)

    routes: dict[str, Route | None] = {}
    retries: dict[str, RetrySettings | None] = {}
    for node in graph.nodes:
        agent = agents[node.name]
        dynamic = isinstance(node.edge, FuncRef) or node.success_next is not None or node.failure_next is not None
        own_route = getattr(agent, "own_route", None)  # an agent that picks its next node (0.9 orchestrator)
        routes[node.name] = own_route(node) if callable(own_route) else Route(graph, node, routers) if dynamic else None
        retries[node.name] = settings_for(node.context, own_timeout=type(agent).own_timeout)
    routed_by_agent = {name for name, agent in agents.items() if callable(getattr(agent, "own_route", None))}
    caches = {node.name: _cache_policy(agents[node.name], node) for node in graph.nodes}

    edges, deferred = plan_joins(graph)
    chains: list[list[str]] = []
    if fuse:
        kept = {*keep, *routed_by_agent, *(name for name, retry in retries.items() if retry is not None)}
        kept |= {name for name, policy in caches.items() if policy is not None}
        chains = plan_chains(graph, agents, keep=kept, deferred=deferred)
    head = {name: chain[0] for chain in chains for name in chain}  # every chain member -> its fused node
    inner = {name for chain in chains for name in chain[1:]}
    fused = {chain[0]: chain for chain in chains}
    links = {name: (agents[name], routes[name]) for name in agents}
    # A chain that may leave early takes its last node's Edge itself: no static edges from that node
    self_routed: dict[str, tuple[str, ...]] = {
        chain[-1]: _edge_targets(graph.by_name[chain[-1]])
        for chain in chains
        if exits_early([links[n] for n in chain]) and routes[chain[-1]] is None
    }

    schema = state_schema(graph, agents, extra_keys)
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(schema)
    for node in graph.nodes:
        if node.name in inner:
            continue
        agent, route, retry = agents[node.name], routes[node.name], retries[node.name]
        if node.name in fused:
            chain = [links[name] for name in fused[node.name]]
            then = self_routed.get(fused[node.name][-1])
            is_async = any(a.is_async() for a, _ in chain)
            exits = [d for _, r in chain if r is not None for d in r.destinations if d not in inner]
            exits += then or ()
            inline = all(_computes_only(a, graph.by_name[n]) for (a, _), n in zip(chain, fused[node.name], strict=True))
            builder.add_node(
                node.name,
                (_AsyncFusedNode if is_async else _FusedNode)(chain, then, inline=inline),
                defer=node.name in deferred,
                destinations=tuple(dict.fromkeys(exits)) if any(r is not None for _, r in chain) else None,
                metadata={"agent_type": "fused", "nodes": fused[node.name]},
            )
            continue
        builder.add_node(
            node.name,
            _AsyncAgentNode(agent, route, retry)
            if agent.is_async()
            else _AgentNode(agent, route, retry, inline=_computes_only(agent, node)),
            input_schema=_narrowed(agent, route, retry, schema),
            retry_policy=retry.policy() if retry is not None and retry.max_attempts > 1 else None,
            cache_policy=caches[node.name],
            defer=node.name in deferred,
            destinations=route.destinations if route is not None else None,
            metadata={"agent_type": normalize_type(node.agent_type or "default")},
        )
    builder.add_edge(START, graph.entry)
    for source, target in edges:
        if target in inner or (isinstance(source, str) and (source in routed_by_agent or source in self_routed)):
            continue  # a link inside a fused chain, or a node whose node routes it
        sources = [head.get(s, s) for s in source] if isinstance(source, list) else head.get(source, source)
        builder.add_edge(sources, target)
    for node in graph.nodes:
        if not node.next_cells() and node.name not in routed_by_agent and node.name not in self_routed:
            builder.add_edge(head.get(node.name, node.name), END)
    return builder, agents
