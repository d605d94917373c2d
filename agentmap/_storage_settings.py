"""The `storage` settings: the existing AgentMap's `agentmap_config_storage.yaml`, its folders made absolute."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmap._yaml import load
from agentmap.errors import ConfigError, ErrorCode

__all__ = ["LAYOUTS", "absolute_storage_paths", "read_storage_file"]

LAYOUTS = ("kinds", "flat")
"""`storage.layout`: `kinds` puts each kind in a folder of its own under `core.base_directory` (`store/csv/`,
`store/json/`); `flat`, the existing AgentMap's layout, puts CSV and JSON files in `core.base_directory`
itself and the file reader's and writer's in `file.base_directory` (csv_specs/storage.md)."""

_FLAT_BASE = "agentmap_data/data"  # where the existing AgentMap kept files when its storage file names no folder
_FLAT_FILES = "data/files"  # and where its file reader and writer did


def absolute_storage_paths(storage: Mapping[str, Any], base: Path, source: Path | None = None) -> dict[str, Any]:
    """`storage.core.base_directory`, each `<kind>.default_directory` and `file.base_directory` made absolute.

    As in the existing AgentMap, a default_directory is relative to base_directory when one is set (and may
    repeat it: `data/csv` under `data`); `file.base_directory` (the folder of its file reader and writer) is
    relative to `base`, whatever core's is. The `flat` layout is written out here as folders, so that the
    storage nodes know one layout only.

    Raises:
        ConfigError: `storage.layout` is neither `kinds` nor `flat`.
    """
    layout = storage.get("layout", "kinds")
    if layout not in LAYOUTS:
        raise ConfigError(
            f"{source or 'the config'}: storage.layout is {layout!r}, which is not a storage layout",
            code=ErrorCode.BAD_CONFIG,
            hint="write layout: kinds (a folder per kind: <base>/csv, <base>/json) or layout: flat "
            "(the existing AgentMap's: every CSV and JSON file in core.base_directory)",
        )
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in storage.items()}
    if layout == "flat":
        _flatten(out)
    core = out.get("core")
    root: Path | None = None
    spelled_root = Path()
    if isinstance(core, dict) and core.get("base_directory"):
        spelled_root = Path(str(core["base_directory"]))
        root = (base / spelled_root.expanduser()).resolve()
        core["base_directory"] = str(root)
    for kind, section in out.items():
        if kind == "core" or not isinstance(section, dict):
            continue
        if kind == "file" and section.get("base_directory"):  # the existing AgentMap's file folder: not under core's
            section["base_directory"] = str((base / Path(str(section["base_directory"])).expanduser()).resolve())
        if not section.get("default_directory"):
            continue
        folder = Path(str(section["default_directory"])).expanduser()
        if root is not None and not folder.is_absolute():
            folder = folder.relative_to(spelled_root) if folder.is_relative_to(spelled_root) else folder
            section["default_directory"] = str((root / folder).resolve())
        else:
            section["default_directory"] = str((base / folder).resolve())
    return out


def _flatten(out: dict[str, Any]) -> None:
    """The `flat` layout as folders: CSV and JSON in `core.base_directory`, files in `file.base_directory`.

    The existing AgentMap handed every storage service `core.base_directory` and ignored each kind's
    `default_directory`; its file reader and writer used `file.base_directory` alone.
    """
    core = out.setdefault("core", {})
    if not isinstance(core, dict):
        return
    base = core["base_directory"] = str(core.get("base_directory") or _FLAT_BASE)
    for kind in ("csv", "json"):
        section = dict(out[kind]) if isinstance(out.get(kind), dict) else {}
        spelled = Path(str(section.get("default_directory") or kind))
        section["default_directory"] = base
        collections = section.pop("collections", None)  # JSON collections were not used there
        if kind == "csv" and isinstance(collections, Mapping):
            # a `{filename: ...}` collection was `<base>/<csv.default_directory, else csv>/<filename>`
            folder = Path(spelled.name) if spelled.is_absolute() else spelled
            folder = folder.relative_to(base) if folder.is_relative_to(base) else folder
            section["collections"] = {
                name: (folder / str(entry.get("filename") or f"{name}.csv")).as_posix()
                if isinstance(entry, Mapping) and "path" not in entry
                else entry  # a path (the existing AgentMap failed on a bare one): read as AgentMap reads it
                for name, entry in collections.items()
            }
        out[kind] = section
    files = out.get("file")
    files = {k: v for k, v in (files if isinstance(files, dict) else {}).items() if k != "default_directory"}
    out["file"] = {**files, "base_directory": files.get("base_directory") or _FLAT_FILES}


def read_storage_file(path: Path) -> dict[str, Any]:
    """The mapping an `agentmap_config_storage.yaml` holds.

    Raises:
        ConfigError: The file cannot be read or holds something else than a mapping.
    """
    import yaml

    try:
        loaded = load(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the storage config {path}: {exc}", code=ErrorCode.BAD_CONFIG) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path} must hold a mapping (csv:, json:, ...)", code=ErrorCode.BAD_CONFIG)
    return loaded
