"""Where a storage node's file lives: the configured storage folders, and nothing outside them.

The settings carry the shape of the existing AgentMap's `agentmap_config_storage.yaml` under `storage`:
`core.base_directory`, and per kind (`csv`, `json`, `file`) `default_directory`, `collections` (a name
mapped to a path, or to `{path: ...}`) and `encoding`. `file.base_directory` (the existing AgentMap's folder
of its file reader and writer) is the `file` kind's folder, as it is there: not under `core.base_directory`.
Without any of it a kind's folder is `data/` beside the workflow file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from agentmap._paths import OutsideRootsError, allowed_roots, confine, declared_folder, is_under
from agentmap.agents.base import AgentEnvironment

__all__ = ["KINDS", "StorageLocation", "kind_settings", "locate"]

KINDS = ("csv", "json", "file")
_SUFFIX = {"csv": ".csv", "json": ".json", "file": ""}
_DEFAULT_FOLDER = "data"


def _storage(environment: AgentEnvironment) -> Mapping[str, Any]:
    storage = environment.settings.get("storage") if environment.settings else None
    return storage if isinstance(storage, Mapping) else {}


def kind_settings(kind: str, environment: AgentEnvironment) -> Mapping[str, Any]:
    """The `storage.<kind>` section of the settings (empty when absent)."""
    section = _storage(environment).get(kind)
    return section if isinstance(section, Mapping) else {}


def _folder(text: str, anchor: Path, environment: AgentEnvironment) -> Path:
    """A storage folder, resolved; one a symbolic link takes out of where it is declared is refused."""
    return declared_folder(text, anchor, allowed_roots(environment.settings))


def _base_directory(environment: AgentEnvironment) -> Path | None:
    core = _storage(environment).get("core")
    value = core.get("base_directory") if isinstance(core, Mapping) else None
    if not value:
        return None
    return _folder(str(value), environment.base_dir, environment)


def _kind_folder(kind: str, environment: AgentEnvironment) -> Path:
    base = _base_directory(environment)
    section = kind_settings(kind, environment)
    folder = section.get("default_directory")
    if folder:
        return _folder(str(folder), base if base is not None else environment.base_dir, environment)
    own = section.get("base_directory") if kind == "file" else None  # the existing AgentMap's file folder
    if own:  # not under core.base_directory, as there
        return _folder(str(own), environment.base_dir, environment)
    if base is not None:
        return _folder(kind, base, environment)
    return _folder(_DEFAULT_FOLDER, environment.base_dir, environment)


def _roots(environment: AgentEnvironment) -> list[Path]:
    roots = [_kind_folder(kind, environment) for kind in KINDS]
    base = _base_directory(environment)
    if base is not None:
        roots.insert(0, base)
    return list(dict.fromkeys(roots))


class StorageLocation:
    """A storage node's file, resolved and confined.

    Attributes:
        text: The path or collection name as the workflow spells it.
        path: The resolved file.
        folder: The kind's storage folder.
    """

    def __init__(self, text: str, path: Path, folder: Path) -> None:
        self.text = text
        self.path = path
        self.folder = folder


def _collection(kind: str, name: str, environment: AgentEnvironment) -> str | None:
    collections = kind_settings(kind, environment).get("collections")
    if not isinstance(collections, Mapping) or name not in collections:
        return None
    entry = collections[name]
    value = entry.get("path") if isinstance(entry, Mapping) else entry
    return str(value) if value else None


def locate(kind: str, text: str, environment: AgentEnvironment) -> StorageLocation:
    """Resolve a Prompt or `collection` to a file under the storage folders.

    A configured collection name maps to its path; a path relative to the storage folder resolves there,
    and one that already starts with the folder's own name (`data/x.csv`, as the existing AgentMap
    allowed) resolves beside the workflow; `.csv` / `.json` is added to a name without a suffix.

    Raises:
        OutsideRootsError: The file would lie outside every storage folder.
        ValueError: The text is empty.
    """
    spelled = text.strip()
    if not spelled:
        raise ValueError("no file named: give the file (or collection) in the Prompt or in Context collection")
    target = _collection(kind, spelled, environment) or spelled
    if _SUFFIX[kind] and not PurePosixPath(target.replace("\\", "/")).suffix:
        target += _SUFFIX[kind]
    folder = _kind_folder(kind, environment)
    roots = _roots(environment)
    anchor = folder
    normal = target.replace("\\", "/").removeprefix("./")
    for candidate in (_base_directory(environment), environment.base_dir.resolve()):
        if candidate is None or not folder.is_relative_to(candidate) or folder == candidate:
            continue
        prefix = folder.relative_to(candidate).as_posix() + "/"
        if normal.startswith(prefix):
            anchor = candidate
            break
    resolved = confine(target, anchor, roots)
    if not is_under(resolved, roots):
        raise OutsideRootsError(spelled, resolved, roots)
    return StorageLocation(spelled, resolved, folder)
