"""The fixed text of a module `agentmap export --format python` writes: its imports, the helpers its nodes
are built with, and its `run` and `__main__`."""

__all__ = ["HEADER", "LOADER", "MAIN", "RUNTIME"]

HEADER = '''\
"""{name}: ejected from {file} by `agentmap export --format python`.

A standalone LangGraph module: `python {module} '{{"key": "value"}}'` runs the graph on that state and
prints the final state as JSON; `graph` is the compiled LangGraph graph.
"""

import json
import operator
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypedDict

from langgraph.channels import LastValue
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
'''

RUNTIME = '''

class AllOfStep(LastValue[bool]):
    """`last_action_success`: the last step's outcome, false if any parallel branch of that step failed."""

    def update(self, values: Sequence[bool]) -> bool:
        if not values:
            return False
        self.value = all(values)
        return True


class LastOfStep(LastValue[bool]):
    """`graph_success`: written by failing nodes; parallel failures in one step agree, so keep the last."""

    def update(self, values: Sequence[bool]) -> bool:
        if not values:
            return False
        self.value = values[-1]
        return True


HANDLED = {handled!r}
"""Nodes whose failure the workflow handles (they have a Failure_Next): the run still succeeds."""

Route = Callable[[Mapping[str, Any], dict[str, Any]], Any]
"""Where a node with Success_Next / Failure_Next or a router goes: `route(state, update) -> Command`."""


def node(
    name: str,
    work: Callable[[dict[str, Any]], Any],
    inputs: dict[str, str],
    output: str | None,
    route: Route | None = None,
) -> Callable[[dict[str, Any]], Any]:
    """A LangGraph node: read `inputs` (`{{state key: name the work sees}}`), run `work`, write `output`.

    A failure does not stop the run: it is recorded in `errors` and `last_action_success` is false.
    """

    def run(state: dict[str, Any]) -> Any:
        try:
            result = work({{param: state.get(key) for key, param in inputs.items()}})
            update = {{output: result}} if output and result is not None else {{}}
            update["last_action_success"] = True
        except Exception as exc:
            handled = name in HANDLED and state.get("graph_success", True) is not False
            error = f"Error in {{name}}: {{exc}}"
            update = {{"graph_success": handled, "last_action_success": False, "errors": [error]}}
        return update if route is None else route(state, update)

    return run


def branch(success: list[str] | Route, failure: list[str] | Route) -> Route:
    """Success_Next / Failure_Next: go on by the node's own outcome (to nodes, or as a router says)."""

    def route(state: Mapping[str, Any], update: dict[str, Any]) -> Any:
        targets = success if update.get("last_action_success", True) is not False else failure
        if callable(targets):
            return targets(state, update)
        return Command(update=update, goto=targets or END)

    return route


def router(function: Callable[..., Any], success: str | None, failure: str | None) -> Route:
    """A `func:` router: the function sees the state with the node's update and names the next node(s)."""

    def route(state: Mapping[str, Any], update: dict[str, Any]) -> Any:
        merged = {{**state, **update}}
        if "errors" in update:
            merged["errors"] = [*(state.get("errors") or ()), *update["errors"]]
        result = function(merged, success, failure)
        names = [result] if isinstance(result, str) or result is None else list(result)
        goto = [
            part.strip()
            for name in names
            if str(name or "").strip().lower() not in ("", "end", "__end__")
            for part in str(name).split("|")
        ]
        unknown = [name for name in goto if name not in NODES]
        if unknown:
            raise ValueError(f"router {{function.__name__}} returned {{unknown[0]!r}}, which is not a node")
        return Command(update=update, goto=goto or END)

    return route
'''

MAIN = '''

def run(state: dict[str, Any]) -> dict[str, Any]:
    """Run the graph on `state`; the final state, with `graph_success` (every failure handled)."""
    final = {**state, "errors": [], **graph.invoke(state, CONFIG)}
    final.pop("__interrupt__", None)  # a node paused the run: the state so far
    final["graph_success"] = final.get("graph_success", True) is not False
    return final


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1] if len(sys.argv) > 1 else "{}")), indent=2, default=str))
'''

LOADER = '''

def _load_function(path: str, name: str) -> Callable[..., Any]:
    """A `func:` router, imported from its file (edit the path if the module moves)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"router_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)  # type: ignore[no-any-return]
'''
