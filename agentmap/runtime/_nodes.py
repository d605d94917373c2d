"""The LangGraph nodes a compiled workflow is made of: one agent (`AgentNode`), or a fused chain of agents
(`FusedNode`, see `runtime.fusion`), each run with the run's tracker from the config LangGraph passes, then routed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig

from agentmap.agents.base import BaseAgent, NodeRoute
from agentmap.agents.runner import arun_node, run_node, tracker_in
from agentmap.runtime.fusion import ChainRun, Link
from agentmap.runtime.retry import RetrySettings
from agentmap.spec.models import FuncRef, NodeSpec

__all__ = ["AgentNode", "AsyncAgentNode", "AsyncFusedNode", "FusedNode", "computes_only"]


class AgentNode(Runnable[Any, Any]):
    """A graph node: runs one agent with the run's tracker, then routes (for dynamic nodes).

    In an async run (`ainvoke`, `astream`), a node marked `inline` (a built-in agent that only computes: no
    I/O, no waiting, no retry) runs on the event loop; any other synchronous node runs in a worker thread, as
    LangGraph does for every synchronous node.
    """

    def __init__(
        self, agent: BaseAgent, route: NodeRoute | None, retry: RetrySettings | None = None, *, inline: bool = False
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


def computes_only(agent: BaseAgent, node: NodeSpec) -> bool:
    """An agent whose type declares it only computes (`BaseAgent.computes_only`), routed without a `func:` router."""
    return type(agent).computes_only and not isinstance(node.edge, FuncRef)


class AsyncAgentNode(AgentNode):
    """A node whose agent is async: `ainvoke` awaits `arun` on the event loop."""

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.retry is None:
            update = await arun_node(self.agent, input, tracker_in(config))
        else:
            update = await self.retry.arun(self.agent, input, config, lambda: self.agent.arun(input))
        return update if self.route is None else self.route(input, update)


class FusedNode(Runnable[Any, Any]):
    """A chain of CSV nodes run as one LangGraph node (see `runtime.fusion`); `inline` as for `AgentNode`."""

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


class AsyncFusedNode(FusedNode):
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
