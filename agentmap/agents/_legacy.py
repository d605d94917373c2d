"""Custom agent files written for AgentMap 0.9: their import paths and constructor keywords.

Old files import `agentmap.agents.base_agent.BaseAgent`, subclass built-in agents from
`agentmap.agents.builtins.<name>_agent`, mix in `agentmap.services.protocols.LLMCapableAgent`, and call
`super().__init__(name, prompt, context, logger, execution_tracking_service, state_adapter_service)`.
`install()` adds an import hook that answers those module names with thin aliases onto the real classes;
`LegacyInit` maps the old keywords onto the `BaseAgent` constructor. The agent contract itself is
unchanged: `process(inputs)` is the same method, and `run` is `BaseAgent.run`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from types import ModuleType
from typing import Any

from agentmap.agents.registry import registry
from agentmap.agents.state import StateAdapter

__all__ = ["LEGACY_MODULES", "LegacyInit", "install", "retired_type"]

_RETIRED = {
    "vector_reader": "vector storage (a vector database) is not provided; call it from a custom agent",
    "vector_writer": "vector storage (a vector database) is not provided; call it from a custom agent",
    "blob_reader": "blob storage (S3, Azure, GCS) is not provided; call it from a custom agent",
    "blob_writer": "blob storage (S3, Azure, GCS) is not provided; call it from a custom agent",
}


def retired_type(key: str) -> str | None:
    """Why an AgentMap 0.9 built-in type (by its normalized key) does not exist here, or None."""
    note = _RETIRED.get(key)
    return f"it is an AgentMap 0.9 built-in type: {note} (csv_specs/migrating.md)" if note else None


_BUILTINS = "agentmap.agents.builtins"

LEGACY_MODULES: dict[str, dict[str, str]] = {
    f"{_BUILTINS}.default_agent": {"DefaultAgent": "default"},
    f"{_BUILTINS}.echo_agent": {"EchoAgent": "echo"},
    f"{_BUILTINS}.branching_agent": {"BranchingAgent": "branching"},
    f"{_BUILTINS}.success_agent": {"SuccessAgent": "success"},
    f"{_BUILTINS}.failure_agent": {"FailureAgent": "failure"},
    f"{_BUILTINS}.input_agent": {"InputAgent": "input"},
    f"{_BUILTINS}.summary_agent": {"SummaryAgent": "summary"},
    f"{_BUILTINS}.graph_agent": {"GraphAgent": "graph"},
    f"{_BUILTINS}.orchestrator_agent": {"OrchestratorAgent": "orchestrator"},
    f"{_BUILTINS}.tool_agent": {"ToolAgent": "tool"},
    f"{_BUILTINS}.human_agent": {"HumanAgent": "human"},
    f"{_BUILTINS}.suspend_agent": {"SuspendAgent": "suspend"},
    f"{_BUILTINS}.llm.llm_agent": {"LLMAgent": "llm"},
    f"{_BUILTINS}.llm.openai_agent": {"OpenAIAgent": "openai"},
    f"{_BUILTINS}.llm.anthropic_agent": {"AnthropicAgent": "anthropic"},
    f"{_BUILTINS}.llm.google_agent": {"GoogleAgent": "google"},
    f"{_BUILTINS}.storage.csv.reader": {"CSVReaderAgent": "csv_reader"},
    f"{_BUILTINS}.storage.csv.writer": {"CSVWriterAgent": "csv_writer"},
    f"{_BUILTINS}.storage.json.reader": {"JSONDocumentReaderAgent": "json_reader"},
    f"{_BUILTINS}.storage.json.writer": {"JSONDocumentWriterAgent": "json_writer"},
    f"{_BUILTINS}.storage.file.reader": {"FileReaderAgent": "file_reader"},
    f"{_BUILTINS}.storage.file.writer": {"FileWriterAgent": "file_writer"},
}
"""Old module -> {old class name: the agent type it now is}. Each class is the registered type's class
with `LegacyInit` in front, made when the module is first imported."""

_PACKAGES = {
    f"{_BUILTINS}.llm",
    f"{_BUILTINS}.storage",
    f"{_BUILTINS}.storage.csv",
    f"{_BUILTINS}.storage.json",
    f"{_BUILTINS}.storage.file",
    "agentmap.services",
}
_PROTOCOLS = "agentmap.services.protocols"
_SERVICES: dict[str, tuple[str, str, str]] = {
    "agentmap.services.execution_tracking_service": ("ExecutionTrackingService", "agentmap.agents.base", "Tracker"),
    "agentmap.services.state_adapter_service": ("StateAdapterService", "agentmap.agents.state", "StateAdapter"),
}
"""Old service modules old agents import for type hints -> (old name, module, what it now is)."""
_MIXINS = ("LLMCapableAgent", "StorageCapableAgent", "PromptCapableAgent", "MessagingCapableAgent")


class LegacyInit:
    """Accepts the AgentMap 0.9 constructor and hands `BaseAgent` what it takes.

    `(name, prompt, context, logger, execution_tracking_service, state_adapter_service)`, positionally or
    by keyword: the tracker the compiler passes arrives as `execution_tracking_service`; the state
    adapter service is not needed (state access is `BaseAgent`'s), so it is accepted and ignored.
    """

    def __init__(
        self,
        name: str,
        prompt: str = "",
        context: dict[str, Any] | None = None,
        logger: logging.Logger | None = None,
        execution_tracker: Any = None,
        state_adapter_service: Any = None,
        *,
        execution_tracking_service: Any = None,
        **_ignored: Any,
    ) -> None:
        tracker = execution_tracker if execution_tracker is not None else execution_tracking_service
        if isinstance(context, str):  # the old GraphAgent accepted raw text
            context = {"context": context}
        super().__init__(name, prompt, context, logger, tracker)  # type: ignore[call-arg]

    @property
    def execution_tracking_service(self) -> Any:
        """The execution tracker (the old name of the service that recorded each step)."""
        return getattr(self, "_execution_tracker", None)

    @property
    def state_adapter_service(self) -> Any:
        """The state adapter (old agents call `get_value` / `set_value` on it)."""

        return StateAdapter

    @property
    def llm_service(self) -> Any:
        """Not provided: the old service container is gone."""
        raise RuntimeError(_SERVICE_GONE.format(service="llm_service", use="an llm (or openai/anthropic/...) node"))

    @property
    def storage_service(self) -> Any:
        """Not provided: the old service container is gone."""
        raise RuntimeError(_SERVICE_GONE.format(service="storage_service", use="a csv_reader/json_writer/... node"))


_SERVICE_GONE = (
    "self.{service} of AgentMap 0.9 is not provided: this version has no service container; "
    "use {use} for that step, or call the library you need directly in process()"
)


def _legacy_class(module: str, old_name: str, type_key: str) -> type:

    real = registry.get(type_key)
    if real is None:
        raise ImportError(
            f"{module}.{old_name} of AgentMap 0.9 maps to the agent type {type_key!r}, which this installation "
            "does not provide; `agentmap inspect --agents` lists the types it has",
            name=module,
        )
    return type(old_name, (LegacyInit, real), {"__module__": module, "__doc__": real.__doc__})


def _protocol_mixin(name: str) -> type:
    def configure(self: Any, service: Any) -> None:
        """Accepted for old code; nothing is injected."""

    return type(
        name,
        (),
        {
            "__module__": _PROTOCOLS,
            "configure_llm_service": configure,
            "configure_storage_service": configure,
            "configure_prompt_service": configure,
            "configure_messaging_service": configure,
        },
    )


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        name = module.__name__
        if name in _PACKAGES:
            module.__path__ = []
        if name == _PROTOCOLS:
            for mixin in _MIXINS:
                setattr(module, mixin, _protocol_mixin(mixin))
        if name in _SERVICES:
            old, real_module, real_name = _SERVICES[name]
            setattr(module, old, getattr(importlib.import_module(real_module), real_name))
        for old_name, type_key in LEGACY_MODULES.get(name, {}).items():
            setattr(module, old_name, _legacy_class(name, old_name, type_key))


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> Any:
        if fullname in LEGACY_MODULES or fullname in _PACKAGES or fullname in _SERVICES or fullname == _PROTOCOLS:
            return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=fullname in _PACKAGES)
        return None


_installed = False
_lock = threading.Lock()


def install() -> None:
    """Make the AgentMap 0.9 module paths importable (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        builtins = sys.modules.get(_BUILTINS) or importlib.import_module(_BUILTINS)
        if not hasattr(builtins, "__path__"):
            builtins.__path__ = []  # lets `agentmap.agents.builtins.<old module>` reach the finder
        sys.meta_path.append(_Finder())
        _installed = True
