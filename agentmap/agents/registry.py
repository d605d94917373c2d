"""The agent registry: the one place agent types are resolved.

Types are matched case-insensitively and an `Agent` suffix is optional, so `Echo`, `echo` and
`EchoAgent` name one type. Types come from four places, looked up in this order:

1. the built-in types and anything registered with `@agentmap.agent("name")`;
2. a custom agents folder (`add_folder`): a `.py` file there is imported the first time a type it
   declares (by its file name, a class or a registration, see `_folder`) is looked up, and every
   `BaseAgent` subclass it defines registers under its class name; the other files are never run;
3. the `agentmap.agents` entry point group of installed packages: an entry point is loaded the first
   time its name is looked up.

Built-in types that live above this layer (`graph` in runtime, the LLM types, the orchestration nodes)
register through that same entry point group, declared in AgentMap's own `pyproject.toml`; this module
never names them, and a deterministic graph imports none of them.
"""

from __future__ import annotations

import difflib
import importlib.util
import inspect
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agentmap.agents._folder import FolderIndex, compact
from agentmap.agents.base import BaseAgent
from agentmap.errors import AgentNotFoundError

__all__ = ["AgentRegistry", "agent", "normalize_type", "registry"]

AgentClass = type[BaseAgent]
T = TypeVar("T")

ENTRY_POINT_GROUP = "agentmap.agents"


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
        self._entry_points: dict[str, list[Any]] | None = None
        self._folders: dict[Path, FolderIndex] = {}
        self._imported: dict[Path, dict[str, AgentClass]] = {}  # a custom agent file -> the types it registered
        self._origin: dict[str, Path] = {}  # a type registered by a custom agent file -> that file
        self._failed: dict[Path, tuple[int, str]] = {}  # a custom agent file that did not import, by its mtime
        self._broken: dict[str, tuple[str, str]] = {}  # type key -> why it could not be loaded, and the fix
        self._lock = threading.Lock()
        self._loading = threading.RLock()

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
        if found is None and self._folders:
            found = self._from_folders(key)
        if found is None and not self._entry_points_loaded:
            for ep in self._installed().get(key, []):
                self._load_entry_point(ep)
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
            suggestion = f" ({broken[0]})"
        from agentmap.agents._legacy import retired_type

        retired = retired_type(normalize_type(name))
        if retired is not None:
            suggestion = f"; {retired}"
        return f"unknown agent type {name!r}{suggestion}"

    def register_hint(self, name: str) -> str:
        """How to make `name` a known type (or to repair the file that declares it)."""
        broken = self._broken.get(normalize_type(name))
        if broken is not None and broken[1]:
            return broken[1]
        words = re.findall(r"[A-Za-z0-9]+", normalize_type(name))
        cls = "".join(w[:1].upper() + w[1:] for w in words) or "Custom"
        cls = cls if cls[0].isalpha() else f"Agent{cls}"
        return (
            f"Known types are listed by `agentmap inspect --agents`. To add {name!r}: put a BaseAgent subclass named "
            f"{cls}Agent in the custom_agents/ folder beside the workflow, decorate a class with "
            f"@agentmap.agent({name!r}), or run `agentmap scaffold`."
        )

    def names(self) -> list[str]:
        """All known type keys (registered, or declared by a custom agents folder or an installed entry point and
        loaded on first use), sorted."""
        installed = self._installed() if self is registry and not self._entry_points_loaded else {}
        declared = {key for index in list(self._folders.values()) for key in index.declared}
        return sorted({*self._types, *installed, *declared})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def add_folder(self, folder: Path) -> None:
        """Make the agent types of a custom agents folder known; its files are imported only when looked up.

        Adding a folder again reads it again (files added or changed since), so a long-running process sees
        new files; a file already imported is not imported again. A type this folder declares that a file of
        another folder registered is looked up here again, as when each folder was imported whole.
        """
        folder = folder.resolve()
        with self._loading:
            index = self._folders.pop(folder, None) or FolderIndex(folder, normalize_type)
            index.refresh()
            self._folders[folder] = index  # the folder added last is looked in first
            declared = {compact(key) for key in index.declared}
            for key, path in list(self._origin.items()):
                if path.parent != folder and compact(key) in declared:
                    del self._origin[key]
                    if self._types.get(key) is self._imported[path].get(key):
                        del self._types[key]

    def _from_folders(self, key: str) -> AgentClass | None:
        """Import the folder files that may declare `key` until it is registered."""
        with self._loading:
            for index in reversed(list(self._folders.values())):
                for path in index.candidates(key):
                    if path in self._imported:  # taken back by another folder meanwhile
                        back = {k: v for k, v in self._imported[path].items() if k not in self._types}
                        self._types.update(back)
                        self._origin.update(dict.fromkeys(back, path))
                    else:
                        self._import(index.folder, path, key)
                    found = self._types.get(key)
                    if found is not None:
                        return found
        return None

    def _import(self, folder: Path, path: Path, key: str) -> None:
        """Import one custom agent file and register its classes; a failure is recorded for `key`."""
        mtime = path.stat().st_mtime_ns if path.exists() else 0
        failed = self._failed.get(path)
        if failed is None or failed[0] != mtime:
            from agentmap.agents._legacy import install

            install()  # files written for AgentMap 0.9 import its module paths
            try:
                module = import_file(path, prefix="agentmap_custom_agents")
            except Exception as exc:  # reported for the node that needs it; other files are not concerned
                self._failed[path] = failed = (mtime, f"{type(exc).__name__}: {exc}")
            else:
                self._failed.pop(path, None)
                self._register_module(module)
                registered = {k: v for k, v in self._types.items() if v.__module__ == module.__name__}
                self._imported[path] = registered
                self._origin.update(dict.fromkeys(registered, path))
                return
        self._broken[key] = (
            f"it would come from {path}, which cannot be imported: {failed[1]}; {folder} is the custom agents "
            "folder (setting paths.custom_agents, AGENTMAP_PATHS__CUSTOM_AGENTS or agents_dir=; default "
            "custom_agents/ beside the workflow)",
            f"fix the error in {path.name}, or move it out of {folder}",
        )

    def _register_module(self, module: Any) -> None:
        """Register each `BaseAgent` subclass `module` defines under its class name (and the 0.9 snake spelling)."""
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
                self._broken.pop(key, None)
                snake = normalize_type(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", obj.__name__))
                taken = self._types.get(snake) if snake != key else None
                # AgentMap 0.9 spelled LoudEchoAgent loud_echo; a built-in type keeps its name
                if snake != key and (taken is None or not taken.__module__.startswith("agentmap.")):
                    self.register(snake, obj)
                    self._broken.pop(snake, None)

    def load_entry_points(self) -> None:
        """Register the agent types installed packages declare in the `agentmap.agents` group."""
        self._entry_points_loaded = True
        for eps in self._installed().values():
            for ep in eps:
                self._load_entry_point(ep)

    def _installed(self) -> dict[str, list[Any]]:
        """The entry points of the group by type key (read from the installed packages once)."""
        if self._entry_points is None:
            from importlib.metadata import entry_points

            index: dict[str, list[Any]] = {}
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                index.setdefault(normalize_type(ep.name), []).append(ep)
            self._entry_points = index
        return self._entry_points

    def _load_entry_point(self, ep: Any) -> None:
        try:
            self.register(ep.name, ep.load())
        except Exception as exc:  # one broken plugin must not hide the others, nor crash validation
            reason = (
                f"an installed package declares it, but it could not be loaded: {ep.value}: {type(exc).__name__}: {exc}"
            )
            self._broken[normalize_type(ep.name)] = (reason, "")


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
