"""`agentmap.config`: the config file, AGENTMAP_* variables, the legacy file and the errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmap.config import Settings, find_config_file, load_settings
from agentmap.errors import ConfigError


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("AGENTMAP_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def test_defaults_without_file_or_variables(tmp_path: Path) -> None:
    settings = load_settings()
    assert settings.source is None
    assert settings.execution.success_policy == "all_nodes"
    assert settings.paths.functions is None and settings.paths.custom_agents is None
    assert settings.logging.level == "WARNING"
    assert settings.compile_options()["functions_dir"] is None


def test_yaml_file_paths_resolve_against_its_folder(tmp_path: Path) -> None:
    (tmp_path / "agentmap.yaml").write_text(
        "paths:\n  functions: fns\n  custom_agents: ../shared/agents\n"
        "execution:\n  success_policy: critical_nodes\n  critical_nodes: [Pay]\n"
        "llm:\n  model: openai:gpt-4o-mini\n  temperature: 0\ntools:\n  roots: [tools]\n  timeout: 5\n"
    )
    settings = load_settings()
    assert settings.source == tmp_path / "agentmap.yaml"
    assert settings.paths.functions == (tmp_path / "fns").resolve()
    assert settings.paths.custom_agents == (tmp_path.parent / "shared" / "agents").resolve()
    assert settings.policy_options() == {"success_policy": "critical_nodes", "critical_nodes": ["Pay"]}
    agent_settings = settings.compile_options()["settings"]
    assert agent_settings["llm"] == {"model": "openai:gpt-4o-mini", "temperature": 0}
    assert agent_settings["tools"]["roots"] == [str((tmp_path / "tools").resolve())]
    assert agent_settings["tools"]["timeout"] == 5


def test_toml_file(tmp_path: Path) -> None:
    (tmp_path / "agentmap.toml").write_text('[execution]\nsuccess_policy = "final_node"\n[logging]\nlevel = "debug"\n')
    settings = load_settings()
    assert settings.execution.success_policy == "final_node"
    assert settings.logging.level == "DEBUG"


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agentmap.yaml").write_text("execution:\n  success_policy: final_node\nllm:\n  model: a:b\n")
    monkeypatch.setenv("AGENTMAP_EXECUTION__SUCCESS_POLICY", "all_nodes")
    monkeypatch.setenv("AGENTMAP_LLM__TEMPERATURE", "0.5")
    monkeypatch.setenv("AGENTMAP_TOOLS__ROOTS", '["/opt/tools"]')
    monkeypatch.setenv("AGENTMAP_PATHS__FUNCTIONS", "here")
    settings = load_settings()
    assert settings.execution.success_policy == "all_nodes"
    assert settings.llm == {"model": "a:b", "temperature": "0.5"}
    assert settings.tools.roots == [Path("/opt/tools")]
    assert settings.paths.functions == Path("here")


def test_overrides_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMAP_LOGGING__LEVEL", "ERROR")
    assert load_settings(overrides={"logging": {"level": "INFO"}}).logging.level == "INFO"


def test_named_file_and_agentmap_config_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agentmap.yaml").write_text("logging:\n  level: ERROR\n")
    other = tmp_path / "conf" / "team.toml"
    other.parent.mkdir()
    other.write_text('[logging]\nlevel = "INFO"\n')
    assert load_settings(other).logging.level == "INFO"
    monkeypatch.setenv("AGENTMAP_CONFIG", str(other))
    assert load_settings().source == other


def test_legacy_agentmap_config_yaml(tmp_path: Path) -> None:
    (tmp_path / "agentmap_config.yaml").write_text(
        "csv_path: flows/main.csv\nautocompile: true\n"
        "paths:\n  custom_agents: agents\n  functions: funcs\n  compiled_graphs: compiled\n"
        "execution:\n  tracking: {enabled: true}\n  success_policy:\n    type: critical_nodes\n"
        "    critical_nodes: [Start]\n"
        "logging:\n  version: 1\n  root: {level: INFO, handlers: [console]}\n"
        "routing: {enabled: true}\nllm:\n  openai: {model: gpt-4o}\n"
    )
    assert find_config_file() == tmp_path / "agentmap_config.yaml"
    settings = load_settings()
    assert settings.workflow == str((tmp_path / "flows" / "main.csv").resolve())
    assert settings.paths.custom_agents == (tmp_path / "agents").resolve()
    assert settings.paths.functions == (tmp_path / "funcs").resolve()
    assert settings.execution.success_policy == "critical_nodes"
    assert settings.execution.critical_nodes == ["Start"]
    assert settings.logging.level == "INFO"
    assert settings.llm == {"openai": {"model": "gpt-4o"}}


def test_our_file_wins_over_the_legacy_one(tmp_path: Path) -> None:
    (tmp_path / "agentmap_config.yaml").write_text("logging:\n  root: {level: INFO}\n")
    (tmp_path / "agentmap.yaml").write_text("logging:\n  level: ERROR\n")
    assert load_settings().logging.level == "ERROR"


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("agentmap.yaml", "pathz:\n  functions: x\n", ["agentmap.yaml: unknown key 'pathz'", "did you mean 'paths'"]),
        ("agentmap.yaml", "paths:\n  function: x\n", ["agentmap.yaml: paths.function: unknown key"]),
        ("agentmap.yaml", "execution:\n  success_policy: most\n", ["execution.success_policy", "final_node"]),
        ("agentmap.yaml", "execution:\n  success_policy: critical_nodes\n", ["needs execution.critical_nodes"]),
        ("agentmap.yaml", "logging:\n  level: LOUD\n", ["logging.level", "unknown logging level 'LOUD'"]),
        ("agentmap.yaml", "paths: [1, 2]\n", ["agentmap.yaml: paths"]),
        ("agentmap.yaml", "- a\n- b\n", ["must hold a mapping"]),
        ("agentmap.yaml", "paths: {functions: [\n", ["agentmap.yaml is not valid YAML: line 2, column 1: expected"]),
        ("agentmap.yaml", "paths:\n\tfunctions: x\n", ["agentmap.yaml is not valid YAML: line 2, column 1: found"]),
        ("agentmap.toml", "[paths\n", ["not valid TOML"]),
        (
            "agentmap_config.yaml",
            "execution:\n  success_policy: {type: custom, custom_function: f}\n",
            ["'custom'", "success_policy=<callable>"],
        ),
    ],
)
def test_bad_files_name_the_file_and_key(tmp_path: Path, name: str, text: str, words: list[str]) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    for word in words:
        assert word in message
    assert "\n" not in caught.value.message  # one paragraph
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("AGENTMAP_EXECUTION__SUCCESS_POLICY", "sometimes", ["variable AGENTMAP_EXECUTION__SUCCESS_POLICY"]),
        ("AGENTMAP_TOOLS__ROOTS", "a,b", ["variable AGENTMAP_TOOLS__ROOTS", "tools.roots", "JSON"]),
        ("AGENTMAP_EXECUTION__CRITICAL_NODES", "Pay", ["variable AGENTMAP_EXECUTION__CRITICAL_NODES", "JSON"]),
        ("AGENTMAP_LOGGING__LEVEL", "chatty", ["AGENTMAP_LOGGING__LEVEL", "unknown logging level"]),
    ],
)
def test_bad_variables_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, words: list[str]
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    for word in words:
        assert word in str(caught.value)


def test_named_file_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"missing.yaml \(--config\) does not exist"):
        load_settings(tmp_path / "missing.yaml")
    monkeypatch.setenv("AGENTMAP_CONFIG", str(tmp_path))
    with pytest.raises(ConfigError, match=r"\(AGENTMAP_CONFIG\) is a directory"):
        load_settings()


@pytest.mark.slow
def test_the_environment_is_read_by_load_settings_and_only_then_costs_pydantic_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTMAP_EXECUTION__SUCCESS_POLICY", "final_node")
    assert load_settings().execution.success_policy == "final_node"
    assert Settings().execution.success_policy == "all_nodes"  # the model alone holds the defaults
    probe = (
        "import sys; from agentmap.config import load_settings; load_settings(); "
        "print('pydantic_settings' in sys.modules)"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMAP_")}
    quiet = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=clean, capture_output=True, text=True)
    assert quiet.stdout.strip() == "False", quiet.stderr
    configured = {**clean, "AGENTMAP_LOGGING__LEVEL": "DEBUG"}
    loud = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=configured, capture_output=True, text=True)
    assert loud.stdout.strip() == "True", loud.stderr


def test_confinement_keys_resolve_against_the_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmap.spec.paths import allowed_roots

    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "agentmap.yaml").write_text(
        "paths:\n  prompts: prompts\n  allowed_roots: [../shared]\n"
        "functions:\n  allowed_modules: [my_routers]\n"
        "mcp:\n  allowed_commands: ['python server.py']\n  servers: {notes: python notes.py}\n"
    )
    settings = load_settings(tmp_path / "conf" / "agentmap.yaml")
    assert settings.paths.prompts == (tmp_path / "conf" / "prompts").resolve()
    assert settings.paths.allowed_roots == [(tmp_path / "shared").resolve()]
    agent_settings = settings.compile_options()["settings"]
    assert agent_settings["functions"] == {"allowed_modules": ["my_routers"]}
    assert agent_settings["mcp"] == {"allowed_commands": ["python server.py"], "servers": {"notes": "python notes.py"}}
    monkeypatch.setenv("AGENTMAP_ALLOWED_ROOTS", f"extra{os.pathsep}/opt/more")
    assert allowed_roots(agent_settings) == [
        (tmp_path / "shared").resolve(),
        (tmp_path / "extra").resolve(),
        Path("/opt/more"),
    ]
    with pytest.raises(ConfigError, match=r"mcp\.allowed_command"):
        load_settings(overrides={"mcp": {"allowed_command": []}})
