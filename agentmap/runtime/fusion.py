"""Chain fusion: a straight run of CSV nodes compiled into one LangGraph node.

LangGraph's cost per step grows with the number of state channels, so a long chain is quadratic; the only
way under that floor is fewer steps. `plan_chains` finds every maximal run of nodes where each goes on to
exactly one next node that nothing else leads to, and none can pause, fan out or route by a function; the
compiler's fused node runs such a run in order inside one step. Nodes after a fan-out are not fused:
parallel branches advance step by step side by side, and fusing one would change where they meet. Each CSV
node still records its own step on the tracker (real timings), writes its own update to LangGraph's custom
stream, and a failing node with a Failure_Next still leaves the chain there. The fused node is named after
the chain's first node, so the edges into the chain are unchanged.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.graph import END
from langgraph.types import Command

from agentmap.agents.base import BaseAgent, NodeRoute
from agentmap.spec.models import FuncRef, GraphSpec, NodeSpec
from agentmap.spec.validation import fan_outs

__all__ = ["STREAM_MARK", "Link", "merge_update", "plan_chains"]

STREAM_MARK = "agentmap.node"
"""The `custom` stream chunks a fused node writes: `{STREAM_MARK: node name, "update": the node's update}`."""

Link = tuple[BaseAgent, NodeRoute | None]


def _next_on_success(node: NodeSpec) -> str | None:
    """The one node `node` goes to when it succeeds, if it goes to exactly one by a plain name."""
    if node.success_next is not None or node.failure_next is not None:
        if node.edge is not None or not isinstance(node.success_next, tuple) or len(node.success_next) != 1:
            return None
        if isinstance(node.failure_next, tuple) and node.success_next[0] in node.failure_next:
            return None  # the failure path leads there too: the node is reached from two places
        return node.success_next[0]
    if isinstance(node.edge, tuple) and len(node.edge) == 1:
        return node.edge[0]
    return None


def plan_chains(
    graph: GraphSpec,
    agents: Mapping[str, BaseAgent],
    *,
    keep: Collection[str] = (),
    deferred: Collection[str] = (),
) -> list[list[str]]:
    """Every run of two or more nodes that can run as one LangGraph step, in graph order.

    Args:
        graph: The graph.
        agents: Its agents by node name (a node whose agent may pause is never fused).
        keep: Nodes that must stay LangGraph nodes of their own (named by `interrupt_before`/`interrupt_after`,
            retried by LangGraph, or routing themselves).
        deferred: Deferred joins (they wait for other branches, so they start a chain, never continue one).
    """
    if any(isinstance(cell, FuncRef) for node in graph.nodes for _, cell in node.next_cells()):
        return []  # a func: router may go to any node, so no node is reached from one place only
    callers: dict[str, int] = {}
    for node in graph.nodes:
        for target in node.successors():
            callers[target] = callers.get(target, 0) + 1
    referenced = {name for agent in agents.values() for name in type(agent).referenced_nodes(agent.context)}
    # After a fan-out, branches advance one LangGraph step at a time side by side, and where they meet depends
    # on those steps: fusing inside them would change which node sees what. Only the sequential part fuses.
    parallel = {name for _, targets in fan_outs(graph) for target in targets for name in _reach(graph, target)}
    blocked = set(keep) | set(deferred) | referenced | parallel | {graph.entry}
    blocked |= {name for name, agent in agents.items() if type(agent).may_pause(agent.context)}

    def follows(name: str) -> str | None:
        """The node that continues a chain after `name`, if any."""
        if name in keep or name in referenced or name in parallel or type(agents[name]).may_pause(agents[name].context):
            return None
        target = _next_on_success(graph.by_name[name])
        if target is None or target == name or target in blocked or callers.get(target) != 1:
            return None
        return target

    interior = {t for t in (follows(n.name) for n in graph.nodes) if t is not None}
    chains = []
    for node in graph.nodes:
        if node.name in interior or node.name not in graph.by_name or graph.by_name[node.name] is not node:
            continue
        chain = [node.name]
        while (step := follows(chain[-1])) is not None and step not in chain:
            chain.append(step)
        if len(chain) > 1:
            chains.append(chain)
    return chains


def _reach(graph: GraphSpec, start: str) -> set[str]:
    """`start` and every node reachable from it."""
    seen = {start}
    queue = [start]
    while queue:
        for name in graph.by_name[queue.pop()].successors():
            if name not in seen and name in graph.by_name:
                seen.add(name)
                queue.append(name)
    return seen


def merge_update(total: dict[str, Any], update: Mapping[str, Any]) -> None:
    """Fold one node's update into the chain's: `errors` appends, every other key keeps its last value."""
    for key, value in update.items():
        if key == "errors":
            total["errors"] = [*total.get("errors", ()), *value]
        else:
            total[key] = value


def _apply(state: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """The state the next node of the chain sees, as LangGraph would have made it after a step of its own."""
    state = {**state, **update}
    if "errors" in update:
        state["errors"] = [*(state.get("errors") or ()), *update["errors"]]
    return state


def exits_early(links: Sequence[Link]) -> bool:
    """Whether a node before the chain's last one may leave it (it has Success_Next/Failure_Next)."""
    return any(route is not None for _, route in links[:-1])


class ChainRun:
    """The walk through one chain: feed each node the state so far, stop at a failure with a Failure_Next.

    Args:
        links: The chain's agents and their routes.
        then: Where the chain's last node goes (its Edge), when the chain routes its end itself (`exits_early`
            and a last node without a route); None when the graph's static edges take it there.
    """

    def __init__(self, links: Sequence[Link], then: Sequence[str] | None = None) -> None:
        self.links = links
        self.then = then
        self.writer = get_stream_writer()
        self.state: dict[str, Any] = {}
        self.total: dict[str, Any] = {}

    def step(self, index: int, before: dict[str, Any], update: dict[str, Any]) -> Any:
        """Record `update` of link `index`; the node's return value when the chain ends here, else None."""
        agent, route = self.links[index]
        self.writer({STREAM_MARK: agent.name, "update": update})
        merge_update(self.total, update)
        last = index == len(self.links) - 1
        if route is None:
            self.state = _apply(before, update)
            if not last:
                return None
            # A chain that may leave early routes its normal end too, so its last node's edges are not static
            return self.total if self.then is None else Command(update=self.total, goto=list(self.then) or END)
        if not last and update.get("last_action_success", True) is not False:
            self.state = _apply(before, update)
            return None
        goto = route(before, update).goto
        return Command(update=self.total, goto=goto if goto else END)
