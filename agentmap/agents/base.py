"""`BaseAgent`: the contract every AgentMap agent follows.

A subclass implements `process(inputs) -> output` (sync or `async def`); `run(state)` extracts the
inputs named by `input_fields`, calls `process` between the `_pre_process` and `_post_process` hooks,
records the step on the execution tracker, and returns a partial state update:

* success: `{output_field: output, "last_action_success": True}`
* failure: `{"graph_success": ..., "last_action_success": False, "errors": ["Error in <node>: ..."]}`
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from agentmap.agents import _steps
from agentmap.agents._agent_log import TRACE, AgentLog
from agentmap.agents._bridge import run_sync
from agentmap.agents._contract import log_text
from agentmap.agents._io import IOMapping
from agentmap.agents._run_context import run_tracker

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agentmap.agents.llm_batch import ModelBatching

__all__ = [
    "TRACE",
    "AgentEnvironment",
    "BaseAgent",
    "ConfigProblem",
    "NodeRoute",
    "Tracker",
    "log_text",
    "run_sync",
]

ConfigProblem = str | tuple[str, str]
"""A problem `validate_config` found: a message (reported at the Context cell), or `(column, message)` to
report it at another column of the row (`"Tool_Source"`, `"Available_Tools"`, `"Prompt"`, ...)."""

_SEES_THE_STATE = ("run", "arun", "_pre_process", "_post_process")
"""What of `BaseAgent` touches the state a node is given: a class keeping all of them reads only its inputs."""


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
        handled_failures: The nodes of the graph whose failure the workflow handles (a Failure_Next that
            names the next node): their failure is a designed path, logged at INFO, not ERROR.
        new_tracker: Makes a tracker for a node that runs inside a LangGraph graph that is not an
            AgentMap run (embedded in someone else's graph), so the node is tracked on its own.
    """

    base_dir: Path = field(default_factory=Path.cwd)
    workflow_file: Path | None = None
    graph_name: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    agents: Mapping[str, BaseAgent] = field(default_factory=dict)
    compile_options: Mapping[str, Any] = field(default_factory=dict)
    new_tracker: Callable[[], Tracker] | None = None
    handled_failures: frozenset[str] = frozenset()


class NodeRoute(Protocol):
    """How a node that decides its own next node routes: the nodes it may go to, and the `Command` for an update."""

    destinations: tuple[str, ...]

    def __call__(self, state: Mapping[str, Any], update: dict[str, Any]) -> Any: ...


class BaseAgent:
    """Base class of every agent.

    Args:
        name: The node name from the graph.
        prompt: The node's prompt text (may be a template).
        context: Configuration; `input_fields`, `output_field` and `description` are read from it.
            It is never modified.
        logger: Where `log_*` write; required by `run`.
        execution_tracker: Records every step; required by `run` outside a graph. Inside an AgentMap run
            (a compiled workflow), the run's tracker is found in the run's LangGraph config instead.
        environment: Where the node runs (folder, settings, the graph's other agents); the compiler
            passes it. Without it, paths resolve against the working directory.
    """

    environment: AgentEnvironment = AgentEnvironment(base_dir=Path("."))
    """Where the node runs; agents that read files or settings resolve them from here."""

    default_output: ClassVar[str] = "output"

    input_model: ClassVar[type[BaseModel] | None] = None
    """A pydantic model of the inputs the agent reads: a protocol asking a caller for them (`agentmap mcp`'s tool
    input schema) types each input key that is one of its fields with that field's JSON Schema."""

    own_timeout: ClassVar[bool] = False
    """True for a type that gives Context `timeout_seconds` a meaning of its own (an orchestration's deadline,
    how long a person may take); the runtime then does not also bound the node's attempts with it."""

    own_cache: ClassVar[bool] = False
    """True for a type that gives Context `cache` a meaning of its own (the LLM response cache of the types that
    call a model); the runtime then does not also cache the node's update (csv_specs/format.md)."""

    computes_only: ClassVar[bool] = False
    """True for a type whose work only computes (no I/O, no waiting, no pause): an async run then runs its
    nodes on the event loop instead of a worker thread. A class says it in its own body; a subclass that does
    not is False again (it may add I/O), so a custom agent is never run on the loop unless it declares it."""

    # What the runner needs to know of a class, worked out once when the class is made:
    _own_run: ClassVar[bool] = False  # overrides `run` (the runner then calls it)
    _own_arun: ClassVar[bool] = False  # overrides `arun`
    _own_hooks: ClassVar[bool] = False  # overrides `_pre_process` / `_post_process` (their changes are kept)
    _async_only: ClassVar[bool] = False  # has only `aprocess` (`run` then runs it to the end)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "computes_only" not in cls.__dict__:
            cls.computes_only = False
        cls._own_run = cls.run is not BaseAgent.run
        cls._own_arun = cls.arun is not BaseAgent.arun
        cls._own_hooks = cls._pre_process is not BaseAgent._pre_process or (
            cls._post_process is not BaseAgent._post_process
        )
        cls._async_only = cls.process is BaseAgent.process and hasattr(cls, "aprocess")

    def __init__(
        self,
        name: str,
        prompt: str,
        context: dict[str, Any] | None = None,
        logger: logging.Logger | None = None,
        execution_tracker: Tracker | None = None,
        *,
        environment: AgentEnvironment | None = None,
    ) -> None:
        self.name = name
        self.prompt = prompt
        self.context: dict[str, Any] = context or {}
        self.prompt_template = prompt

        self.input_fields: list[str] = list(self.context.get("input_fields", []))
        self.output_field: str = self.context.get("output_field", self.default_output)
        self.description: str = self.context.get("description", "")

        self._log_prefix = f"[{self.__class__.__name__}:{self.name}]"
        self._log = AgentLog(self.name, self._log_prefix, None)
        self._logger = logger
        self._execution_tracker = execution_tracker
        self._io = IOMapping(self.input_fields, self.output_field)
        if environment is not None:
            self.environment = environment

    @property
    def _logger(self) -> logging.Logger | None:
        """The logger given to the constructor (or injected later); `log_*` write to it."""
        return self._log.logger

    @_logger.setter
    def _logger(self, logger: logging.Logger | None) -> None:
        self._log.logger = logger

    @property
    def _execution_tracker(self) -> Tracker | None:
        """The tracker given to the constructor, else the tracker of the AgentMap run this call is part of."""
        given = self._given_tracker
        return given if given is not None else run_tracker()

    @_execution_tracker.setter
    def _execution_tracker(self, tracker: Tracker | None) -> None:
        self._given_tracker = tracker

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
    def may_pause(cls, context: Mapping[str, Any]) -> bool:
        """Whether a node of this type, with this Context, may pause the run (call LangGraph's `interrupt()`).

        Such a node is never fused into one step with its neighbours (`compile(fuse=True)`): when the run is
        resumed, the paused node must be the only one that runs again. Override it in an agent that calls
        `interrupt()`.
        """
        return False

    def model_batching(self) -> ModelBatching | None:
        """Whether this node's model calls can go through a provider batch job (`agentmap batch --llm-batch`):
        None for a node that calls no model (the default); a node whose model has no batch API says why."""
        return None

    @classmethod
    def reads_only_inputs(cls) -> bool:
        """Whether the agent sees nothing of the state but its Input_Fields.

        The compiler then hands such a node only those keys (csv_specs/format.md, "What a node reads"). The
        default answers True for a class that keeps the contract's `run`, `arun` and the `_pre_process` /
        `_post_process` hooks (which see the whole state); override it to return True when hooks of your own
        read only the inputs, or False when the agent reads the state some other way.
        """
        return all(getattr(cls, name) is getattr(BaseAgent, name) for name in _SEES_THE_STATE)

    @classmethod
    def is_async(cls) -> bool:
        """Whether the agent's work is a coroutine (`async def process` or an `aprocess` twin)."""
        return inspect.iscoroutinefunction(cls.process) or hasattr(cls, "aprocess")

    def own_route(self, node: Any) -> NodeRoute | None:
        """The router of an agent that picks its node's next node itself (the 0.9 orchestrator: its output names
        the node); `node` is the node's spec. None, the default, routes by the node's next columns."""
        return None

    def record_metadata(self, **metadata: Any) -> None:
        """Attach metadata (model, token usage, ...) to this node's entry in the execution summary."""
        annotate = getattr(self._execution_tracker, "annotate", None)
        if annotate is not None:
            annotate(self.name, **metadata)

    # -- logging -------------------------------------------------------------------------------

    def log(self, level: str, message: str, *args: Any, **kwargs: Any) -> None:
        """Log `message` at `level` ("debug", "info", ..., "trace") prefixed with the agent's name.

        Raises:
            ValueError: No logger was given to the agent.
        """
        self._log.log(level, message, *args, **kwargs)

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
        """Log a trace message with agent context (a standard logger's `info`, as the contract says)."""
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
        return _steps.run_node(self, state, via_run=True)

    async def arun(self, state: Any) -> dict[str, Any]:
        """The async twin of `run`: awaits `aprocess` or an `async def process`."""
        return await _steps.arun_node(self, state, via_run=True)

    def invoke(self, state: Any) -> dict[str, Any]:
        """Alias for `run()` to maintain compatibility with LangGraph."""
        return self.run(state)

    def input_mapping(self) -> tuple[tuple[str, str], ...]:
        """`(state key, parameter)` for each Input_Fields entry, in order: `process` finds `state[key]` as
        `inputs[parameter]` (`key`, `key:parameter` or `parameter=key`)."""
        return self._io.reads

    def output_mapping(self) -> tuple[tuple[str, str | None], ...]:
        """`(state key, result key)` for each Output_Field entry, in order: the output (or its `result key`, for
        `key=result_key` and several fields) is written to `state key`; the result key is None for a plain `key`."""
        return self._io.writes

    def state_keys(self) -> list[str]:
        """State keys this agent writes besides its output fields (a memory key, say).

        The compiler adds them to the graph's state schema; a key missing from the schema is dropped.
        """
        return []
