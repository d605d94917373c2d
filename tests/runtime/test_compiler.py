"""The compiler: checks needing agents and routers, what agents receive, and the state schema."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_type_hints

import agentmap
from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.runtime._nodes import AsyncAgentNode
from agentmap.runtime.compiler import (
    BuildOptions,
    build_agents,
    build_state_graph,
    check,
    load_routers,
    plan_fusion,
    plan_nodes,
    state_schema,
)
from agentmap.runtime.routing import plan_joins
from agentmap.spec.loader import read_workflow
from agentmap.spec.models import GraphSpec

WriteCsv = Callable[..., Path]


def _graph(path: Path) -> GraphSpec:
    workflow, issues = read_workflow(path)
    assert [i for i in issues if i.severity == "error"] == []
    return workflow.graphs[0]


def _unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def test_check_reports_missing_router_functions_at_their_cell(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv("GraphName,Node,next_on_failure\nG,A,func:rescue\nG,B,\n"))
    issues = check(graph, BuildOptions())
    assert [(i.row, i.column, i.code) for i in issues] == [(2, "next_on_failure", "unknown-function")]
    assert "functions" in issues[0].message and "def rescue(" in issues[0].fix


def test_check_reports_agent_config_problems_at_the_context_cell(write_csv: WriteCsv) -> None:
    type_name = _unique("picky")

    @agentmap.agent(type_name)
    class Picky(BaseAgent):
        @classmethod
        def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
            return [] if "level" in context else ["Context needs a 'level'"]

        def process(self, inputs: dict[str, Any]) -> Any:
            return None

    @agentmap.agent(type_name + "_broken")
    class Broken(Picky):
        @classmethod
        def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
            raise KeyError("oops")

    graph = _graph(write_csv(f"GraphName,Node,AgentType,Config,Edge\nG,A,{type_name},,B\nG,B,{type_name}_broken,,\n"))
    issues = check(graph, BuildOptions())
    assert [(i.row, i.column, i.code) for i in issues] == [(2, "Config", "bad-config"), (3, "Config", "bad-config")]
    assert issues[0].message == "Context needs a 'level'"
    assert issues[1].message == "Broken.validate_config raised KeyError: 'oops'"


def test_agents_receive_their_row_as_context_and_a_shared_environment(write_csv: WriteCsv, tmp_path: Path) -> None:
    path = write_csv(
        """
        GraphName,Node,AgentType,Description,Context,Input_Fields,Output_Field,Tool_Source,Available_Tools,Edge
        G,A,echo,reads things,"{""k"": 1}",x:y|z,out,tools.py,t1|t2,B
        G,B,echo,,,out,,,,
        """
    )
    graph = _graph(path)
    builder, agents = build_state_graph(graph, BuildOptions(settings={"model": "m"}))
    a = agents["A"]
    assert a.context == {
        "k": 1,
        "input_fields": ["x:y", "z"],
        "output_field": "out",
        "description": "reads things",
        "tool_source": "tools.py",
        "available_tools": ["t1", "t2"],
    }
    assert graph.nodes[0].context == {"k": 1}  # the spec is not touched
    assert agents["B"].output_field == ""  # no Output_Field: the node writes nothing
    env = a.environment
    assert (env.base_dir, env.workflow_file, env.graph_name) == (tmp_path, path, "G")
    assert env.settings == {"model": "m"}
    assert env.agents["B"] is agents["B"] and agents["B"].environment is env
    assert builder.nodes["A"].metadata == {"agent_type": "echo"}


def test_state_schema_has_every_key_and_system_reducers(write_csv: WriteCsv) -> None:
    graph = _graph(write_csv("GraphName,Node,Input_Fields,Output_Field\nG,A,q:question|p=prev,ans=text|score\n"))
    schema = state_schema(graph, {}, extra=("caller",))
    hints = get_type_hints(schema, include_extras=True)
    assert set(hints) == {"q", "prev", "ans", "score", "caller", "last_action_success", "graph_success", "errors"}


def test_parallel_failure_makes_the_steps_last_action_success_false(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        GraphName,Node,AgentType,Output_Field,Edge
        G,Split,success,,Good|Bad
        G,Good,success,good,
        G,Bad,failure,,
        """
    )
    result = agentmap.compile(path).invoke({})
    assert result.state["good"] == "[Good] succeeded"
    assert result.state["last_action_success"] is False
    assert result.errors == ["Error in Bad: this node always fails (agent type 'failure')"]


def test_async_agents_become_nodes_that_await(write_csv: WriteCsv) -> None:
    type_name = _unique("async_node")

    @agentmap.agent(type_name)
    class Later(BaseAgent):
        async def process(self, inputs: dict[str, Any]) -> Any:
            return "awaited"

    app = agentmap.compile(write_csv(f"GraphName,Node,AgentType,Output_Field\nG,A,{type_name},out\n"))
    node = app.graph.builder.nodes["A"].runnable
    assert isinstance(node, AsyncAgentNode)
    assert app.invoke({}).state["out"] == "awaited"


def test_an_agent_changing_its_context_does_not_change_the_workflow_or_other_compiles(write_csv: WriteCsv) -> None:
    type_name = _unique("mutator")

    @agentmap.agent(type_name)
    class Mutator(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            self.context["opts"]["n"] += 1
            return self.context["opts"]["n"]

    workflow = agentmap.load(
        write_csv(f'GraphName,Node,AgentType,Context,Output_Field\nG,M,{type_name},"{{""opts"": {{""n"": 0}}}}",out\n')
    )
    assert agentmap.compile(workflow).invoke({}).state["out"] == 1
    assert agentmap.compile(workflow).invoke({}).state["out"] == 1
    assert workflow.graphs[0].nodes[0].context == {"opts": {"n": 0}}


def test_the_build_phases_plan_routes_retries_caches_and_fused_chains(write_csv: WriteCsv) -> None:
    # A -> B -> C is a straight chain; C routes on failure; D retries, so it is never fused; E is cached.
    graph = _graph(
        write_csv(
            "GraphName,Node,AgentType,Edge,Success_Next,Failure_Next,Context\n"
            "G,A,echo,B,,,\n"
            "G,B,echo,C,,,\n"
            "G,C,echo,,D,E,\n"
            'G,D,echo,E,,,"{""retry"": {""max_attempts"": 3}}"\n'
            'G,E,echo,,,,"{""cache"": {""ttl"": 60}}"\n'
        )
    )
    options = BuildOptions()
    agents = build_agents(graph, options)
    assert list(agents) == ["A", "B", "C", "D", "E"]
    plans = plan_nodes(graph, agents, load_routers(graph, options))
    assert [name for name, plan in plans.items() if plan.route is not None] == ["C"]
    assert set(plans["C"].route.destinations) == {"D", "E"}  # type: ignore[union-attr]
    assert [name for name, plan in plans.items() if plan.retry is not None] == ["D"]
    assert [name for name, plan in plans.items() if plan.cache is not None] == ["E"]
    fusion = plan_fusion(graph, plans, keep=(), deferred=plan_joins(graph)[1])
    assert {first: list(chain) for first, chain in fusion.chains.items()} == {"A": ["A", "B", "C"]}
    assert fusion.head("B") == "A" and fusion.is_inner("C") and not fusion.is_inner("A")
    assert not fusion.is_inner("D") and fusion.head("D") == "D"
    kept = plan_fusion(graph, plans, keep=("B",), deferred=())
    assert "B" not in {n for chain in kept.chains.values() for n in chain}
