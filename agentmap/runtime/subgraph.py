"""The `graph` agent type: run another graph, of the same file or another, as one node.

Context `workflow` names the graph: `::Inner` (same file), `other.csv::Inner` or `other.csv` (relative
to this workflow's folder). The existing AgentMap directive `{workflow=::Inner}` means the same.
Input_Fields `child=parent` hands the parent's `parent` key to the child as `child` (a plain name
keeps its name); Output_Field `parent=child` copies the child's final `child` key to the parent's
`parent` key, and a single plain Output_Field receives the child's whole final state. The child's
execution summary nests under this node's entry in the parent's summary.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.agents.registry import agent, normalize_type
from agentmap.errors import AgentMapError
from agentmap.runtime.runner import CompiledWorkflow
from agentmap.spec.loader import parse_selector, read_workflow
from agentmap.spec.paths import OutsideRootsError, allowed_roots, confine, widen_hint
from agentmap.spec.prompts import prompts_folder
from agentmap.spec.validation import SYSTEM_KEYS

__all__ = ["GraphAgent"]


def _reference(value: Any, environment: AgentEnvironment) -> tuple[Path, str | None]:
    text = str(value or "").strip()
    if not text:
        raise ValueError(
            'a graph node needs Context {"workflow": "::GraphName"} or {"workflow": "file.csv::GraphName"}'
        )
    path, graph = parse_selector(text)
    if not str(path) or str(path) == ".":
        if environment.workflow_file is None:
            raise ValueError(f"{text!r} refers to the same file, but this graph did not come from a file")
        return environment.workflow_file, graph
    try:
        return confine(str(path), environment.base_dir, allowed_roots(environment.settings)), graph
    except OutsideRootsError as err:
        raise ValueError(
            f"subgraph file {str(path)!r} resolves to {err.path}, outside the folders a workflow may use "
            f"({', '.join(map(str, err.roots))}): {widen_hint('the subgraph file')}"
        ) from None


@agent("graph")
class GraphAgent(BaseAgent):
    """Runs another graph as a subgraph node (see the module docstring for the mappings)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._child: CompiledWorkflow | None = None
        self._lock = threading.Lock()

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """The referenced file and graph must exist, and no graph may contain itself."""
        try:
            path, graph = _reference(context.get("workflow") or context.get("graph"), environment)
            _check_cycle(path, graph, {(environment.workflow_file, environment.graph_name)}, environment)
        except (ValueError, AgentMapError) as exc:
            return [str(exc)]
        return []

    def child(self) -> CompiledWorkflow:
        """The compiled subgraph (compiled on first use)."""
        with self._lock:
            if self._child is None:
                from agentmap.runtime.api import compile

                path, graph = _reference(self.context.get("workflow") or self.context.get("graph"), self.environment)
                self._child = compile(path, graph, **self.environment.compile_options)
            return self._child

    def process(self, inputs: dict[str, Any]) -> Any:
        """Run the child graph on the mapped inputs and return its final state (without system keys)."""
        child = self.child()
        tracker = child.new_tracker()
        result = child.invoke(inputs, tracker=tracker)
        parent = self._execution_tracker
        if parent is not None and hasattr(parent, "record_subgraph"):
            parent.record_subgraph(self.name, result.summary)
        if not result.success:
            raise RuntimeError(
                f"subgraph {child.name!r} failed at {', '.join(result.failed_nodes) or 'a node'}: "
                + "; ".join(result.errors)
            )
        return {k: v for k, v in result.state.items() if k not in SYSTEM_KEYS}


def _check_cycle(
    path: Path, graph: str | None, seen: set[tuple[Path | None, str]], environment: AgentEnvironment
) -> None:
    from agentmap.runtime.api import select_graph

    settings = environment.settings
    workflow, _ = read_workflow(path, roots=allowed_roots(settings), prompts_dir=prompts_folder(settings))
    spec = select_graph(workflow, graph)
    key = (path.resolve(), spec.name)
    if any(s[0] is not None and (Path(s[0]).resolve(), s[1]) == key for s in seen):
        raise ValueError(f"graph {spec.name!r} of {path.name} contains itself through graph nodes (a cycle)")
    seen = seen | {key}
    child_env = AgentEnvironment(base_dir=path.parent, workflow_file=path, graph_name=spec.name, settings=settings)
    for node in spec.nodes:
        if normalize_type(node.agent_type) == "graph":
            ref = node.context.get("workflow") or node.context.get("graph")
            try:
                child_path, child_graph = _reference(ref, child_env)
            except ValueError:
                continue
            _check_cycle(child_path, child_graph, seen, environment)
