"""`agentmap export --format python`: a compiled graph written out as a standalone LangGraph module.

The state as a TypedDict with the same reducers, one function per node, the same edges, joins,
Success_Next / Failure_Next branches and `func:` routers (imported from their file). The built-in agents that
only compute are written out (a graph of only those imports nothing but LangGraph); any other node is built
from AgentMap's agent class as the compiler builds it (`_eject_agents`). What the module could not reproduce
exactly is refused with `cannot-eject`, naming the node and why: never a module that would run differently.
"""

from __future__ import annotations

import inspect
import keyword
import string
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.agents import builtins
from agentmap.agents.messages import MESSAGES_KEY
from agentmap.errors import ConfigError, ErrorCode, Location
from agentmap.observe._eject_agents import AGENT_NODE, agents_block, may_pause, why_not
from agentmap.observe._eject_text import HEADER, LOADER, MAIN, RUNTIME
from agentmap.runtime.compiler import _takes_environment
from agentmap.runtime.routing import plan_joins
from agentmap.spec.cells import state_key
from agentmap.spec.models import FuncRef, GraphSpec, NodeSpec

if TYPE_CHECKING:
    from agentmap.agents.base import BaseAgent
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["eject"]


_INLINED = (
    builtins.DefaultAgent,
    builtins.EchoAgent,
    builtins.TemplateAgent,
    builtins.SummaryAgent,
    builtins.BranchingAgent,
    builtins.SuccessAgent,
    builtins.FailureAgent,
)


def _refuse(graph: GraphSpec, node: NodeSpec, why: str, column: str = "AgentType") -> ConfigError:
    return ConfigError(
        f"cannot eject node {node.name!r} of graph {graph.name!r} as a standalone module: {why}",
        code=ErrorCode.CANNOT_EJECT,
        location=Location(graph.file, node.row, graph.column(column), graph.sheet, graph.cell(node.row, column)),
        hint="export another graph, or run this one with `agentmap run` (or embed `agentmap.compile(...).graph`)",
    )


_MODULE_NAMES = frozenset(
    ("json", "operator", "sys", "uuid", "logging", "node", "agent_node", "branch", "router", "run", "graph", "builder")
)
"""Lower-case names the module defines or imports: no node or router function takes one."""


def _identifier(name: str, taken: set[str]) -> str:
    base = "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_") or "node"
    base = base if base[0].isalpha() and not keyword.iskeyword(base) else f"node_{base}"
    chosen, n = base, 2
    while chosen in taken:
        chosen, n = f"{base}_{n}", n + 1
    taken.add(chosen)
    return chosen


def _body(node: NodeSpec, agent: BaseAgent) -> list[str]:
    """The lines of the node's work function, the built-in agent's `process` written out."""
    prompt, context = agent.prompt or "", agent.context
    kind = type(agent)
    if kind is builtins.DefaultAgent:
        text = f"[{node.name}] {prompt}" if prompt else f"[{node.name}] DefaultAgent executed"
        return [f"return {text!r}"]
    if kind is builtins.EchoAgent:
        return ['return inputs if inputs else "No input provided to echo"']
    if kind is builtins.TemplateAgent:
        return [f"return {prompt!r}.format(**inputs)"]
    if kind is builtins.SuccessAgent:
        return [f"return {prompt or f'[{node.name}] succeeded'!r}"]
    if kind is builtins.FailureAgent:
        message = prompt or "this node always fails (agent type 'failure')"
        return [f"raise RuntimeError({message!r})"]
    if kind is builtins.SummaryAgent:
        item, separator = context.get("format", "{key}: {value}"), context.get("separator", "\n\n")
        lines = [f"text = {separator!r}.join({item!r}.format(key=k, value=v) for k, v in inputs.items())"]
        return [*lines, f"return {prompt!r}.format(**inputs) + {separator!r} + text" if prompt else "return text"]
    return _branching(node, agent)


def _branching(node: NodeSpec, agent: BaseAgent) -> list[str]:
    context = agent.context
    key = context.get("field") or context.get("success_field")
    lines = [f"key = {key!r}" if key else "key = next(iter(inputs), None)", "value = inputs.get(key)"]
    if isinstance(context.get("default_result"), bool):
        lines += ["if value is None:"]
        lines += (
            [f'    return f"{node.name}: {{key}} is missing -> success (default_result)"']
            if context["default_result"]
            else ['    raise ValueError(f"{key} is missing and default_result is false")']
        )
    success = [str(v).lower() for v in context.get("success_values", ())]
    failure = [str(v).lower() for v in context.get("failure_values", builtins._FALSE)]
    lines.append('text = str(value).strip().lower() if value is not None else ""')
    test = f"text in {success!r} and text not in {failure!r}" if success else f"text not in {failure!r}"
    lines += [f"if {test}:", f'    return f"{node.name}: {{key}}={{value!r}} -> success"']
    return [*lines, 'raise ValueError(f"{key}={value!r} is a failure value")']


def _inlined(agent: BaseAgent) -> bool:
    """Whether the module writes the node's agent out exactly: a built-in that only computes, one output
    field, and templates that `str.format` fills in as AgentMap's `safe_format` does."""
    outputs = agent.output_mapping()
    if type(agent) not in _INLINED or len(outputs) > 1 or any(src is not None for _, src in outputs):
        return False
    params = {param for _, param in agent.input_mapping()}
    if isinstance(agent, builtins.SummaryAgent):
        item = agent.context.get("format", "{key}: {value}")
        if not isinstance(item, str) or not _plain(item, {"key", "value"}):
            return False
        if not isinstance(agent.context.get("separator", ""), str):
            return False
    if isinstance(agent, builtins.TemplateAgent | builtins.SummaryAgent):
        return not agent.prompt or _plain(agent.prompt, params)
    return True


def _plain(template: str, names: set[str]) -> bool:
    """Every field of `template` one of `names`, with a format spec of no nested field or huge width."""
    try:
        fields = [(f, spec or "") for _, f, spec, _ in string.Formatter().parse(template) if f is not None]
    except ValueError:
        return False
    sizes = [int(d) for _, spec in fields for d in builtins._DIGITS.findall(spec)]
    return all(f in names and "{" not in spec for f, spec in fields) and not (
        sizes and max(sizes) > builtins.MAX_FORMAT_SIZE
    )


def _router_import(ref: FuncRef, function: Callable[..., Any], name: str) -> list[str]:
    path = inspect.getsourcefile(function)
    if path is None:
        return [f"from {function.__module__} import {function.__name__} as {name}"]
    return [
        f"{name} = _load_function({str(Path(path).resolve())!r}, {function.__name__!r})  # {ref}",
    ]


def _routers(app: CompiledWorkflow) -> dict[FuncRef, Callable[..., Any]]:
    found: dict[FuncRef, Callable[..., Any]] = {}
    for spec in app.graph.builder.nodes.values():
        route = getattr(spec.runnable, "route", None)
        found.update(getattr(route, "routers", None) or {})
    return found


def _schema(graph: GraphSpec, agents: dict[str, BaseAgent]) -> list[str]:
    keys: dict[str, str] = {}
    for node in graph.nodes:
        for f in node.inputs:
            keys[state_key(f, output=False)] = "Any"
        for f in node.outputs:
            keys[state_key(f, output=True)] = "Any"
    for agent in agents.values():
        keys.update(dict.fromkeys(agent.state_keys(), "Any"))
    keys["last_action_success"] = "Annotated[bool, AllOfStep(bool)]"
    keys["graph_success"] = "Annotated[bool, LastOfStep(bool)]"
    keys["errors"] = "Annotated[list[str], operator.add]"
    body = "".join(f"\n        {key!r}: {kind}," for key, kind in keys.items())
    return ["", "", "State = TypedDict(", '    "State",', f"    {{{body}\n    }},", "    total=False,", ")"]


def _targets(cell: Any) -> list[str]:
    return [str(t) for t in cell] if isinstance(cell, tuple) else []


def _cell(cell: Any) -> str | None:
    if cell is None:
        return None
    return str(cell) if isinstance(cell, FuncRef) else "|".join(cell)


def eject(app: CompiledWorkflow, success_policy: str = "all_nodes") -> str:
    """The source of a standalone LangGraph module that runs `app` as AgentMap does.

    Raises:
        ConfigError: `cannot-eject`, naming the first node that cannot be written out exactly and why.
    """
    graph = app.spec
    if success_policy != "all_nodes":
        raise ConfigError(
            f"cannot eject graph {graph.name!r}: the success policy {success_policy!r} is not written out",
            code=ErrorCode.CANNOT_EJECT,
            hint="the ejected module computes graph_success as the default all_nodes policy does",
        )
    if MESSAGES_KEY in app.graph.builder.channels:
        raise ConfigError(
            f"cannot eject graph {graph.name!r}: its chat in the state key {MESSAGES_KEY!r} (appended to on each "
            "turn) is not written out",
            code=ErrorCode.CANNOT_EJECT,
            hint=f"run it with agentmap (run, serve), or rename the key {MESSAGES_KEY!r} if it holds no chat",
        )
    classes = {name: agent for name, agent in app.agents.items() if not _inlined(agent)}
    for node in graph.nodes:
        if getattr(app.graph.builder.nodes[node.name].runnable, "retry", None) is not None:
            raise _refuse(graph, node, "it retries or has a timeout (Context)", "Context")
        why = why_not(app.agents[node.name], node.agent_type or "default") if node.name in classes else None
        if why is not None:
            raise _refuse(graph, node, why)
    routers = _routers(app)
    file = Path(graph.file).name if graph.file else "a workflow"
    out = [HEADER.format(name=graph.name, file=file, module="flow.py")]
    if classes:
        types = {n.name: n.agent_type or "default" for n in graph.nodes}
        imports, built = agents_block(classes, types, _takes_environment)
        out.append("\n".join(imports) + "\n")
    taken = set(_MODULE_NAMES)
    router_names = {ref: _identifier(ref.name, taken) for ref in routers}
    if routers:
        out.append(LOADER)
        for ref, function in routers.items():
            out += ["", *_router_import(ref, function, router_names[ref])]
    out.append(RUNTIME.format(handled=sorted(graph.handled_failures)))
    if classes:
        out += [AGENT_NODE, *built]
    out += _schema(graph, app.agents)
    out += ["", f"NODES = {[n.name for n in graph.nodes]!r}"]
    functions = {node.name: _identifier(node.name, taken) for node in graph.nodes}
    for node in graph.nodes:
        agent = app.agents[node.name]
        if node.name in classes:
            continue
        doc = f"{node.name} ({node.agent_type or 'default'})" + (f": {node.description}" if node.description else "")
        out += ["", "", f"def {functions[node.name]}(inputs: dict[str, Any]) -> Any:", f"    {_docstring(doc)}"]
        out += [f"    {line}" for line in _body(node, agent)]
    out += ["", "", "builder = StateGraph(State)"]
    out += _nodes(graph, app.agents, functions, router_names, classes)
    out += _edges(graph)
    pauses = any(may_pause(agent) for agent in classes.values())
    out += ["graph = builder.compile(checkpointer=InMemorySaver())" if pauses else "graph = builder.compile()"]
    if pauses:  # a paused run keeps its checkpoint in memory, one thread per run
        out[0] = out[0].replace("import sys\n", "import sys\nimport uuid\n")
        saver = "from langgraph.checkpoint.memory import InMemorySaver\n"
        out[0] = out[0].replace("from langgraph.graph", saver + "from langgraph.graph")
    out.append(MAIN.replace("CONFIG", '{"configurable": {"thread_id": uuid.uuid4().hex}}' if pauses else "None"))
    return "\n".join(out)


def _docstring(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""{text}"""' if not text.endswith('"') else f'"""{text} """'


def _nodes(
    graph: GraphSpec,
    agents: dict[str, BaseAgent],
    functions: dict[str, str],
    routers: dict[FuncRef, str],
    classes: dict[str, BaseAgent],
) -> list[str]:
    _, deferred = plan_joins(graph)
    lines = []
    for node in graph.nodes:
        inputs = dict(agents[node.name].input_mapping())
        outputs = agents[node.name].output_mapping()
        output = outputs[0][0] if outputs else None
        route = _route(node, routers)
        defer = ", defer=True" if node.name in deferred else ""
        if node.name in classes:
            call = f"agent_node(AGENTS[{node.name!r}]{', ' + route if route else ''})"
            lines.append(f"builder.add_node({node.name!r}, {call}{defer})")
            continue
        args = [repr(node.name), functions[node.name], repr(inputs), repr(output)] + ([route] if route else [])
        lines.append(f"builder.add_node({node.name!r}, node({', '.join(args)}){defer})")
    return lines


def _route(node: NodeSpec, routers: dict[FuncRef, str]) -> str | None:
    def goto(cell: Any) -> str:
        if isinstance(cell, FuncRef):
            return f"router({routers[cell]}, {_cell(node.success_next)!r}, {_cell(node.failure_next)!r})"
        return repr(_targets(cell))

    if isinstance(node.edge, FuncRef):
        return goto(node.edge)
    if node.success_next is None and node.failure_next is None:
        return None
    return f"branch({goto(node.success_next)}, {goto(node.failure_next)})"


def _edges(graph: GraphSpec) -> list[str]:
    edges, _ = plan_joins(graph)
    lines = [f"builder.add_edge(START, {graph.entry!r})"]
    lines += [f"builder.add_edge({source!r}, {target!r})" for source, target in edges]
    lines += [f"builder.add_edge({n.name!r}, END)" for n in graph.nodes if not n.next_cells()]
    return lines
