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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from langgraph.channels import LastValue
from langgraph.graph import END, START, StateGraph

from agentmap.agents.base import AgentEnvironment, BaseAgent, NodeRoute
from agentmap.agents.messages import MESSAGES_KEY, merge_messages
from agentmap.agents.registry import normalize_type
from agentmap.agents.runner import input_keys
from agentmap.runtime._nodes import AgentNode, AsyncAgentNode, AsyncFusedNode, FusedNode, computes_only
from agentmap.runtime.checks import BuildOptions, _context, _environment, check
from agentmap.runtime.functions import RouterFn
from agentmap.runtime.fusion import exits_early, plan_chains
from agentmap.runtime.node_cache import policy_for
from agentmap.runtime.retry import RetrySettings, settings_for
from agentmap.runtime.routing import Route, plan_joins
from agentmap.spec.cells import state_key
from agentmap.spec.models import FuncRef, GraphSpec, NodeSpec

if TYPE_CHECKING:
    from langgraph.types import CachePolicy

__all__ = [
    "BuildOptions",
    "FusionPlan",
    "NodePlan",
    "build_agents",
    "build_state_graph",
    "check",
    "load_routers",
    "plan_fusion",
    "plan_nodes",
    "state_schema",
]

logger = logging.getLogger("agentmap.agents")


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
    if MESSAGES_KEY in keys:  # a chat: appended to, as LangGraph's MessagesState (agents/messages.py)
        keys[MESSAGES_KEY] = Annotated[list[dict[str, Any]], merge_messages]
    keys["last_action_success"] = Annotated[bool, _AllOfStep(bool)]
    keys["graph_success"] = Annotated[bool, _LastOfStep(bool)]
    keys["errors"] = Annotated[list[str], operator.add]
    schema: type = TypedDict(f"{_identifier(graph.name)}State", keys, total=False)  # type: ignore[misc]
    return schema


def _reads_only_inputs(agent: BaseAgent) -> bool:
    """Whether the agent sees nothing of the state but its Input_Fields (its type says so, and it keeps no state
    keys of its own)."""
    return type(agent).reads_only_inputs() and not agent.state_keys()


@functools.lru_cache(maxsize=1024)
def _inputs_schema(keys: tuple[str, ...]) -> type:
    """A node input schema of plain state keys (shared by every node, of any graph, that reads these keys)."""
    schema: type = TypedDict("NodeInput", dict.fromkeys(keys, Any), total=False)  # type: ignore[misc]
    return schema


def _narrowed(agent: BaseAgent, route: NodeRoute | None, retry: RetrySettings | None, schema: type) -> type | None:
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
    if "cache" not in node.context or type(agent).own_cache or agent.may_pause(node.context):
        return None

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


@dataclass(frozen=True, slots=True)
class NodePlan:
    """What one CSV node compiles into: its agent, how it routes (None: by static edges), retries and caches."""

    spec: NodeSpec
    agent: BaseAgent
    route: NodeRoute | None
    retry: RetrySettings | None
    cache: CachePolicy[Any] | None
    routes_itself: bool
    """The agent picks the next node (`BaseAgent.own_route`): the node has no static edges of its own."""


class FusionPlan:
    """Which straight chains of nodes run as one LangGraph node (`compile(fuse=True)`, `runtime.fusion`).

    Args:
        chains: Each fused chain by its first node, which names the LangGraph node.
        self_routed: The Edge targets of a chain's last node, for a chain that may leave early (it routes itself).
    """

    def __init__(
        self,
        chains: Mapping[str, Sequence[str]] | None = None,
        self_routed: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.chains: Mapping[str, Sequence[str]] = chains or {}
        self.self_routed: Mapping[str, tuple[str, ...]] = self_routed or {}
        self._head = {name: first for first, chain in self.chains.items() for name in chain}

    def head(self, name: str) -> str:
        """The LangGraph node that runs CSV node `name` (its chain's first node, or itself)."""
        return self._head.get(name, name)

    def is_inner(self, name: str) -> bool:
        """Whether `name` runs inside another node's chain (it is not a LangGraph node of its own)."""
        return self._head.get(name, name) != name


def build_state_graph(
    graph: GraphSpec,
    options: BuildOptions,
    extra_keys: Sequence[str] = (),
    *,
    fuse: bool = False,
    keep: Collection[str] = (),
) -> tuple[StateGraph[Any, Any, Any, Any], dict[str, BaseAgent]]:
    """Build (not compile) the LangGraph `StateGraph` for a graph that passed `check`.

    The phases, each its own function: the agents (`build_agents`), each node's plan (`plan_nodes`: route, retry,
    cache), the fused chains (`plan_fusion`), the state schema (`state_schema`), then the nodes and the edges.

    Args:
        fuse: Run each straight chain of nodes as one LangGraph node (`runtime.fusion`).
        keep: Nodes never fused (those named by `interrupt_before`/`interrupt_after`).

    Returns:
        The builder and the agents by node name.
    """
    agents = build_agents(graph, options)
    plans = plan_nodes(graph, agents, load_routers(graph, options))
    edges, deferred = plan_joins(graph)
    fusion = plan_fusion(graph, plans, keep=keep, deferred=deferred) if fuse else FusionPlan()
    schema = state_schema(graph, agents, extra_keys)
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(schema)
    _add_nodes(builder, plans, fusion, deferred, schema)
    _add_edges(builder, graph, plans, fusion, edges)
    return builder, agents


def build_agents(graph: GraphSpec, options: BuildOptions) -> dict[str, BaseAgent]:
    """Every node's agent by node name, each built with the graph's environment (which sees them all)."""
    agents: dict[str, BaseAgent] = {}
    environment = _environment(graph, options, agents)  # agents fill in below; the env sees them all
    types = options.agent_types(graph)
    for node in graph.nodes:
        agents[node.name] = _construct(types.resolve(node.agent_type or "default"), node, environment)
    return agents


def load_routers(graph: GraphSpec, options: BuildOptions) -> dict[FuncRef, RouterFn]:
    """The `func:` routers the graph's next columns name, each loaded once."""
    routers: dict[FuncRef, RouterFn] = {}
    for node in graph.nodes:
        for _, targets in node.next_cells():
            if isinstance(targets, FuncRef) and targets not in routers:
                routers[targets] = options.router(graph, targets)
    return routers


def plan_nodes(
    graph: GraphSpec, agents: Mapping[str, BaseAgent], routers: Mapping[FuncRef, RouterFn]
) -> dict[str, NodePlan]:
    """Each node's route (its agent's own, a `Route` for a dynamic node, else None), retry settings and cache."""
    plans: dict[str, NodePlan] = {}
    for node in graph.nodes:
        agent = agents[node.name]
        own = agent.own_route(node)
        dynamic = isinstance(node.edge, FuncRef) or node.success_next is not None or node.failure_next is not None
        route = own if own is not None else Route(graph, node, routers) if dynamic else None
        retry = settings_for(node.context, own_timeout=type(agent).own_timeout)
        plans[node.name] = NodePlan(
            node, agent, route, retry, _cache_policy(agent, node), routes_itself=own is not None
        )
    return plans


def plan_fusion(
    graph: GraphSpec, plans: Mapping[str, NodePlan], *, keep: Collection[str], deferred: Collection[str]
) -> FusionPlan:
    """The chains to fuse: never a node kept by the caller, routed by its agent, retried or cached."""
    kept = {*keep, *(name for name, p in plans.items() if p.routes_itself or p.retry is not None or p.cache)}
    agents = {name: plan.agent for name, plan in plans.items()}
    chains = plan_chains(graph, agents, keep=kept, deferred=deferred)
    self_routed = {
        chain[-1]: _edge_targets(graph.by_name[chain[-1]])
        for chain in chains
        if exits_early([(plans[n].agent, plans[n].route) for n in chain]) and plans[chain[-1]].route is None
    }
    return FusionPlan({chain[0]: tuple(chain) for chain in chains}, self_routed)


def _add_nodes(
    builder: StateGraph[Any, Any, Any, Any],
    plans: Mapping[str, NodePlan],
    fusion: FusionPlan,
    deferred: Collection[str],
    schema: type,
) -> None:
    for name, plan in plans.items():
        if fusion.is_inner(name):
            continue
        if name in fusion.chains:
            _add_chain(builder, [plans[n] for n in fusion.chains[name]], fusion, deferred)
            continue
        agent, route, retry = plan.agent, plan.route, plan.retry
        builder.add_node(
            name,
            AsyncAgentNode(agent, route, retry)
            if agent.is_async()
            else AgentNode(agent, route, retry, inline=computes_only(agent, plan.spec)),
            input_schema=_narrowed(agent, route, retry, schema),
            retry_policy=retry.policy() if retry is not None and retry.max_attempts > 1 else None,
            cache_policy=plan.cache,
            defer=name in deferred,
            destinations=route.destinations if route is not None else None,
            metadata={"agent_type": normalize_type(plan.spec.agent_type or "default")},
        )


def _add_chain(
    builder: StateGraph[Any, Any, Any, Any], chain: Sequence[NodePlan], fusion: FusionPlan, deferred: Collection[str]
) -> None:
    """One LangGraph node running a fused chain; it leaves by its links' routes and, if it may leave early, by
    its last node's Edge."""
    links = [(plan.agent, plan.route) for plan in chain]
    then = fusion.self_routed.get(chain[-1].spec.name)
    exits = [d for plan in chain if plan.route is not None for d in plan.route.destinations if not fusion.is_inner(d)]
    exits += then or ()
    inline = all(computes_only(plan.agent, plan.spec) for plan in chain)
    first = chain[0].spec.name
    builder.add_node(
        first,
        (AsyncFusedNode if any(a.is_async() for a, _ in links) else FusedNode)(links, then, inline=inline),
        defer=first in deferred,
        destinations=tuple(dict.fromkeys(exits)) if any(r is not None for _, r in links) else None,
        metadata={"agent_type": "fused", "nodes": [plan.spec.name for plan in chain]},
    )


def _add_edges(
    builder: StateGraph[Any, Any, Any, Any],
    graph: GraphSpec,
    plans: Mapping[str, NodePlan],
    fusion: FusionPlan,
    edges: Sequence[tuple[str | list[str], str]],
) -> None:
    """START to the entry, the static edges (joins included), and END after every node with no next node."""
    builder.add_edge(START, graph.entry)
    for source, target in edges:
        if fusion.is_inner(target) or (isinstance(source, str) and _routes_itself(source, plans, fusion)):
            continue  # a link inside a fused chain, or a node that routes itself
        builder.add_edge([fusion.head(s) for s in source] if isinstance(source, list) else fusion.head(source), target)
    for node in graph.nodes:
        if not node.next_cells() and not _routes_itself(node.name, plans, fusion):
            builder.add_edge(fusion.head(node.name), END)


def _routes_itself(name: str, plans: Mapping[str, NodePlan], fusion: FusionPlan) -> bool:
    return plans[name].routes_itself or name in fusion.self_routed
