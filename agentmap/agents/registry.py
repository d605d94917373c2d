"""The agent registry: the one place agent types are resolved.

Types are matched case-insensitively and an `Agent` suffix is optional, so `Echo`, `echo` and
`EchoAgent` name one type. Types come from four places, looked up in this order:

1. the built-in types and anything registered with `@agentmap.agent("name")`;
2. a custom agents folder (`load_folder`), where every `BaseAgent` subclass of every `.py` file
   registers under its class name;
3. the `agentmap.agents` entry point group of installed packages (read once, on the first miss).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agentmap.agents.base import BaseAgent
from agentmap.errors import AgentNotFoundError

__all__ = ["AgentRegistry", "agent", "normalize_type", "registry"]

AgentClass = type[BaseAgent]
T = TypeVar("T")

ENTRY_POINT_GROUP = "agentmap.agents"

_LAZY_TYPES: dict[str, str] = {
    "graph": "agentmap.runtime.subgraph",
    "tool": "agentmap.agents.tool_agent",
    "planner": "agentmap.orchestration.agents",
    "worker": "agentmap.orchestration.agents",
    "orchestrator": "agentmap.orchestration.agents",
    "llm": "agentmap.llm.agents",
    "openai": "agentmap.llm.agents",
    "anthropic": "agentmap.llm.agents",
    "google": "agentmap.llm.agents",
    "ollama": "agentmap.llm.agents",
    "offline": "agentmap.llm.agents",
    "assistant": "agentmap.llm.assistant",
    "llm_planner": "agentmap.llm.planner",
    "csv_reader": "agentmap.storage",
    "csv_writer": "agentmap.storage",
    "json_reader": "agentmap.storage",
    "json_writer": "agentmap.storage",
    "file_reader": "agentmap.storage",
    "file_writer": "agentmap.storage",
    "human": "agentmap.agents.pausing",
    "suspend": "agentmap.agents.pausing",
}
"""Built-in types whose modules are imported on first use, so a deterministic graph loads no LLM stack."""


def normalize_type(name: str) -> str:
    """Return the canonical key of an agent type: lowercase, without an `Agent` suffix; empty is `default`."""
    key = name.strip().lower().replace("-", "_")
    if key.endswith("agent") and len(key) > len("agent"):
        key = key[: -len("agent")].rstrip("_")
    return key or "default"


class AgentRegistry:
    """Maps agent type names to agent classes."""

    def __init__(self) -> None:
        self._types: dict[str, AgentClass] = {}
        self._entry_points_loaded = False
        self._folders: set[Path] = set()
        self._broken: dict[str, str] = {}
        self._lock = threading.Lock()

    def register(self, name: str, cls: type[Any], *, replace: bool = True) -> AgentClass:
        """Register `cls` under `name`.

        `cls` is a `BaseAgent` subclass, or any class with `async def process(request)` returning an
        `AgentResponse` (an `AgentProtocol`), which is adapted into a node.

        Raises:
            TypeError: If `cls` is neither.
            ValueError: If `name` is taken and `replace` is false.
        """
        key = normalize_type(name)
        agent_cls = self._adapt(cls)
        with self._lock:
            if not replace and key in self._types and self._types[key] is not agent_cls:
                raise ValueError(f"agent type {name!r} is already registered ({self._types[key].__name__})")
            self._types[key] = agent_cls
        return agent_cls

    @staticmethod
    def _adapt(cls: type[Any]) -> AgentClass:
        if isinstance(cls, type) and issubclass(cls, BaseAgent):
            return cls
        process = getattr(cls, "process", None)
        if isinstance(cls, type) and process is not None and inspect.iscoroutinefunction(process):
            from agentmap.agents.protocol import protocol_agent

            return protocol_agent(cls)
        raise TypeError(
            f"{cls!r} cannot be an agent type: subclass agentmap.BaseAgent and implement process(inputs), "
            "or define `async def process(self, request: AgentRequest) -> AgentResponse`"
        )

    def get(self, name: str) -> AgentClass | None:
        """Return the class registered under `name` (any spelling), or None."""
        key = normalize_type(name)
        found = self._types.get(key)
        if found is None and key in _LAZY_TYPES and self is registry:
            importlib.import_module(_LAZY_TYPES[key])
            found = self._types.get(key)
        if found is None and not self._entry_points_loaded:
            self.load_entry_points()
            found = self._types.get(key)
        return found

    def resolve(self, name: str) -> AgentClass:
        """Return the class registered under `name`.

        Raises:
            AgentNotFoundError: With a "did you mean" and how to register a type.
        """
        found = self.get(name)
        if found is None:
            raise AgentNotFoundError(self.unknown_message(name), hint=self.register_hint(name))
        return found

    def unknown_message(self, name: str) -> str:
        """The message for an unknown type, with the closest known names."""
        close = difflib.get_close_matches(normalize_type(name), self.names(), n=3, cutoff=0.6)
        suggestion = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        broken = self._broken.get(normalize_type(name))
        if broken is not None:
            suggestion = f" (an installed package declares it, but it could not be loaded: {broken})"
        return f"unknown agent type {name!r}{suggestion}"

    @staticmethod
    def register_hint(name: str) -> str:
        """How to make `name` a known type."""
        words = re.findall(r"[A-Za-z0-9]+", normalize_type(name))
        cls = "".join(w[:1].upper() + w[1:] for w in words) or "Custom"
        cls = cls if cls[0].isalpha() else f"Agent{cls}"
        return (
            f"Known types are listed by `agentmap inspect --agents`. To add {name!r}: put a BaseAgent subclass named "
            f"{cls}Agent in the custom_agents/ folder beside the workflow, decorate a class with "
            f"@agentmap.agent({name!r}), or run `agentmap scaffold`."
        )

    def names(self) -> list[str]:
        """All known type keys (registered, or built in and loaded on first use), sorted."""
        lazy = _LAZY_TYPES if self is registry else {}
        return sorted({*self._types, *lazy})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def load_folder(self, folder: Path) -> list[str]:
        """Import every `.py` file of `folder` and register each `BaseAgent` subclass defined there.

        A class registers under its name (`WeatherAgent` -> `weather`) unless it was already registered
        with the decorator. Loading a folder twice does nothing the second time.

        Returns:
            The type keys the folder registered.

        Raises:
            AgentNotFoundError: A file of the folder cannot be imported (the folder is read again next time).
        """
        folder = folder.resolve()
        if folder in self._folders or not folder.is_dir():
            return []
        added: list[str] = []
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            try:
                module = import_file(path, prefix="agentmap_custom_agents")
            except Exception as exc:  # report a broken file; the folder is read again once it is fixed
                raise AgentNotFoundError(
                    f"cannot import the custom agent file {path}: {type(exc).__name__}: {exc}",
                    hint=f"fix the error in {path.name}, or move it out of {folder}",
                ) from None
            for obj in vars(module).values():
                if (
                    isinstance(obj, type)
                    and issubclass(obj, BaseAgent)
                    and obj is not BaseAgent
                    and obj.__module__ == module.__name__
                    and obj not in self._types.values()
                ):
                    key = normalize_type(obj.__name__)
                    self.register(key, obj)
                    added.append(key)
        self._folders.add(folder)
        return added

    def load_entry_points(self) -> None:
        """Register the agent types installed packages declare in the `agentmap.agents` group."""
        self._entry_points_loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                self.register(ep.name, ep.load())
            except Exception as exc:  # one broken plugin must not hide the others, nor crash validation
                self._broken[normalize_type(ep.name)] = f"{ep.value}: {type(exc).__name__}: {exc}"


def import_file(path: Path, *, prefix: str) -> Any:
    """Import a Python file as a module named after its path (imported once per process)."""
    path = path.resolve()
    name = f"{prefix}_{abs(hash(str(path))):x}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


registry = AgentRegistry()
"""The default registry: built-in types plus everything registered in this process."""


def agent(name: str | None = None, *, registry: AgentRegistry = registry) -> Callable[[type[T]], type[T]]:
    """Class decorator registering an agent type.

    Example:
        >>> @agentmap.agent("shout")
        ... class ShoutAgent(agentmap.BaseAgent):
        ...     def process(self, inputs):
        ...         return str(next(iter(inputs.values()), "")).upper()

    Args:
        name: The type name used in the AgentType column; defaults to the class name.
        registry: The registry to add to (the default one unless testing).
    """

    def decorate(cls: type[T]) -> type[T]:
        registry.register(name or cls.__name__, cls)
        return cls

    return decorate
