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
from agentmap.agents.registry import agent
from agentmap.errors import AgentMapError
from agentmap.runtime._subgraph_refs import current_walk, reference, resolve
from agentmap.runtime.runner import CompiledWorkflow
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
                caller = (environment.workflow_file, environment.graph_name)
                problem = current_walk().problem(path, graph, caller, environment.settings)
                return [problem] if problem is not None else []
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
