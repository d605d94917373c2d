"""`BaseAgent`: the contract every AgentMap agent follows (seed 004).

A subclass implements `process(inputs) -> output` (sync or `async def`); `run(state)` extracts the
inputs named by `input_fields`, calls `process` between the `_pre_process` and `_post_process` hooks,
records the step on the execution tracker, and returns a partial state update:

* success: `{output_field: output, "last_action_success": True}`
* failure: `{"graph_success": ..., "last_action_success": False, "errors": ["Error in <node>: ..."]}`
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
import threading
import time
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from agentmap.agents.state import StateAdapter, parse_input_field, parse_output_field

__all__ = ["TRACE", "AgentEnvironment", "BaseAgent", "ConfigProblem", "Tracker", "run_sync"]

T = TypeVar("T")

ConfigProblem = str | tuple[str, str]
"""A problem `validate_config` found: a message (reported at the Context cell), or `(column, message)` to
report it at another column of the row (`"Tool_Source"`, `"Available_Tools"`, `"Prompt"`, ...)."""

TRACE = 5
"""The level `log_trace` logs at, below DEBUG."""
logging.addLevelName(TRACE, "TRACE")


def _is_control_flow(exc: Exception) -> bool:
    """LangGraph's control-flow signals (`interrupt()`, `Command` bubbling up) are not agent failures.

    Checked without importing LangGraph: if `langgraph.errors` is not loaded, `exc` cannot be one.
    """
    errors = sys.modules.get("langgraph.errors")
    return errors is not None and isinstance(exc, errors.GraphBubbleUp)


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code, on one long-lived background event loop.

    One loop for the whole process (rather than `asyncio.run` per call) keeps clients that cache an
    async connection pool per loop (langchain-openai does) working across runs, and works even when
    the calling thread already runs a loop (a notebook). Context variables of the caller are kept.
    """
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="agentmap-async", daemon=True).start()
        loop = _loop
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result()


@runtime_checkable
class Tracker(Protocol):
    """What `BaseAgent.run` needs of an execution tracker (`agentmap.ExecutionTracker` implements it)."""

    def record_node_start(self, node_name: str, inputs: Mapping[str, Any] | None = None) -> None:
        """Record that `node_name` started with `inputs`."""

    def record_node_result(self, node_name: str, success: bool, result: Any = None, error: str | None = None) -> None:
        """Record how `node_name` ended."""

    def update_graph_success(self) -> bool:
        """Recompute and return the graph's success under the tracker's policy."""


@dataclass(frozen=True)
class AgentEnvironment:
    """What an agent may need to know about where it runs, set by the compiler.

    Attributes:
        base_dir: The folder of the workflow file; relative paths in Context resolve against it.
        workflow_file: The workflow file, when the graph came from one.
        graph_name: The graph the node belongs to.
        settings: Global settings (model defaults, tool roots, ...) as a plain mapping.
        agents: The agents of the same graph by node name, filled in once all are built (an
            orchestrator node finds its planner and workers here).
        compile_options: The options the graph was compiled with (functions and custom agents folders,
            registry), so a node that compiles another graph (a subgraph) finds what its parent found.
    """

    base_dir: Path = field(default_factory=Path.cwd)
    workflow_file: Path | None = None
    graph_name: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    agents: Mapping[str, BaseAgent] = field(default_factory=dict)
    compile_options: Mapping[str, Any] = field(default_factory=dict)


class BaseAgent:
    """Base class of every agent.

    Args:
        name: The node name from the graph.
        prompt: The node's prompt text (may be a template).
        context: Configuration; `input_fields`, `output_field` and `description` are read from it.
            It is never modified.
        logger: Where `log_*` write; required by `run`.
        execution_tracker: Records every step; required by `run`.
    """

    environment: AgentEnvironment = AgentEnvironment(base_dir=Path("."))
    """Set by the compiler; agents that read files or settings resolve them from here."""

    default_output: ClassVar[str] = "output"

    def __init__(
        self,
        name: str,
        prompt: str,
        context: dict[str, Any] | None = None,
        logger: logging.Logger | None = None,
        execution_tracker: Tracker | None = None,
    ) -> None:
        self.name = name
        self.prompt = prompt
        self.context: dict[str, Any] = context or {}
        self.prompt_template = prompt

        self.input_fields: list[str] = list(self.context.get("input_fields", []))
        self.output_field: str = self.context.get("output_field", self.default_output)
        self.description: str = self.context.get("description", "")

        self._logger = logger
        self._execution_tracker = execution_tracker
        self._log_prefix = f"[{self.__class__.__name__}:{self.name}]"
        self._inputs = tuple(parse_input_field(f) for f in self.input_fields)
        self._outputs = tuple(parse_output_field(k) for k in (self.output_field or "").split("|") if k.strip())

    # -- configuration checks ------------------------------------------------------------------

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> Sequence[ConfigProblem]:
        """Return problems with a node's configuration, found when the workflow is validated.

        Override to reject bad Context keys, a missing API key, ... before any node runs. A message is
        reported at the node's Context cell; a `(column, message)` pair at that column of the row.
        """
        return []

    @classmethod
    def referenced_nodes(cls, context: Mapping[str, Any]) -> list[str]:
        """Nodes of the same graph this agent calls by name (through `environment.agents`), not by an edge.

        Validation counts them as reachable from this node. An orchestrator returns its planner and workers.
        """
        return []

    @classmethod
    def is_async(cls) -> bool:
        """Whether the agent's work is a coroutine (`async def process` or an `aprocess` twin)."""
        return inspect.iscoroutinefunction(cls.process) or hasattr(cls, "aprocess")

    def record_metadata(self, **metadata: Any) -> None:
        """Attach metadata (model, token usage, ...) to this node's entry in the execution summary."""
        annotate = getattr(self._execution_tracker, "annotate", None)
        if annotate is not None:
            annotate(self.name, **metadata)

    # -- logging -------------------------------------------------------------------------------

    def log(self, level: str, message: str, *args: Any, **kwargs: Any) -> None:
        """Log `message` at `level` ("debug", "info", ..., "trace") prefixed with the agent's name."""
        if self._logger is None:
            raise ValueError(
                f"Logger not provided to agent '{self.name}'. "
                "Please inject logger dependency using DI fixtures in tests or provide logger in constructor."
            )
        if level == "trace" and not hasattr(self._logger, "trace"):
            self._logger.log(TRACE, f"{self._log_prefix} {message}", *args, **kwargs)
            return
        logger_method = getattr(self._logger, level, self._logger.info)
        logger_method(f"{self._log_prefix} {message}", *args, **kwargs)

    def log_debug(self, message: str, *args: Any, **kwargs: Any) -> None:
        """Log a debug message with agent context."""
        self.log("debug", message, *args, **kwargs)

    def log_info(self, message: str, *args: Any, **kwargs: Any) -> None:
        """Log an info message with agent context."""
        self.log("info", message, *args, **kwargs)

    def log_warning(self, message: str, *args: Any, **kwargs: Any) -> None:
        """Log a warning message with agent context."""
        self.log("warning", message, *args, **kwargs)

    def log_error(self, message: str, *args: Any, **kwargs: Any) -> None:
        """Log an error message with agent context."""
        self.log("error", message, *args, **kwargs)

    def log_trace(self, message: str, *args: Any, **kwargs: Any) -> None:
        """Log a trace message (below DEBUG) with agent context."""
        self.log("trace", message, *args, **kwargs)

    # -- the work ------------------------------------------------------------------------------

    def process(self, inputs: dict[str, Any]) -> Any:
        """Turn the inputs into the value stored in the output field. Subclasses must implement it.

        Args:
            inputs: `{param: value}` for each of `input_fields`.

        Returns:
            The output; with several output fields (`a|b`), a dict with those keys.
        """
        raise NotImplementedError("Subclasses must implement process()")

    def _pre_process(self, state: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
        """Hook run before `process`; returns `(state, inputs)`."""
        return state, inputs

    def _post_process(self, state: Any, inputs: dict[str, Any], output: Any) -> tuple[Any, Any]:
        """Hook run after `process` (and, with the error update as `output`, after a failure)."""
        return state, output

    def run(self, state: Any) -> dict[str, Any]:
        """Run the agent on `state` and return only the fields to update.

        Raises:
            ValueError: When no logger or no execution tracker was provided.
        """
        started = self._start(state)
        state, inputs = started
        try:
            state, inputs = self._pre_process(state, inputs)
            process = self.process
            if type(self).process is BaseAgent.process and hasattr(self, "aprocess"):
                process = self.aprocess  # an agent with only the async twin still runs under invoke()
            output = process(inputs)
            if inspect.iscoroutine(output):
                output = run_sync(output)
            return self._succeed(state, inputs, output)
        except Exception as exc:
            if _is_control_flow(exc):
                raise
            return self._fail(state, inputs, exc)

    async def arun(self, state: Any) -> dict[str, Any]:
        """The async twin of `run`: awaits `aprocess` or an `async def process`."""
        state, inputs = self._start(state)
        try:
            state, inputs = self._pre_process(state, inputs)
            aprocess = getattr(self, "aprocess", None)
            output = await aprocess(inputs) if aprocess is not None else self.process(inputs)
            if inspect.isawaitable(output):
                output = await output
            return self._succeed(state, inputs, output)
        except Exception as exc:
            if _is_control_flow(exc):
                raise
            return self._fail(state, inputs, exc)

    def invoke(self, state: Any) -> dict[str, Any]:
        """Alias for `run()` to maintain compatibility with LangGraph."""
        return self.run(state)

    # -- internals shared by run and arun ------------------------------------------------------

    def _start(self, state: Any) -> tuple[Any, dict[str, Any]]:
        logger = self._logger
        if logger is not None and logger.isEnabledFor(TRACE):
            self._run_id = str(uuid.uuid4())[:8]
            self._started = time.time()
            self.log_trace(f"\n*** AGENT {self.name} RUN START [{self._run_id}] at {self._started} ***")
        elif logger is None:
            self.log_trace("")  # raises the contract's ValueError
        if self._execution_tracker is None:
            raise ValueError(
                f"ExecutionTracker not provided to agent '{self.name}'. "
                "Please inject execution_tracker dependency using DI fixtures in tests or provide "
                "execution_tracker in constructor."
            )
        if isinstance(state, Mapping):
            inputs = {param: state.get(key) for key, param in self._inputs}
        else:
            inputs = StateAdapter.get_inputs(state, self.input_fields)
        self._execution_tracker.record_node_start(self.name, inputs)
        return state, inputs

    def _succeed(self, state: Any, inputs: dict[str, Any], output: Any) -> dict[str, Any]:
        state, output = self._post_process(state, inputs, output)
        update = self._output_update(output)
        assert self._execution_tracker is not None
        self._execution_tracker.record_node_result(self.name, success=True, result=output)
        update["last_action_success"] = True
        logger = self._logger
        if logger is not None and logger.isEnabledFor(logging.DEBUG):
            self.log_debug(f"Set output field '{self.output_field}' = {output!r}")
            if logger.isEnabledFor(TRACE):
                self.log_trace(f"\n*** AGENT {self.name} RUN COMPLETED [{getattr(self, '_run_id', '')}] ***")
        return update

    def state_keys(self) -> list[str]:
        """State keys this agent writes besides its output fields (a memory key, say).

        The compiler adds them to the graph's state schema; a key missing from the schema is dropped.
        """
        return []

    def _output_update(self, output: Any) -> dict[str, Any]:
        outputs = self._outputs
        if not outputs or output is None:
            return {}
        if len(outputs) == 1 and outputs[0][1] is None:
            return {outputs[0][0]: output}
        if not isinstance(output, Mapping):
            raise TypeError(
                f"Output_Field '{self.output_field}' maps several fields, so the agent must return a dict "
                f"with the keys {', '.join(src or key for key, src in outputs)}; it returned {type(output).__name__}"
            )
        missing = [src or key for key, src in outputs if (src or key) not in output]
        if missing:
            raise KeyError(
                f"the agent's result has no key {', '.join(repr(k) for k in missing)} "
                f"(Output_Field '{self.output_field}'); it returned keys {sorted(map(str, output))}"
            )
        return {key: output[src or key] for key, src in outputs}

    def _fail(self, state: Any, inputs: dict[str, Any], exc: Exception) -> dict[str, Any]:
        error_msg = f"Error in {self.name}: {exc}"
        debugging = self._logger is not None and self._logger.isEnabledFor(logging.DEBUG)
        self.log_error(error_msg, exc_info=exc if debugging else None)  # the traceback when debugging
        tracker = self._execution_tracker
        assert tracker is not None
        self.record_metadata(_error_code=getattr(exc, "code", None) or type(exc).__name__)  # for traces
        tracker.record_node_result(self.name, False, error=error_msg)
        error_updates: dict[str, Any] = {
            "graph_success": tracker.update_graph_success(),
            "last_action_success": False,
            "errors": [error_msg],
        }
        try:
            _, post = self._post_process(state, inputs, error_updates)
            if isinstance(post, dict) and "last_action_success" in post:
                error_updates = post
        except Exception as post_error:
            self.log_error(f"Error in post-processing: {post_error}")
        return error_updates
