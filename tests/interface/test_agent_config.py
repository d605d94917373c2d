"""Seed 001 config keys: config wins over the environment, unknown keys are ignored."""

from __future__ import annotations

import pytest

from agentmap.errors import ConfigError
from agentmap.interface.agent_config import resolve_agent_config

ENV = {
    "AGENTMAP_TOOL_ROOT": "/env/tools",
    "AGENTMAP_ONLY_DOMAINS": "maths, weather",
    "AGENTMAP_EXECUTION_MODE": "threads",
    "AGENTMAP_DOMAIN_TIMEOUT_SECS": "2.5",
    "AGENTMAP_MODEL_ROUTER": "offline:env-router",
    "AGENTMAP_MODEL_SYNTH": "offline:env-synth",
}


def test_environment_fills_what_config_leaves_out() -> None:
    config = resolve_agent_config(None, ENV)
    assert config.tool_root == "/env/tools"
    assert config.only_domains == ("maths", "weather")
    assert config.execution_mode == "threads"
    assert config.domain_timeout_secs == 2.5
    assert config.model_overrides == {"router": "offline:env-router", "synth": "offline:env-synth"}


def test_config_wins_and_unknown_keys_are_ignored() -> None:
    config = resolve_agent_config(
        {
            "tool_root": "/call",
            "only_domains": ["notes"],
            "execution_mode": "async",
            "domain_timeout_secs": 1,
            "model_overrides": {"router": "offline:call", "painter": "x"},
            "colour": "blue",
        },
        ENV,
    )
    assert (config.tool_root, config.only_domains, config.execution_mode) == ("/call", ("notes",), "async")
    assert config.domain_timeout_secs == 1
    assert config.model_overrides == {"router": "offline:call", "synth": "offline:env-synth"}


def test_defaults_without_anything() -> None:
    config = resolve_agent_config({}, {})
    assert config.tool_root is None and config.only_domains is None
    assert config.execution_mode == "async" and config.model_overrides == {}


@pytest.mark.parametrize("bad", [{"execution_mode": "fast"}, {"domain_timeout_secs": -1}])
def test_bad_values_are_config_errors(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="invalid agent config"):
        resolve_agent_config(bad, {})
