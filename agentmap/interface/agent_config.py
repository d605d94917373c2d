"""The per-call `config` of csv_specs/run_agent.md and the environment variables it overrides.

| key | environment variable | meaning |
|---|---|---|
| `tool_root` | `AGENTMAP_TOOL_ROOT` | folder whose sub-folders are the extensions (domains) |
| `only_domains` | `AGENTMAP_ONLY_DOMAINS` (comma-separated) | run only these domains |
| `execution_mode` | `AGENTMAP_EXECUTION_MODE` | `async` (default) or `threads` |
| `domain_timeout_secs` | `AGENTMAP_DOMAIN_TIMEOUT_SECS` | per-domain time limit |
| `model_overrides` | `AGENTMAP_MODEL_ROUTER`, `_DOMAIN`, `_SYNTH` | model id per role |

Config wins over the environment for that call; unknown keys are ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from agentmap.errors import ConfigError

__all__ = ["ROLES", "AgentConfig", "resolve_agent_config"]

ROLES = ("router", "domain", "synth")
"""The roles `model_overrides` may name."""

_ENV = {
    "tool_root": "AGENTMAP_TOOL_ROOT",
    "only_domains": "AGENTMAP_ONLY_DOMAINS",
    "execution_mode": "AGENTMAP_EXECUTION_MODE",
    "domain_timeout_secs": "AGENTMAP_DOMAIN_TIMEOUT_SECS",
}


class AgentConfig(BaseModel):
    """The resolved per-call settings.

    Attributes:
        tool_root: The folder to discover extensions under.
        only_domains: Restrict execution to these domain names; None means all.
        execution_mode: How domains run side by side: `async` tasks or `threads`.
        domain_timeout_secs: Seconds each domain may take; None means no limit.
        model_overrides: Model id per role (`router`, `domain`, `synth`).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    tool_root: str | None = None
    only_domains: tuple[str, ...] | None = None
    execution_mode: Literal["async", "threads"] = "async"
    domain_timeout_secs: float | None = Field(default=None, gt=0)
    model_overrides: dict[str, str] = Field(default_factory=dict)


def resolve_agent_config(
    config: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> AgentConfig:
    """Merge the environment and a call's `config` (config wins); unknown keys are ignored.

    Args:
        config: The `config` argument of `run_agent`.
        environ: The environment (default `os.environ`).

    Returns:
        The settings for this call.

    Raises:
        ConfigError: When a value has the wrong type (e.g. `execution_mode: "fast"`).
    """
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for key, variable in _ENV.items():
        if env.get(variable):
            values[key] = env[variable]
    overrides = {
        role: env[f"AGENTMAP_MODEL_{role.upper()}"] for role in ROLES if env.get(f"AGENTMAP_MODEL_{role.upper()}")
    }
    given = dict(config or {})
    if isinstance(given.get("model_overrides"), Mapping):
        overrides |= {str(k): str(v) for k, v in given.pop("model_overrides").items() if k in ROLES and v}
    values |= {k: v for k, v in given.items() if k in AgentConfig.model_fields and v is not None}
    values["model_overrides"] = overrides
    if isinstance(values.get("only_domains"), str):
        values["only_domains"] = [d.strip() for d in values["only_domains"].split(",") if d.strip()]
    try:
        return AgentConfig.model_validate(values)
    except PydanticValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(
            f"invalid agent config: {problems}",
            hint="execution_mode is 'async' or 'threads'; domain_timeout_secs a positive number; "
            "only_domains a list of names; model_overrides maps router/domain/synth to model ids.",
        ) from exc
