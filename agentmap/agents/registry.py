"""The agent registry: the one place agent types are resolved.

Types are matched case-insensitively and an `Agent` suffix is optional, so `Echo`, `echo` and
`EchoAgent` name one type. Types come from three places, looked up in this order:

1. the built-in types and anything registered with `@agentmap.agent("name")`;
2. a custom agents folder, through the view `with_folder` makes for one compile: a `.py` file there is
   imported the first time a type it declares (by its file name, a class or a registration, see
   `_folder`) is looked up, and every `BaseAgent` subclass it defines registers, in that view only, under
   its class name; the other files are never run, and the process-wide registry never sees the folder;
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
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from agentmap._sources import note_code
from agentmap.agents._folder import FolderIndex
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
        importing = _importing.get()
        if importing is not None and importing[0] is not self and getattr(cls, "__module__", None) == importing[1]:
            _decorated.setdefault(importing[1], []).append((name, cls))
            return importing[0].register(name, cls, replace=replace)  # a folder file's types stay in its overlay
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
        broken = self._why_broken(normalize_type(name))
        if broken is not None:
            suggestion = f" ({broken[0]})"
        from agentmap.agents._legacy import retired_type

        retired = retired_type(normalize_type(name))
        if retired is not None:
            suggestion = f"; {retired}"
        return f"unknown agent type {name!r}{suggestion}"

    def register_hint(self, name: str) -> str:
        """How to make `name` a known type (or to repair the file that declares it)."""
        broken = self._why_broken(normalize_type(name))
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

    def _why_broken(self, key: str) -> tuple[str, str] | None:
        return self._broken.get(key)

    def names(self) -> list[str]:
        """All known type keys (registered, or declared by an installed entry point and loaded on first use), sorted."""
        installed = self._installed() if self is registry and not self._entry_points_loaded else {}
        return sorted({*self._types, *installed})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def unknown_code(self, name: str) -> str:
        """The code of the finding for the unknown type `name`: `code-outside-roots` when its file was refused."""
        return "unknown-agent-type"

    def with_folder(self, folder: Path, refusal: Callable[[Path], str | None] | None = None) -> AgentRegistry:
        """This registry's types plus those of a custom agents folder, for one compile.

        The folder's files are imported only when a type they declare is looked up, and the types they
        register (by class or by `@agentmap.agent`) stay in the returned view: this registry never sees
        them, so another compile, with another folder or none, does not either. The folder's types come
        after this registry's registered types and before its entry points. A file `refusal` gives a reason for
        (a symbolic link out of where code may come from, `agentmap._paths.CodeFolder`) is neither read nor
        imported: a type it would declare is unknown, with that reason.
        """
        return _FolderOverlay(self, folder, refusal)

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


_importing: ContextVar[tuple[AgentRegistry, str] | None] = ContextVar("agentmap_importing_agents", default=None)
"""The overlay importing a custom agent file and that file's module name, while it runs."""
_decorated: dict[str, list[tuple[str, type[Any]]]] = {}
"""The names a custom agent module registered while it was imported, for the next overlay that imports it."""


class _FolderOverlay(AgentRegistry):
    """A registry's types plus one custom agents folder's (`AgentRegistry.with_folder`).

    The overlay of a subgraph's folder may stand on its parent workflow's overlay: its own folder is
    looked in first, then the parent's.
    """

    def __init__(self, base: AgentRegistry, folder: Path, refusal: Callable[[Path], str | None] | None) -> None:
        super().__init__()
        self._base = base
        self._root: AgentRegistry = base._root if isinstance(base, _FolderOverlay) else base
        self._refusal = refusal or (lambda path: None)
        self._index = FolderIndex(folder if refusal else folder.resolve(), normalize_type, self._refusal)
        self._index.refresh()
        self._failed: dict[Path, str | None] = {}  # a file imported (None) or why it did not import
        self._refused: set[str] = set()  # type keys whose file was refused

    def get(self, name: str) -> AgentClass | None:
        key = normalize_type(name)
        found = self._root._types.get(key) or self._types.get(key)
        if found is None:
            with self._loading:
                for path in self._index.candidates(key):
                    refused = self._refusal(path)
                    if refused is not None:
                        self._refused.add(key)
                        self._broken[key] = (
                            f"it would come from {path}: {refused}",
                            "keep custom agents in real files of the workflow's folder, or allow where the link leads "
                            "(csv_specs/security.md)",
                        )
                        break
                    if path not in self._failed:
                        self._failed[path] = self._import(path)
                    found = self._types.get(key)
                    if found is not None:
                        break
                    if self._failed[path] is not None:
                        self._broken[key] = self._broken_file(path, self._failed[path] or "")
        return found or self._base.get(key)

    def unknown_code(self, name: str) -> str:
        key = normalize_type(name)
        return "code-outside-roots" if key in self._refused else self._base.unknown_code(name)

    def _why_broken(self, key: str) -> tuple[str, str] | None:
        return self._broken.get(key) or self._base._why_broken(key)

    def names(self) -> list[str]:
        """The base's type keys, plus those the folder declares (imported on first use)."""
        return sorted({*self._base.names(), *self._types, *self._index.declared})

    def _import(self, path: Path) -> str | None:
        """Import one custom agent file and register its classes here; why it failed, if it did."""
        from agentmap.agents._legacy import install

        install()  # files written for AgentMap 0.9 import its module paths
        name = module_name(path, prefix=_PREFIX)
        if name not in sys.modules:
            _decorated[name] = []
        token = _importing.set((self, name))
        try:
            module = import_file(path, prefix=_PREFIX)
        except Exception as exc:  # reported for the node that needs it; other files are not concerned
            return f"{type(exc).__name__}: {exc}"
        finally:
            _importing.reset(token)
        for type_name, cls in _decorated.get(name, []):  # imported before, by another compile's overlay
            self.register(type_name, cls)
        self._register_module(module)
        return None

    def _broken_file(self, path: Path, error: str) -> tuple[str, str]:
        folder = self._index.folder
        return (
            f"it would come from {path}, which cannot be imported: {error}; {folder} is the custom agents "
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
                snake = normalize_type(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", obj.__name__))
                taken = self._root._types.get(snake) or self._types.get(snake) if snake != key else None
                # AgentMap 0.9 spelled LoudEchoAgent loud_echo; a built-in type keeps its name
                if snake != key and (taken is None or not taken.__module__.startswith("agentmap.")):
                    self.register(snake, obj)


_PREFIX = "agentmap_custom_agents"


def module_name(path: Path, *, prefix: str) -> str:
    """The module name `import_file` gives a file."""
    path = path.resolve()
    return f"{prefix}_{abs(hash(str(path))):x}_{path.stem}"


def import_file(path: Path, *, prefix: str) -> Any:
    """Import a Python file as a module named after its path (imported once per process; noted by its digest in
    the revision of a compile that imports it, `agentmap._sources`)."""
    path = path.resolve()
    note_code(path)
    name = module_name(path, prefix=prefix)
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
