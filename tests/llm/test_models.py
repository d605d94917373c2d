"""Model resolution: `provider:model`, defaults from settings and AGENTMAP_LLM_*, and the pre-run checks."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import forked
import pytest

from agentmap.errors import ConfigError
from agentmap.llm.models import (
    ModelOptions,
    check_model,
    choose_model,
    model_options,
    model_problems,
    model_spec,
    resolve_model,
)
from agentmap.llm.offline import OfflineChatModel


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODEL", "TEMPERATURE", "MAX_TOKENS", "TIMEOUT", "BASE_URL", "MAX_RETRIES", "API_KEY_ENV"):
        monkeypatch.delenv(f"AGENTMAP_LLM_{name}", raising=False)


@pytest.mark.parametrize(
    ("spec", "provider", "model"),
    [
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini"),
        ("google:gemini-2.0-flash", "google_genai", "gemini-2.0-flash"),
        ("google_genai:gemini-pro", "google_genai", "gemini-pro"),
        ("Anthropic:claude-3-opus", "anthropic", "claude-3-opus"),
        ("ollama:llama3.2:1b", "ollama", "llama3.2:1b"),
        ("gpt-4o", "openai", "gpt-4o"),
        ("claude-3-5-sonnet", "anthropic", "claude-3-5-sonnet"),
        ("offline", "offline", "offline"),
        ("openai", "openai", "gpt-4o-mini"),
    ],
)
def test_provider_and_model_are_read_from_the_spec(spec: str, provider: str, model: str) -> None:
    chosen = model_spec(spec)
    assert (chosen.provider, chosen.model) == (provider, model)


def test_unknown_provider_suggests_the_close_one() -> None:
    with pytest.raises(ConfigError, match="unknown model provider 'opneai'; did you mean 'openai'"):
        model_spec("opneai:gpt-4o")


def test_bare_unknown_model_asks_for_a_provider() -> None:
    with pytest.raises(ConfigError, match=r"write provider:model, e\.g\. openai:mistral-7b"):
        model_spec("mistral-7b")


def test_bare_model_takes_the_agent_types_provider() -> None:
    assert model_spec("llama3.2", default_provider="ollama").name == "ollama:llama3.2"


def test_no_model_anywhere_says_where_to_set_one() -> None:
    with pytest.raises(ConfigError, match="AGENTMAP_LLM_MODEL"):
        model_spec(None)


def test_defaults_come_from_nested_or_flat_settings() -> None:
    nested = model_spec(settings={"llm": {"model": "ollama:phi3", "temperature": 0.3, "timeout": 12}})
    flat = model_spec(settings={"llm.model": "ollama:phi3", "llm.temperature": "0.3", "llm.timeout": "12"})
    assert nested == flat
    assert (nested.name, nested.temperature, nested.timeout) == ("ollama:phi3", 0.3, 12.0)


def test_environment_variables_fill_what_settings_leave_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMAP_LLM_MODEL", "anthropic:claude-x")
    monkeypatch.setenv("AGENTMAP_LLM_TEMPERATURE", "0.9")
    monkeypatch.setenv("AGENTMAP_LLM_MAX_TOKENS", "77")
    chosen = model_spec(settings={"llm": {"temperature": 0.1}})
    assert (chosen.name, chosen.temperature, chosen.max_tokens) == ("anthropic:claude-x", 0.1, 77)
    explicit = model_spec("openai:gpt-4o", temperature=0.5, settings={"llm": {"temperature": 0.1}})
    assert (explicit.name, explicit.temperature) == ("openai:gpt-4o", 0.5)


def test_bad_numbers_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="'temperature' must be a number, got 'hot'"):
        model_spec("offline", settings={"llm": {"temperature": "hot"}})
    with pytest.raises(ConfigError, match="'max_tokens' must not be negative"):
        model_spec("offline", max_tokens=-1)


def test_an_option_the_provider_cannot_take_is_refused() -> None:
    with pytest.raises(ConfigError, match="'base_url' is not supported by provider 'google_genai'"):
        model_spec("google:gemini-pro", base_url="http://127.0.0.1:1")


@pytest.mark.skipif(importlib.util.find_spec("langchain_google_genai") is not None, reason="google installed")
def test_missing_extra_is_reported_with_the_pip_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # A provider whose package the dev extra does not install (anthropic's now is, for its local test server).
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    expected = 'model google_genai:gemini-pro needs the langchain-google-genai package: pip install "agentmap[google]"'
    assert check_model("google:gemini-pro") == [expected]
    with pytest.raises(ConfigError) as raised:
        resolve_model("google:gemini-pro")
    assert raised.value.message == expected
    assert raised.value.code == "missing-extra"


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MY_GATEWAY_KEY", raising=False)
    assert check_model("openai:gpt-4o-mini") == [
        "model openai:gpt-4o-mini needs an API key: set the environment variable OPENAI_API_KEY"
    ]
    assert check_model("openai:gpt-4o-mini", api_key_env="MY_GATEWAY_KEY") == [
        "model openai:gpt-4o-mini needs an API key: set the environment variable MY_GATEWAY_KEY"
    ]
    with pytest.raises(ConfigError, match="OPENAI_API_KEY") as raised:
        resolve_model("openai:gpt-4o-mini")
    assert raised.value.code == "missing-api-key"


def test_check_model_passes_when_key_and_package_are_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert check_model("openai:gpt-4o-mini") == []
    assert check_model("offline") == []
    assert check_model("ollama:llama3", base_url="http://127.0.0.1:11434") in (
        [],
        ['model ollama:llama3 needs the langchain-ollama package: pip install "agentmap[ollama]"'],
    )


def test_openai_model_gets_every_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_KEY", "sk-gateway")
    model = resolve_model(
        "openai:gpt-4o-mini",
        temperature=0.25,
        max_tokens=64,
        timeout=7,
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        api_key_env="GATEWAY_KEY",
    )
    assert type(model).__name__ == "ChatOpenAI"
    values = model.model_dump()
    assert values["model_name"] == "gpt-4o-mini"
    assert values["temperature"] == 0.25
    assert values["max_tokens"] == 64
    assert values["request_timeout"] == 7.0
    assert values["openai_api_base"] == "http://127.0.0.1:9/v1"
    assert values["max_retries"] == 0
    assert model.openai_api_key.get_secret_value() == "sk-gateway"  # type: ignore[attr-defined]


def test_offline_needs_nothing_and_is_labelled() -> None:
    model = resolve_model("offline:demo")
    assert isinstance(model, OfflineChatModel)
    reply = model.invoke("hello")
    assert reply.response_metadata["stand_in"] is True
    assert reply.response_metadata["model_name"] == "demo"


@pytest.mark.slow
def test_importing_models_loads_no_provider_package() -> None:
    code = (
        "import sys, agentmap.llm.models, agentmap.llm.agents;"
        "print(sorted(m for m in ('langchain_openai', 'openai', 'langchain_mcp_adapters', 'mcp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_zero_timeout_is_refused() -> None:
    with pytest.raises(ConfigError, match="model option 'timeout' must be greater than 0, got 0"):
        model_spec("offline", timeout=0)
    assert model_spec("offline", timeout=0.5).timeout == 0.5


def test_a_fractional_max_tokens_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"model option .max_tokens. must be a whole number, got 5\.5"):
        model_spec("offline", max_tokens=5.5)  # type: ignore[arg-type]
    assert model_spec("offline", settings={"llm.max_tokens": "64"}).max_tokens == 64


def _scrubbed_cli(folder: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run the real `agentmap` command (forked.py) with no provider keys and no AGENTMAP_* settings but `extra`."""
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "NO_COLOR": "1", **extra}
    code, out, err = forked.run(*args, cwd=folder, env=environment)
    return subprocess.CompletedProcess(["agentmap", *args], code, out, err)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_cli_refuses_a_missing_key_or_extra_before_the_run(tmp_path: Path, command: str) -> None:
    (tmp_path / "flow.csv").write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next,Failure_Next\n"
        'g,Ask,llm,Be brief.,"{""model"": ""openai:gpt-4o-mini""}",q,answer,Claude,Oops\n'
        "g,Claude,anthropic,Be brief.,,q,answer2,,Oops\n"
        "g,Oops,echo,,,errors,problem,,\n"
    )
    args = ["run", "flow.csv", "--state", '{"q": "hi"}'] if command == "run" else ["validate", "flow.csv"]
    done = _scrubbed_cli(tmp_path, *args)
    output = done.stdout + done.stderr
    assert done.returncode == 4, output
    assert "Traceback" not in output
    assert "flow.csv:2:Context" in output
    assert "model openai:gpt-4o-mini needs an API key: set the environment variable OPENAI_API_KEY" in output
    assert "needs an API key: set the environment variable ANTHROPIC_API_KEY" in output
    assert "export ANTHROPIC_API_KEY=<your key> in the shell that runs agentmap" in output
    assert "fix the Context cell of 'Claude'" not in output  # the empty cell is not where the key goes
    if importlib.util.find_spec("langchain_anthropic") is None:
        assert 'needs the langchain-anthropic package: pip install "agentmap[anthropic]"' in output


@pytest.mark.slow
def test_a_missing_key_of_a_file_without_context_names_the_variable_not_a_column(tmp_path: Path) -> None:
    (tmp_path / "flow.csv").write_text("GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\ng,Ask,openai,,q,a\n")
    done = _scrubbed_cli(tmp_path, "validate", "flow.csv")
    output = done.stdout + done.stderr
    assert done.returncode == 4, output
    assert "export OPENAI_API_KEY=<your key> in the shell that runs agentmap" in output
    assert "add a Context column" not in output


@pytest.mark.slow
def test_the_cli_takes_the_model_from_agentmap_llm_model(tmp_path: Path) -> None:
    (tmp_path / "flow.csv").write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\ng,Ask,llm,Be brief.,q,answer\n"
    )
    args = ("run", "flow.csv", "--state", '{"q": "hi there"}', "--json")
    missing = _scrubbed_cli(tmp_path, *args)
    assert missing.returncode == 4 and "no model configured" in missing.stdout + missing.stderr
    done = _scrubbed_cli(tmp_path, *args, AGENTMAP_LLM_MODEL="offline:env-model")
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"answer": "[offline] hi there"' in done.stdout
    assert '"model": "offline:env-model"' in done.stdout and '"stand_in": true' in done.stdout


def test_a_nodes_model_options_travel_as_one_object() -> None:
    options = model_options({"model": "offline", "temperature": "0.3", "max_tokens": 64, "prompt": "not an option"})
    assert options == ModelOptions(model="offline", temperature="0.3", max_tokens=64)
    settings = {"llm": {"timeout": 5}}
    chosen = choose_model(options, settings=settings)
    assert chosen == model_spec("offline", temperature=0.3, max_tokens=64, settings=settings)
    assert (chosen.temperature, chosen.max_tokens, chosen.timeout) == (0.3, 64, 5.0)
    assert model_problems(ModelOptions(model="nope:x")) == check_model("nope:x") != []
