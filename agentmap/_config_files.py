"""Reading a config file into settings data: YAML or TOML, an existing AgentMap `agentmap_config.yaml`
translated key by key, relative paths resolved against the file's folder. `agentmap.config` validates it."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmap._sources import read_bytes
from agentmap.errors import ConfigError, ErrorCode

__all__ = ["LEGACY_NAMES", "merge", "read_file"]

LEGACY_NAMES = ("agentmap_config.yaml", "agentmap_config.yml")
"""Config files of the existing AgentMap, read for the keys that map onto ours."""


def read_file(path: Path, known: list[str]) -> dict[str, Any]:
    """The settings data of a config file, its relative paths resolved against its folder.

    Args:
        path: An `agentmap.yaml`/`.yml`/`.toml` file, or an existing AgentMap `agentmap_config.yaml`.
        known: The top-level keys a file of ours may hold.

    Raises:
        ConfigError: The file cannot be read or parsed, or holds an unknown key.
    """
    suffix = path.suffix.lower()
    try:
        text = read_bytes(path).decode("utf-8-sig")  # a stored revision's copy, when a thread resumes on one
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}", code=ErrorCode.BAD_CONFIG) from None
    data: Any
    if suffix == ".toml":
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}", code=ErrorCode.BAD_CONFIG) from None
    elif suffix in (".yaml", ".yml"):
        try:
            import yaml

            from agentmap._yaml import load
        except ImportError:
            raise ConfigError(
                f"reading {path} needs PyYAML",
                code=ErrorCode.MISSING_EXTRA,
                hint='pip install "agentmap[yaml]", or write agentmap.toml instead',
            ) from None
        try:
            data = load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(
                f"{path} is not valid YAML: {_yaml_problem(exc)}",
                code=ErrorCode.BAD_CONFIG,
                hint="indent with spaces, not tabs, and close every bracket and quote",
            ) from None
    else:
        raise ConfigError(f"config file {path} must be .yaml, .yml or .toml", code=ErrorCode.BAD_CONFIG)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path} must hold a mapping of settings (paths:, execution:, ...), not {type(data).__name__}",
            code=ErrorCode.BAD_CONFIG,
        )
    if path.name.lower() in LEGACY_NAMES:
        data = _from_legacy(data)
    else:
        _check_keys(data, path, known)
    return _resolve_paths(data, path.parent, path)


def _yaml_problem(exc: Exception) -> str:
    """PyYAML's error on one line: where, then what (its own text spans several lines)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + " ".join(str(problem).split())


def _check_keys(data: Mapping[str, Any], path: Path, known: list[str]) -> None:
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            guess = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(
                f"{path}: unknown key {key!r}{guess}",
                code=ErrorCode.BAD_CONFIG,
                hint=f"the top-level keys are {', '.join(known)} (see csv_specs/cli.md)",
            )


def _from_legacy(data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of an existing AgentMap `agentmap_config.yaml` that mean the same here."""
    out: dict[str, Any] = {}
    if isinstance(data.get("csv_path"), str):
        out["workflow"] = data["csv_path"]
    paths = data.get("paths")
    if isinstance(paths, Mapping):
        out["paths"] = {k: paths[k] for k in ("custom_agents", "functions") if paths.get(k)}
    prompts = data.get("prompts")
    if isinstance(prompts, Mapping) and prompts.get("directory"):
        out.setdefault("paths", {})["prompts"] = prompts["directory"]
    execution = data.get("execution")
    if isinstance(execution, Mapping) and "success_policy" in execution:
        policy = execution["success_policy"]
        out["execution"] = {"success_policy": policy}
        if isinstance(policy, Mapping) and policy.get("type") == "custom":
            raise ConfigError(
                "execution.success_policy type 'custom' (a custom function) cannot be set in a config file",
                code=ErrorCode.BAD_CONFIG,
                hint="pass success_policy=<callable> to agentmap.compile() in Python, or use all_nodes, "
                "final_node or critical_nodes",
            )
    logging = data.get("logging")
    if isinstance(logging, Mapping):
        root = logging.get("root")
        level = logging.get("level") or (root.get("level") if isinstance(root, Mapping) else None)
        if level:
            out["logging"] = {"level": level}
    if isinstance(data.get("llm"), Mapping):
        out["llm"] = dict(data["llm"])
    if isinstance(data.get("storage"), Mapping):
        out["storage"] = dict(data["storage"])
    if isinstance(data.get("storage_config_path"), str):
        out["storage_config_path"] = data["storage_config_path"]  # read by _resolve_paths, beside the file
    return out


def _resolve_paths(data: dict[str, Any], base: Path, source: Path) -> dict[str, Any]:
    def resolve(value: Any) -> Any:
        return str((base / Path(str(value)).expanduser()).resolve()) if value not in (None, "") else value

    data = dict(data)
    if isinstance(data.get("workflow"), str):
        path, sep, graph = data["workflow"].partition("::")
        data["workflow"] = resolve(path) + (sep + graph if sep else "")
    paths = data.get("paths")
    if isinstance(paths, Mapping):
        data["paths"] = {
            k: resolve(v) if k in ("custom_agents", "functions", "prompts") else v for k, v in paths.items()
        }
        if isinstance(paths.get("allowed_roots"), list):
            data["paths"]["allowed_roots"] = [resolve(r) for r in paths["allowed_roots"]]
    serve = data.get("serve")
    if isinstance(serve, Mapping):
        data["serve"] = _serve_paths(serve, resolve)
    tools = data.get("tools")
    if isinstance(tools, Mapping) and isinstance(tools.get("roots"), list):
        data["tools"] = {**tools, "roots": [resolve(r) for r in tools["roots"]]}
    storage_file = data.pop("storage_config_path", None)
    path = base / Path(str(storage_file or "")).expanduser()
    if isinstance(storage_file, str) and storage_file and path.is_file():  # a missing one: the default folders
        from agentmap._storage_settings import read_storage_file

        # The existing AgentMap's storage file keeps that tool's folder layout unless the config says otherwise.
        data["storage"] = merge({**read_storage_file(path), "layout": "flat"}, data.get("storage") or {})
    if isinstance(data.get("storage"), Mapping):
        from agentmap._storage_settings import absolute_storage_paths

        data["storage"] = absolute_storage_paths(data["storage"], base, source)
    return data


def _serve_paths(serve: Mapping[str, Any], resolve: Any) -> dict[str, Any]:
    """`serve.auth` (its file: `auth.py:my_auth`, or a langgraph.json) and `serve.audit` (a file, not `table`)
    resolved against the config file's folder; a module (`package.auth:auth`) is left as it is."""
    found = dict(serve)
    auth = found.get("auth")
    if isinstance(auth, str) and auth.strip():
        where, sep, name = auth.strip().rpartition(":")
        if auth.strip().lower().endswith(".json"):
            found["auth"] = resolve(auth.strip())
        elif sep and ("/" in where or "\\" in where or where.endswith(".py")):
            found["auth"] = f"{resolve(where)}:{name}"
    audit = found.get("audit")
    if isinstance(audit, str) and audit.strip() and audit.strip() != "table":
        found["audit"] = resolve(audit.strip())
    return found


def merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `top` laid over it, mapping by mapping."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged
