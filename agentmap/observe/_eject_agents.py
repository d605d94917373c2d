"""The nodes an ejected module cannot write out: it builds AgentMap's own agent class for each, as the compiler
does (same name, prompt, Context and environment), and runs it as a LangGraph node."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from pprint import pformat
from typing import TYPE_CHECKING

from agentmap.agents.registry import registry

if TYPE_CHECKING:
    from agentmap.agents.base import BaseAgent

__all__ = ["AGENT_NODE", "agents_block", "may_pause", "why_not"]

AGENT_NODE = '''

def agent_node(agent: Any, route: Route | None = None) -> Callable[[dict[str, Any]], Any]:
    """A node run by an AgentMap agent: `agent.run(state)` records a failure in `errors` itself."""

    def run(state: dict[str, Any]) -> Any:
        update = agent.run(state)
        if update.get("last_action_success") is False:
            update["graph_success"] = agent.name in HANDLED and state.get("graph_success", True) is not False
        return update if route is None else route(state, update)

    return run
'''

_LOAD_CLASS = '''

def _load_class(path: str, name: str) -> Any:
    """A custom agent class, imported from its file (edit the path if the module moves)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"custom_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)
'''


def _is_literal(value: object) -> bool:
    try:
        return bool(ast.literal_eval(repr(value)) == value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _source(cls: type) -> tuple[str | None, str]:
    """`(file, qualname)` of a class kept outside the agentmap package (a custom agent), else `(None, module)`."""
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    if cls.__module__.split(".")[0] == "agentmap" or file is None:
        return None, cls.__module__
    return str(Path(file).resolve()), cls.__qualname__


def _by_name(cls: type) -> bool:
    """Whether `from module import Name` gives the class (a class a registry made on the fly does not)."""
    return getattr(sys.modules.get(cls.__module__), cls.__name__, None) is cls


def why_not(agent: BaseAgent, agent_type: str) -> str | None:
    """Why the agent cannot be rebuilt by the module (None when it can)."""
    cls = type(agent)
    if _source(cls)[0] is None and not _by_name(cls) and registry.get(agent_type) is not cls:
        return f"its agent class {cls.__qualname__} cannot be imported by name"
    if not _is_literal(agent.context):
        return "its Context holds values that cannot be written as Python literals"
    if not _is_literal(dict(agent.environment.settings)):
        return "the settings hold values that cannot be written as Python literals"
    return None


def agents_block(
    agents: Mapping[str, BaseAgent], types: Mapping[str, str], takes_environment: Callable[[type[BaseAgent]], bool]
) -> tuple[list[str], list[str]]:
    """`(imports, lines)`: the agent classes imported and the agents built, sharing one environment."""
    first = next(iter(agents.values())).environment
    imports = ["import logging", "from pathlib import Path", "", "from agentmap.agents.base import AgentEnvironment"]
    imports.append("from agentmap.runtime.tracking import ExecutionTracker")
    lines: list[str] = []
    classes: dict[type, str] = {}
    for node, agent in agents.items():
        cls = type(agent)
        if cls in classes:
            continue
        file, name = _source(cls)
        classes[cls] = cls.__name__ if file is None else cls.__qualname__
        if file is None and _by_name(cls):
            imports.append(f"from {name} import {cls.__name__}")
        elif file is None:  # a class the registry made for its agent type
            if "from agentmap.agents.registry import registry" not in imports:
                imports.append("from agentmap.agents.registry import registry")
            lines += ["", f"{cls.__name__} = registry.resolve({types[node]!r})"]
        else:
            if _LOAD_CLASS not in lines:
                lines.append(_LOAD_CLASS)
            lines += ["", f"{cls.__qualname__} = _load_class({file!r}, {name!r})"]
    settings = pformat(dict(first.settings), width=110, sort_dicts=False)
    lines += ["", "", f"SETTINGS = {settings}", "", "AGENTS: dict[str, Any] = {}", "ENVIRONMENT = AgentEnvironment("]
    lines += [
        f"    base_dir=Path({str(first.base_dir.resolve())!r}),",
        f"    workflow_file={_path(first.workflow_file)},",
        f"    graph_name={first.graph_name!r},",
        "    settings=SETTINGS,",
        "    agents=AGENTS,",
        "    new_tracker=ExecutionTracker,",
        "    handled_failures=frozenset(HANDLED),",
        ")",
        'LOGGER = logging.getLogger("agentmap.agents")',
    ]
    for name, agent in agents.items():
        class_name = classes[type(agent)]
        context = pformat(agent.context, width=100, sort_dicts=False).replace("\n", "\n    ")
        args = f"{name!r}, {agent.prompt!r}, {context}, LOGGER"
        if takes_environment(type(agent)):
            lines.append(f"AGENTS[{name!r}] = {class_name}({args}, environment=ENVIRONMENT)")
        else:
            lines += [f"AGENTS[{name!r}] = {class_name}({args}, None)", f"AGENTS[{name!r}].environment = ENVIRONMENT"]
    return imports, lines


def _path(path: Path | None) -> str:
    return "None" if path is None else f"Path({str(path.resolve())!r})"


def may_pause(agent: BaseAgent) -> bool:
    """Whether the node may pause the run (the module then keeps its checkpoints in memory)."""
    return bool(type(agent).may_pause(agent.context))
