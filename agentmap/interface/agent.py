"""Any workflow as an agent: `run_agent` (csv_specs/run_agent.md), `agent_for(workflow)` and `load_active_agent()`.

```python
from agentmap.interface import agent_for

run_agent = agent_for("graphs/llm_offline.csv")
output = await run_agent("reverse the text hello", chat_history="user: hi\\nassistant: hello")
output["content"], output["response_time_secs"], output["traces"]
```

Which state keys receive the prompt, the history and the memory, and which state key is the reply, come
from `agent_for`'s arguments, else from a `"run_agent"` object in any node's Context
(`{"run_agent": {"prompt": "request", "history": "chat_history", "content": "message"}}`), else from
defaults (see csv_specs/run_agent.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.errors import AgentMapError, ConfigError, ErrorCode, Location
from agentmap.interface.agent_calls import SYNC_TWIN
from agentmap.interface.agent_config import resolve_agent_config
from agentmap.interface.history import parse_chat_history
from agentmap.interface.tracing import ToolTraceCollector, unique_tool_names
from agentmap.runtime.api import compile, load_graph
from agentmap.runtime.options import CompileOptions

if TYPE_CHECKING:
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.spec.models import GraphSpec

__all__ = [
    "ACTIVE_AGENT_ENV",
    "AgentFunction",
    "active_agent_target",
    "agent_for",
    "load_active_agent",
    "repository_root",
    "run_agent",
]

ACTIVE_AGENT_ENV = "ACTIVE_AGENT_PATH"
"""The environment variable naming the active agent: a Python file exposing `run_agent`, or a workflow."""

AgentFunction = Callable[..., Awaitable[dict[str, Any]]]
"""`async run_agent(prompt, chat_history=None, memory=None, config=None) -> dict`."""

_WORKFLOW_SUFFIXES = (".csv", ".xlsx", ".yaml", ".yml")
_HISTORY_KEYS = ("chat_history", "history", "messages")


def agent_for(
    workflow: str | os.PathLike[str] | CompiledWorkflow,
    *,
    prompt_key: str | None = None,
    history_key: str | None = None,
    memory_key: str | None = None,
    config_key: str | None = None,
    content_key: str | None = None,
    options: CompileOptions | None = None,
    **compile_options: Any,
) -> AgentFunction:
    """Build a csv_specs/run_agent.md `run_agent` for a workflow.

    Args:
        workflow: `file.csv`, `file.csv::Graph`, or a compiled workflow.
        prompt_key: The state key that receives the prompt.
        history_key: The state key that receives the chat history, as `{"role", "content"}` messages.
        memory_key: The state key that receives `memory`.
        config_key: The state key that receives the resolved config (an `AgentConfig` as a dict).
        content_key: The state key whose value is the reply (`content`).
        options: `agentmap.compile`'s options as one `CompileOptions`, instead of the keywords.
        **compile_options: Passed to `agentmap.compile` (`settings`, `functions_dir`, ...).

    Returns:
        `async run_agent(prompt, chat_history=None, memory=None, config=None)` returning the contract's
        minimal output as a dict, with extras: `tools` (names, once each, in first-use order), `success`,
        `errors`, `timings` (seconds per node), `models` (model per LLM node), `nodes` (the nodes run, in
        order) and `state` (the final state, as JSON data; what evaluation's `expected_state` checks).

    Raises:
        WorkflowFileError, GraphNotFoundError, WorkflowValidationError: When the workflow cannot be compiled.
    """
    given = CompileOptions.given("agent_for", options, compile_options)
    spec = workflow.spec if not isinstance(workflow, str | os.PathLike) else _load_spec(workflow, given)
    keys = _Keys.for_workflow(spec, prompt_key, history_key, memory_key, config_key, content_key)
    app = workflow if not isinstance(workflow, str | os.PathLike) else _compile(workflow, keys, given)

    def inputs(prompt: str, chat_history: str | None, memory: str | None, config: Any) -> dict[str, Any]:
        # the environment and a given config resolved (and checked) once per call, if the workflow reads them
        resolved = resolve_agent_config(config) if keys.config is not None or config is not None else None
        state: dict[str, Any] = {keys.prompt: prompt}
        if keys.history is not None:
            state[keys.history] = [{"role": r, "content": t} for r, t in parse_chat_history(chat_history)]
        if keys.memory is not None and memory is not None:
            state[keys.memory] = memory
        if keys.config is not None and resolved is not None:
            state[keys.config] = resolved.model_dump(mode="json")
        # a run_agent call carries nothing else: the workflow's other inputs read None (the contract has no room
        # for them), as they did before runs refused a state without them
        unasked = app.check_state(state)
        if unasked is not None:
            state.update(dict.fromkeys(unasked.keys))
        return state

    def output(result: RunResult, collector: ToolTraceCollector, started: float) -> dict[str, Any]:
        """The contract's output as `AgentOutputMinimal.to_dict()` gives it, built from values already typed
        (a str reply, float seconds, checked traces) rather than validated and dumped again on every run."""
        traces = collector.traces
        return {
            "content": _content(result, keys.content, app),
            "response_time_secs": round(time.perf_counter() - started, 6),
            "traces": [t.model_dump(mode="json", exclude_none=True) for t in traces],
            "tools": unique_tool_names(traces),
            "success": bool(result.success),
            "errors": [str(e) for e in result.errors] + [str(p["error"]) for p in collector.problems],
            "timings": _timings(result, collector.problems),
            "models": {e.name: str(e.metadata["model"]) for e in result.summary if "model" in e.metadata},
            "nodes": [e.name for e in result.summary],
            "state": json.loads(json.dumps(dict(result.state), ensure_ascii=False, default=str)),
        }

    async def run_workflow_agent(
        prompt: str,
        chat_history: str | None = None,
        memory: str | None = None,
        config: Mapping[str, Any] | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        started, collector = time.perf_counter(), ToolTraceCollector()
        state = inputs(prompt, chat_history, memory, config)
        return output(await app.ainvoke(state, {"callbacks": [collector]}), collector, started)

    def run_workflow_agent_sync(
        prompt: str,
        chat_history: str | None = None,
        memory: str | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        stop: threading.Event | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        """The same call, synchronous; `stop` set from another thread ends the run after its current step."""
        started, collector = time.perf_counter(), ToolTraceCollector()
        state = inputs(prompt, chat_history, memory, config)
        return output(app.invoke(state, {"callbacks": [collector]}, stop=stop), collector, started)

    setattr(run_workflow_agent, SYNC_TWIN, run_workflow_agent_sync)
    run_workflow_agent.__doc__ = f"run_agent for the workflow {app.name!r} (see agentmap.interface.agent_for)."
    return run_workflow_agent


async def run_agent(
    prompt: str,
    chat_history: str | None = None,
    memory: str | None = None,
    config: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Run the active agent (`ACTIVE_AGENT_PATH`) on one user message (csv_specs/run_agent.md).

    Args:
        prompt: The latest user message.
        chat_history: Earlier turns, one `user: ...` / `assistant: ...` line each.
        memory: Extra context.
        config: Per-call overrides (`tool_root`, `only_domains`, `execution_mode`, `domain_timeout_secs`,
            `model_overrides`); unknown keys are ignored.
        **kwargs: Passed on to the active agent.

    Returns:
        At least `content`, `response_time_secs` and `traces`.

    Raises:
        ConfigError: When `ACTIVE_AGENT_PATH` is unset or names nothing usable.
    """
    active = load_active_agent()
    result = active(prompt, chat_history=chat_history, memory=memory, config=config, **kwargs)
    return await result if hasattr(result, "__await__") else result  # type: ignore[no-any-return]


def load_active_agent(path: str | os.PathLike[str] | None = None) -> Callable[..., Any]:
    """Load the agent `path` (default: `ACTIVE_AGENT_PATH`) names.

    Args:
        path: A Python file or module exposing `run_agent`, or a workflow (`file.csv[::Graph]`); a relative
            path is relative to the repository root (the nearest folder up from the working directory that
            holds `.git` or `pyproject.toml`), else to the working directory; an absolute path is used as is.

    Returns:
        The agent's `run_agent` (a workflow is wrapped with `agent_for`).

    Raises:
        ConfigError: When no path is set, the file is missing, or the module has no `run_agent`.
    """
    target = str(path) if path is not None else active_agent_target()
    if not target:
        raise ConfigError(
            f"no active agent: set {ACTIVE_AGENT_ENV} to a Python file exposing run_agent or to a workflow",
            hint=f"e.g. {ACTIVE_AGENT_ENV}=graphs/assistant/assistant.csv",
        )
    target = _from_repository_root(target)
    file = Path(target.partition("::")[0])
    if file.suffix.lower() in _WORKFLOW_SUFFIXES:
        return agent_for(target)
    if file.suffix == ".py":
        if not file.is_file():
            raise ConfigError(f"the active agent file does not exist: {file}", location=Location(file=str(file)))
        module = _import_file(file)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise ConfigError(
                f"cannot import the active agent {target!r}: {exc}",
                hint="Give a .py file, a module name, or a workflow .csv",
            ) from exc
    function = getattr(module, "run_agent", None)
    if not callable(function) or function is run_agent:
        raise ConfigError(
            f"{target} has no run_agent function of its own",
            hint="Define `async def run_agent(prompt, chat_history=None, memory=None, config=None)`.",
        )
    return function  # type: ignore[no-any-return]


def active_agent_target() -> str:
    """`ACTIVE_AGENT_PATH` as `run_agent`, `ask`, `chat`, `eval run` and `serve` all read it ("" when unset).

    A relative file path is taken from the repository root (the nearest folder up from the working directory
    holding `.git` or `pyproject.toml`) when the file is there, else from the working directory; an absolute
    path and a module name stay as they are; a `::Graph` suffix is kept.
    """
    text = os.environ.get(ACTIVE_AGENT_ENV, "").strip()
    return _from_repository_root(text) if text else ""


def repository_root(start: Path | None = None) -> Path | None:
    """The nearest folder from `start` (default: the working directory) up holding `.git` or `pyproject.toml`."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists() or (folder / "pyproject.toml").is_file():
            return folder
    return None


def _from_repository_root(target: str) -> str:
    """A relative file path of `ACTIVE_AGENT_PATH` resolved against the repository root (a module name stays)."""
    path, sep, graph = target.partition("::")
    file = Path(path).expanduser()
    looks_like_file = file.suffix.lower() in (*_WORKFLOW_SUFFIXES, ".py") or "/" in path or "\\" in path
    if file.is_absolute() or not looks_like_file:
        return target
    root = repository_root()
    if root is None or not (root / file).exists():
        return target
    return str(root / file) + sep + graph


class _Keys:
    """Which state keys the agent reads and writes."""

    def __init__(
        self, prompt: str, history: str | None, memory: str | None, config: str | None, content: str | None
    ) -> None:
        self.prompt, self.history, self.memory, self.config, self.content = prompt, history, memory, config, content

    @classmethod
    def for_workflow(cls, spec: GraphSpec, *given: str | None) -> _Keys:
        declared: dict[str, Any] = {}
        for node in spec.nodes:
            if isinstance(node.context.get("run_agent"), Mapping):
                declared = dict(node.context["run_agent"])
                break
        reads = [key for node in spec.nodes for key in node.reads]
        reads += [str(n.context["memory_key"]) for n in spec.nodes if n.context.get("memory_key")]
        writes = {key for node in spec.nodes for key in node.writes}
        prompt, history, memory, config, content = (
            g or declared.get(name)
            for g, name in zip(given, ("prompt", "history", "memory", "config", "content"), strict=True)
        )
        if prompt is None:
            first = spec.nodes[0].inputs if spec.nodes else ()
            prompt = "prompt" if "prompt" in reads or not first else spec.nodes[0].reads[0]
        history = history or next((k for k in _HISTORY_KEYS if k in reads), None)
        memory = memory or ("memory" if "memory" in reads else None)
        config = config or ("agent_config" if "agent_config" in reads else None)
        content = content or ("content" if "content" in writes else None)
        return cls(prompt, history, memory, config, content)

    def state_keys(self) -> list[str]:
        return [k for k in (self.prompt, self.history, self.memory, self.config, self.content) if k]


def _load_spec(workflow: str | os.PathLike[str], options: CompileOptions) -> GraphSpec:

    return load_graph(str(workflow), **options.reading())


def _compile(workflow: str | os.PathLike[str], keys: _Keys, options: CompileOptions) -> CompiledWorkflow:

    return compile(str(workflow), options=options.but(state_keys=[*options.state_keys, *keys.state_keys()]))


def _content(result: RunResult, key: str | None, app: CompiledWorkflow) -> str:
    """The reply: the content key's value, else the output of the last node that succeeded."""
    if key is None:
        nodes = app.spec.by_name
        for execution in reversed(result.summary):
            outputs = nodes[execution.name].outputs if execution.name in nodes else ()
            if execution.success and outputs and result.state.get(outputs[0]) is not None:
                key = outputs[0]
                break
    value = result.state.get(key) if key else None
    if value is None:
        if result.errors:  # a node failed: its error, not the reply's key, is what to fix
            errors = "; ".join(" ".join(str(e).split()) for e in result.errors)
            raise AgentMapError(f"workflow {app.name!r} gave no reply: {errors}", code=ErrorCode.NO_REPLY)
        raise AgentMapError(
            f"workflow {app.name!r} gave no reply: no node wrote {key!r}"
            if key
            else f"workflow {app.name!r} gave no reply: no node that succeeded wrote an output",
            code=ErrorCode.NO_REPLY,
            hint='Name the reply\'s state key: agent_for(..., content_key="...") or Context '
            '{"run_agent": {"content": "..."}}.',
        )
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for field in ("content", "response_text", "response", "text"):
            if isinstance(value.get(field), str):
                return str(value[field])
    return json.dumps(value, ensure_ascii=False, default=str)


def _timings(result: RunResult, problems: list[dict[str, Any]]) -> dict[str, float]:
    timings: dict[str, float] = {}
    for execution in result.summary:
        timings[execution.name] = round(timings.get(execution.name, 0.0) + (execution.duration or 0.0), 6)
    for problem in problems:  # a domain that timed out: its time, beside the nodes'
        if problem["source"] and isinstance(problem["duration_secs"], int | float):
            timings[problem["source"]] = round(float(problem["duration_secs"]), 6)
    return timings


def _import_file(file: Path) -> Any:
    name = f"agentmap_active_agent_{abs(hash(file.resolve()))}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {file}", location=Location(file=str(file)))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
