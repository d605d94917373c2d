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

from agentmap._paths import allowed_roots
from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.agents.registry import agent, normalize_type
from agentmap.errors import AgentMapError
from agentmap.runtime._subgraph_refs import reference, resolve
from agentmap.runtime.runner import CompiledWorkflow
from agentmap.spec.loader import read_workflow
from agentmap.spec.prompts import prompts_folder
from agentmap.spec.validation import SYSTEM_KEYS

__all__ = ["GraphAgent"]


def _reference(text: str, environment: AgentEnvironment) -> tuple[Path, str | None]:
    return resolve(text, environment.base_dir, environment.workflow_file, environment.settings)


@agent("graph")
class GraphAgent(BaseAgent):
    """Runs another graph as a subgraph node (see the module docstring for the mappings)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._children: dict[str, CompiledWorkflow] = {}
        self._lock = threading.Lock()
        self._dynamic = threading.local()

    @classmethod
    def may_pause(cls, context: Mapping[str, Any]) -> bool:
        """A subgraph may hold a node that pauses, and resuming reruns the node that holds it."""
        return True

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """The referenced file and graph must exist, and no graph may contain itself.

        A graph read from the state (`workflow_field`) is checked when the node runs.
        """
        try:
            ref = reference(context, prompt)
            if ref.state_key is None:
                path, graph = _reference(ref.text, environment)
                _check_cycle(path, graph, {(environment.workflow_file, environment.graph_name)}, environment)
        except (ValueError, AgentMapError) as exc:
            return [str(exc)]
        return []

    @classmethod
    def dialect_notes(cls, prompt: str, context: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """The Prompt naming the subgraph (AgentMap 0.9) is read as `workflow`: say so."""
        try:
            ref = reference(context, prompt)
        except ValueError:
            return []
        if not ref.spelling.startswith("Prompt"):
            return []
        text = ref.text if ref.text.split("::")[0] else f"::{ref.text.split('::')[-1]}"
        return [
            (
                "Prompt",
                f"the Prompt {prompt.strip()!r} is read as the subgraph to run (AgentMap 0.9)",
                f"{{workflow={text}}} in Context",
            )
        ]

    def child(self, text: str | None = None) -> CompiledWorkflow:
        """The compiled subgraph (compiled on first use); `text` is a reference read from the state."""
        if text is None:
            text = reference(self.context, self.prompt).text
        with self._lock:
            if text not in self._children:
                from agentmap.runtime.api import compile

                path, graph = _reference(text, self.environment)
                self._children[text] = compile(path, graph, **self.environment.compile_options)
            return self._children[text]

    def _pre_process(self, state: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
        """For `workflow_field`, read the reference from the state (it need not be among the inputs)."""
        key = reference(self.context, self.prompt).state_key
        if key is not None:
            value = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(
                    f"workflow_field names the state key {key!r}, which holds {value!r}: put a graph reference "
                    "such as '::GraphName' or 'file.csv::GraphName' there"
                )
            self._dynamic.text = value
        return state, inputs

    def process(self, inputs: dict[str, Any]) -> Any:
        """Run the child graph on the mapped inputs and return its final state (without system keys)."""
        dynamic = getattr(self._dynamic, "text", None)
        self._dynamic.text = None
        child = self.child(dynamic)
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
            try:
                ref = reference(node.context, node.prompt)
                if ref.state_key is not None:
                    continue
                child_path, child_graph = _reference(ref.text, child_env)
            except ValueError:
                continue
            _check_cycle(child_path, child_graph, seen, environment)
