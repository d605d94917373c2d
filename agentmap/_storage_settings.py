"""The `storage` settings: the existing AgentMap's `agentmap_config_storage.yaml`, its folders made absolute."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmap.errors import ConfigError, ErrorCode

__all__ = ["absolute_storage_paths", "read_storage_file"]


def absolute_storage_paths(storage: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """`storage.core.base_directory`, each `<kind>.default_directory` and `file.base_directory` made absolute.

    As in the existing AgentMap, a default_directory is relative to base_directory when one is set (and may
    repeat it: `data/csv` under `data`); `file.base_directory` (the folder of its file reader and writer) is
    relative to `base`, whatever core's is.
    """
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in storage.items()}
    core = out.get("core")
    root: Path | None = None
    if isinstance(core, dict) and core.get("base_directory"):
        spelled = str(core["base_directory"])
        root = (base / Path(spelled).expanduser()).resolve()
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
            spelled_root = Path(str(storage["core"]["base_directory"]))
            folder = folder.relative_to(spelled_root) if folder.is_relative_to(spelled_root) else folder
            section["default_directory"] = str((root / folder).resolve())
        else:
            section["default_directory"] = str((base / folder).resolve())
    return out


def read_storage_file(path: Path) -> dict[str, Any]:
    """The mapping an `agentmap_config_storage.yaml` holds.

    Raises:
        ConfigError: The file cannot be read or holds something else than a mapping.
    """
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the storage config {path}: {exc}", code=ErrorCode.BAD_CONFIG) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path} must hold a mapping (csv:, json:, ...)", code=ErrorCode.BAD_CONFIG)
    return loaded
