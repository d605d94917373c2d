"""Settings for the command line: one optional file plus `AGENTMAP_*` environment variables.

The file is `agentmap.yaml`, `agentmap.yml` or `agentmap.toml` in the working directory (or any file
named by `--config` or `AGENTMAP_CONFIG`); relative paths in it resolve against its folder. An existing
AgentMap `agentmap_config.yaml` is read for the keys that mean the same here. Variables override the
file: `AGENTMAP_<SECTION>__<KEY>` (`AGENTMAP_EXECUTION__SUCCESS_POLICY=final_node`), lists as JSON.
Every mistake raises `ConfigError` naming the file or variable and the key. csv_specs/cli.md lists
every key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from agentmap._config_files import LEGACY_NAMES, merge, read_file
from agentmap._sources import exists
from agentmap.errors import ConfigError, ErrorCode

__all__ = [
    "CONFIG_NAMES",
    "ENV_PREFIX",
    "LEGACY_NAMES",
    "ExecutionSettings",
    "FunctionsSettings",
    "LoggingSettings",
    "McpSettings",
    "PathsSettings",
    "Settings",
    "ToolsSettings",
    "find_config_file",
    "load_settings",
]

ENV_PREFIX = "AGENTMAP_"
CONFIG_NAMES = ("agentmap.yaml", "agentmap.yml", "agentmap.toml")
"""The config files looked for in the working directory, in this order."""

_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class PathsSettings(BaseModel):
    """Where custom code lives (default: `custom_agents/` and `functions/` beside the workflow file).

    Attributes:
        custom_agents: The folder of custom agent classes.
        functions: The folder of `func:` router functions.
        prompts: The prompts folder: `file:` prompts resolve there too, `prompt:name` reads its registry.yaml.
        allowed_roots: Folders, besides the workflow's own, that paths in a workflow file may reach.
    """

    model_config = ConfigDict(extra="forbid")

    custom_agents: Path | None = None
    functions: Path | None = None
    prompts: Path | None = None
    allowed_roots: list[Path] = Field(default_factory=list)


class FunctionsSettings(BaseModel):
    """What `func:module:function` may import.

    Attributes:
        allowed_modules: Modules (and packages, with their submodules) a workflow's routers may name.
    """

    model_config = ConfigDict(extra="forbid")

    allowed_modules: list[str] = Field(default_factory=list)


class McpSettings(BaseModel):
    """Which MCP stdio servers a workflow may start.

    Attributes:
        allowed_commands: Command lines a Tool_Source `mcp:stdio:<command line>` may start, as written.
        servers: Servers by name: Tool_Source `mcp:NAME` starts the command line given here.
    """

    model_config = ConfigDict(extra="forbid")

    allowed_commands: list[str] = Field(default_factory=list)
    servers: dict[str, str] = Field(default_factory=dict)


class ExecutionSettings(BaseModel):
    """How a run's success is decided.

    Attributes:
        success_policy: `all_nodes`, `final_node` or `critical_nodes`.
        critical_nodes: The nodes the `critical_nodes` policy looks at.
    """

    model_config = ConfigDict(extra="forbid")

    success_policy: Literal["all_nodes", "final_node", "critical_nodes"] = "all_nodes"
    critical_nodes: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _policy_mapping(cls, data: Any) -> Any:
        # The existing AgentMap writes `success_policy: {type: ..., critical_nodes: [...]}`.
        if isinstance(data, Mapping) and isinstance(data.get("success_policy"), Mapping):
            policy = dict(data["success_policy"])
            flat = {k: v for k, v in data.items() if k != "success_policy"}
            flat["success_policy"] = policy.pop("type", "all_nodes")
            if policy.get("critical_nodes"):
                flat.setdefault("critical_nodes", policy["critical_nodes"])
            return flat
        return data

    @model_validator(mode="after")
    def _critical_listed(self) -> ExecutionSettings:
        if self.success_policy == "critical_nodes" and not self.critical_nodes:
            raise ValueError("the critical_nodes policy needs execution.critical_nodes (a list of node names)")
        return self


class LoggingSettings(BaseModel):
    """Logging of the `agentmap` loggers (to stderr).

    Attributes:
        level: TRACE, DEBUG, INFO, WARNING (default), ERROR or CRITICAL.
    """

    model_config = ConfigDict(extra="forbid")

    level: str = "WARNING"

    @field_validator("level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in _LEVELS:
            raise ValueError(f"unknown logging level {value!r}: use one of {', '.join(_LEVELS)}")
        return level


class ToolsSettings(BaseModel):
    """Settings tool-using agents read (`tools.roots`, `tools.timeout`, and any other key).

    Attributes:
        roots: Extra folders tool files may be loaded from.
        timeout: Seconds per tool call (agents default to 30).
        allowed_modules: Importable modules (and packages) a Tool_Source may name.
    """

    model_config = ConfigDict(extra="allow")

    roots: list[Path] = Field(default_factory=list)
    timeout: float | None = None
    allowed_modules: list[str] = Field(default_factory=list)


class TracingSettings(BaseModel):
    """OpenTelemetry tracing of runs (`tracing:`); see csv_specs/tracing.md.

    Attributes:
        exporter: `otlp` (endpoint from `OTEL_EXPORTER_OTLP_ENDPOINT`), `console` or `file:PATH`; None: off.
        content: Whether state values, prompts and replies go into spans.
    """

    exporter: str | None = None
    content: bool = False

    @field_validator("exporter")
    @classmethod
    def _known_exporter(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if value not in ("otlp", "console") and not (value.startswith("file:") and len(value) > 5):
            raise ValueError(f"unknown trace exporter {value!r}: use otlp, console or file:PATH")
        return value


class ServeSettings(BaseModel):
    """`agentmap serve` (`serve:`); see csv_specs/serve.md#webhooks.

    Attributes:
        webhook_hosts: Hosts a run's `webhook` URL may name (`*.example.com` for its subdomains), besides those
            given with `--webhook-host`.
        webhook_secret_env: The environment variable holding the key that signs webhook deliveries (the key
            itself never goes in the file); `--webhook-secret-env` wins.
        allowed_hosts: Host names requests may name besides the machine's own (`*.example.com` for its
            subdomains, `*` for any), besides those given with `--allow-host`; see csv_specs/security.md.
        auth: The `langgraph_sdk.Auth` object asked who calls and what they may do (`auth.py:my_auth`, a file
            relative to the config file; `--auth` wins); see csv_specs/serve.md, "Users and permissions".
        quota: What each identity may run (`runs=60/min,concurrent=5`; `--quota` wins).
        audit: The audit log: a JSON-lines file (relative to the config file), or `table` (`--audit` wins).
        audit_content: Whether audit entries carry the inputs.
    """

    model_config = ConfigDict(extra="forbid")

    webhook_hosts: list[str] = Field(default_factory=list)
    webhook_secret_env: str | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    auth: str | None = None
    quota: str | None = None
    audit: str | None = None
    audit_content: bool = False


class Settings(BaseModel):
    """Everything the command line reads from the config file and `AGENTMAP_*` variables.

    Build it with `load_settings()`, which reads the config file and the environment; `Settings()` alone
    holds the defaults.

    Attributes:
        workflow: The workflow `agentmap run` runs when no FILE is given.
        paths: Custom agents and functions folders.
        execution: The default success policy.
        logging: The logging level.
        llm: Free-form model defaults for LLM agents (`model`, `temperature`, ...).
        tools: Tool settings (`roots`, `timeout`).
        functions: What `func:module:function` may import (`allowed_modules`).
        mcp: Which MCP stdio servers a workflow may start (`allowed_commands`, `servers`).
        storage: Storage folders, shaped like the existing AgentMap's `agentmap_config_storage.yaml`
            (`core.base_directory`, `csv.default_directory`, `csv.collections`, ...; csv_specs/storage.md).
        tracing: OpenTelemetry tracing (`exporter`, `content`).
        serve: `agentmap serve`'s webhook hosts and signing key variable, hosts, auth handlers, quota and audit
            log.
    """

    # NaN and infinity (YAML's .nan, .inf) stay what they are in `agent_settings`, where pydantic would make them
    # None: `llm.budget: .inf` must be refused as no amount, not read as no budget
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    workflow: str | None = None
    paths: PathsSettings = Field(default_factory=PathsSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    llm: dict[str, Any] = Field(default_factory=dict)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    functions: FunctionsSettings = Field(default_factory=FunctionsSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    storage: dict[str, Any] = Field(default_factory=dict)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    _source: Path | None = PrivateAttr(default=None)

    @property
    def source(self) -> Path | None:
        """The config file these settings came from, or None."""
        return self._source

    def agent_settings(self) -> dict[str, Any]:
        """The mapping agents receive as `environment.settings` (`llm`, `tools`, ...), JSON-friendly."""
        data: dict[str, Any] = self.model_dump(mode="json", exclude={"workflow"})
        return data

    def compile_options(self) -> dict[str, Any]:
        """Keyword arguments for `agentmap.compile` / `agentmap.validate` from these settings."""
        options: dict[str, Any] = {
            "functions_dir": self.paths.functions,
            "agents_dir": self.paths.custom_agents,
            "settings": self.agent_settings(),
        }
        return options

    def policy_options(self) -> dict[str, Any]:
        """`success_policy` and `critical_nodes` for `agentmap.compile`."""
        return {"success_policy": self.execution.success_policy, "critical_nodes": self.execution.critical_nodes}


def _read_environment() -> dict[str, Any]:
    """The `AGENTMAP_<SECTION>__<KEY>` variables as nested settings data, read by pydantic-settings.

    pydantic-settings is imported only when such a variable is set: it costs a tenth of a second of
    start-up, which `agentmap run` should not pay to learn that nothing is configured.
    """
    sections = tuple(f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields)
    if not any(key.upper().startswith(sections) for key in os.environ):
        return {}
    from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict
    from pydantic_settings.exceptions import SettingsError

    class _FromEnvironment(Settings, BaseSettings):
        model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid")

    try:
        data: dict[str, Any] = EnvSettingsSource(_FromEnvironment)()
    except SettingsError as exc:
        field_name = re.search(r'field "(\w+)"', str(exc))
        section = f"{ENV_PREFIX}{field_name.group(1).upper()}" if field_name else ENV_PREFIX
        names = sorted(key for key in os.environ if key.upper().startswith(section)) or [f"{ENV_PREFIX}*"]
        keys = ", ".join(f"{name} ({name[len(ENV_PREFIX) :].lower().replace('__', '.')})" for name in names)
        raise ConfigError(
            f"environment variable {keys}: the value cannot be read",
            code=ErrorCode.BAD_CONFIG,
            hint=f"lists and objects are JSON, e.g. {ENV_PREFIX}TOOLS__ROOTS='[\"tools\"]'",
        ) from None
    return data


def find_config_file(folder: Path | None = None) -> Path | None:
    """The config file in `folder` (default: the working directory): ours first, then a legacy one."""
    folder = folder or Path.cwd()
    for name in (*CONFIG_NAMES, *LEGACY_NAMES):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def load_settings(
    config: str | Path | None = None,
    *,
    cwd: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Read the config file (named, `AGENTMAP_CONFIG`, or found in `cwd`) and the environment.

    Precedence, highest first: `overrides`, `AGENTMAP_*` variables, the file, the defaults.

    Raises:
        ConfigError: The named file is missing or unreadable, or a key or value is wrong (the message
            names the file or variable and the key).
    """
    named = config or os.environ.get(f"{ENV_PREFIX}CONFIG") or None
    path: Path | None
    if named is not None:
        path = Path(named).expanduser()
        if not exists(path):  # on disk, or held by the stored revision a thread resumes on
            what = "is a directory" if path.is_dir() else "does not exist"
            via = "--config" if config else f"{ENV_PREFIX}CONFIG"
            raise ConfigError(
                f"config file {path} ({via}) {what}",
                code=ErrorCode.CONFIG_NOT_FOUND,
                hint="name an agentmap.yaml or agentmap.toml file, or leave it out",
            )
    else:
        path = find_config_file(cwd)
    file_data = read_file(path, list(Settings.model_fields)) if path is not None else {}
    env_data = _read_environment()
    merged = merge(merge(file_data, env_data), dict(overrides or {}))
    try:
        settings = Settings(**merged)
    except PydanticValidationError as exc:
        raise _config_error(exc, path, env_data, overrides or {}) from None
    settings._source = path
    return settings


def _has(data: Mapping[str, Any], loc: tuple[str, ...]) -> bool:
    current: Any = data
    for part in loc:
        if not isinstance(current, Mapping) or part not in current:
            return False
        current = current[part]
    return True


def _config_error(
    exc: PydanticValidationError, path: Path | None, env: Mapping[str, Any], overrides: Mapping[str, Any]
) -> ConfigError:
    first = exc.errors()[0]
    loc = tuple(str(p) for p in first["loc"] if not isinstance(p, int))
    key = ".".join(loc) or "(settings)"
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    if loc and _has(overrides, loc):
        where = "a command-line option"
    elif loc and _has(env, loc):
        where = f"environment variable {ENV_PREFIX}{'__'.join(loc).upper()}"
    else:
        where = str(path) if path is not None else "the settings"
    return ConfigError(
        f"{where}: {key}: {message}",
        code=ErrorCode.BAD_CONFIG,
        hint="see csv_specs/cli.md for every configuration key and its values",
    )
