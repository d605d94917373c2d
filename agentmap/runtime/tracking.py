"""`ExecutionTracker`: records every node of a run, and decides the run's success by a policy.

Policies:
* `all_nodes` (default): every node that ran succeeded, or failed where the workflow handles it (`handled`:
  the node's Failure_Next names where to go on).
* `final_node`: the last node that finished succeeded.
* `critical_nodes`: every node named in `critical_nodes` that ran succeeded.
* any callable `f(summary: list[NodeExecution]) -> bool`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentmap.agents.runner import run_config

__all__ = ["ExecutionTracker", "NodeExecution", "SuccessPolicy", "resolve_policy"]

PolicyName = Literal["all_nodes", "final_node", "critical_nodes"]
SuccessPolicy = PolicyName | Callable[[Sequence["NodeExecution"]], bool]


@dataclass(slots=True)
class NodeExecution:
    """One execution of one node.

    Attributes:
        name: The node name.
        start: When it started (seconds since the epoch).
        end: When it finished, or None while running.
        duration: Seconds it took, or None while running.
        success: Whether it succeeded, or None while running.
        error: The error message of a failure.
        inputs: The inputs it was given.
        result: What it returned on success.
        metadata: Extra facts an agent recorded (model, token usage, ...).
        subgraph: The executions of a subgraph the node ran, in order.
        handled: It failed and the workflow handles that failure (its Failure_Next names the next node).
        facts: What traces and pictures read and the summary leaves out: LangGraph's `step`, a failure's
            `error_code`, an agent I/O response's `trace` events (agents record them as `_name` metadata).
    """

    name: str
    start: float
    end: float | None = None
    duration: float | None = None
    success: bool | None = None
    error: str | None = None
    inputs: Mapping[str, Any] | None = None
    result: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    subgraph: list[NodeExecution] | None = None
    handled: bool = False
    facts: dict[str, Any] = field(default_factory=dict, repr=False)
    _clock: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (without inputs and results, which may not serialise)."""
        data: dict[str, Any] = {
            "name": self.name,
            "start": self.start,
            "end": self.end,
            "duration": self.duration,
            "success": self.success,
            "error": self.error,
        }
        if self.metadata:
            data["metadata"] = self.metadata
        if self.handled:
            data["handled"] = True
        if self.subgraph is not None:
            data["subgraph"] = [e.to_dict() for e in self.subgraph]
        return data


def resolve_policy(
    policy: SuccessPolicy | None, critical_nodes: Sequence[str] = ()
) -> Callable[[Sequence[NodeExecution]], bool]:
    """Turn a policy name (or callable) into a function of the summary.

    Raises:
        ValueError: For an unknown policy name, or `critical_nodes` without nodes.
    """
    if policy is None or policy == "all_nodes":
        return lambda summary: all(e.success is not False or e.handled for e in summary)
    if policy == "final_node":
        return lambda summary: next((e.success for e in reversed(summary) if e.success is not None), True)
    if policy == "critical_nodes":
        if not critical_nodes:
            raise ValueError("the critical_nodes success policy needs the list of critical node names")
        critical = frozenset(critical_nodes)
        return lambda summary: all(e.success is not False for e in summary if e.name in critical)
    if callable(policy):
        return policy
    raise ValueError(f"unknown success policy {policy!r}: use all_nodes, final_node, critical_nodes or a callable")


class ExecutionTracker:
    """Records the nodes of one run, in execution order. Safe to use from parallel branches.

    Args:
        policy: How `update_graph_success` decides (see the module docstring).
        critical_nodes: The nodes the `critical_nodes` policy looks at.
        handled: The nodes whose failure the workflow handles (`GraphSpec.handled_failures`).
    """

    def __init__(
        self,
        policy: SuccessPolicy | None = None,
        critical_nodes: Sequence[str] = (),
        handled: Collection[str] = (),
    ) -> None:
        self._policy = resolve_policy(policy, critical_nodes)
        self._handled = handled
        self._listeners: list[Callable[[NodeExecution], None]] = []
        self._executions: list[NodeExecution] = []
        self._open: dict[str, NodeExecution] = {}
        self._retried: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self.graph_success = True

    def record_node_start(self, node_name: str, inputs: Mapping[str, Any] | None = None) -> None:
        """Record that `node_name` started with `inputs`."""
        execution = NodeExecution(node_name, time.time(), inputs=inputs, _clock=time.perf_counter())
        config = run_config()  # LangGraph's superstep: branches that ran in parallel share it
        step = config.get("metadata", {}).get("langgraph_step") if config is not None else None
        if step is not None:
            execution.facts["step"] = step
        with self._lock:
            if self._retried and node_name in self._retried:
                execution.metadata["failed_attempts"] = self._retried.pop(node_name)
            self._executions.append(execution)
            self._open[node_name] = execution
        for notify in self._listeners:
            notify(execution)

    def record_earlier(self, executions: Sequence[NodeExecution]) -> None:
        """Put the node runs of a thread's earlier steps first (a resumed run's summary is the whole run)."""
        with self._lock:
            self._executions[:0] = executions
        for execution in executions:
            for notify in self._listeners:
                notify(execution)

    def record_node_result(self, node_name: str, success: bool, result: Any = None, error: str | None = None) -> None:
        """Record how `node_name` ended (a result with no start recorded starts it now)."""
        with self._lock:
            execution = self._open.pop(node_name, None)
        if execution is None:
            self.record_node_start(node_name)
            with self._lock:
                execution = self._open.pop(node_name)
        execution.duration = time.perf_counter() - execution._clock
        execution.end = execution.start + execution.duration
        execution.success = success
        execution.handled = not success and node_name in self._handled
        execution.result = result
        execution.error = error
        for notify in self._listeners:
            notify(execution)

    def record_cached(self, node_name: str, update: Any) -> None:
        """Record a node the node cache answered: it did not run; `update` is what it wrote when it last did."""
        self.record_node_start(node_name)
        with self._lock:
            execution = self._open[node_name]
            execution.metadata["cached"] = True
        self.record_node_result(node_name, True, result=update)

    def _listen(self, listener: Callable[[NodeExecution], None]) -> None:
        """Call `listener` with each `NodeExecution` when it starts and when it ends: the run hooks' dispatcher,
        `runtime.events.observe_run`, does (to hear a run, give it `RunHooks`)."""
        self._listeners.append(listener)

    def retry_failed(self, node_name: str, error: str) -> None:
        """Forget the running execution of `node_name`, whose attempt failed and will run again.

        The error is kept: the next execution of the node lists it in `metadata["failed_attempts"]`.
        """
        with self._lock:
            execution = self._open.pop(node_name, None)
            earlier: list[str] = []
            if execution is not None:
                self._executions.remove(execution)
                earlier = execution.metadata.get("failed_attempts", [])
            self._retried[node_name] = [*earlier, error]

    def annotate(self, node_name: str, **metadata: Any) -> None:
        """Attach metadata to the running (or last) execution of `node_name` (`_name` keys go to its `facts`)."""
        with self._lock:
            execution = self._open.get(node_name) or next(
                (e for e in reversed(self._executions) if e.name == node_name), None
            )
        if execution is not None:
            for key, value in metadata.items():
                if key.startswith("_"):
                    execution.facts[key[1:]] = value
                else:
                    execution.metadata[key] = value

    def record_subgraph(self, node_name: str, executions: Sequence[NodeExecution]) -> None:
        """Nest a subgraph's executions under the running execution of `node_name`."""
        with self._lock:
            execution = self._open.get(node_name)
        if execution is not None:
            execution.subgraph = list(executions)

    def update_graph_success(self) -> bool:
        """Recompute the run's success under the policy, store it in `graph_success` and return it."""
        with self._lock:
            summary = list(self._executions)
        self.graph_success = bool(self._policy(summary))
        return self.graph_success

    def conclude(self) -> tuple[bool, list[NodeExecution]]:
        """What a finished run reports: `update_graph_success()` and `summary`, from one copy of the executions."""
        with self._lock:
            summary = list(self._executions)
        self.graph_success = bool(self._policy(summary))
        return self.graph_success, list(summary)

    @property
    def summary(self) -> list[NodeExecution]:
        """Every execution so far, in the order the nodes started."""
        with self._lock:
            return list(self._executions)
