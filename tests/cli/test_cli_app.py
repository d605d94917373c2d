"""The `agentmap` command itself: version, help, usage errors, `python -m agentmap`."""

from __future__ import annotations

import importlib

import pytest
import typer
from cli_helpers import agentmap, agentmap_subprocess

import agentmap as package
from agentmap.cli.app import COMMANDS, build_app

CORE = ("run", "validate", "inspect", "export", "init", "scaffold")
REGISTERED = sorted(typer.main.get_command(build_app()).commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    result = agentmap(flag)
    assert result.code == 0
    assert result.out.strip() == f"agentmap {package.__version__}"


def test_help_lists_every_command_and_the_exit_codes() -> None:
    result = agentmap("--help")
    assert result.code == 0
    assert set(CORE) <= set(REGISTERED)
    for command in REGISTERED:
        assert f"  {command} " in result.out
    assert "130 interrupted" in result.out.replace("\n", " ").replace("  ", " ")


@pytest.mark.parametrize("command", REGISTERED)
def test_each_command_has_help(command: str) -> None:
    result = agentmap(command, "-h")
    assert result.code == 0
    assert f"Usage: agentmap {command}" in result.out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["bogus"], ["No such command 'bogus'"]),
        (["run", "--state"], ["'--state' requires an argument"]),
        (["export", "graphs/hello_world.csv", "--format", "gif"], ["'gif'", "mermaid", "svg", "png"]),
        (["validate"], ["no workflow file given", "agentmap.yaml"]),  # no FILE and none configured
    ],
)
def test_usage_errors_exit_2_without_traceback(args: list[str], words: list[str]) -> None:
    result = agentmap(*args)
    assert result.code == 2
    for word in words:
        assert word in result.err
    assert "Traceback" not in result.text


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "code", "stream", "words"),
    [
        (["--version"], 0, "out", [f"agentmap {package.__version__}"]),
        (["run", "graphs/hello_world.csv", "--state", '{"name": "Ada"}'], 0, "out", ['"Hello, Ada!"']),
        (["bogus"], 2, "err", ["No such command 'bogus'"]),
        (["run", "graphs/helo_world.csv"], 3, "err", ["does not exist"]),
        (["validate", "graphs/../pyproject.toml"], 3, "err", ["is not a workflow file"]),
    ],
)
def test_a_real_process_exits_as_in_process(args: list[str], code: int, stream: str, words: list[str]) -> None:
    """What the in-process tests check holds for `python -m agentmap` as a shell starts it."""
    result = agentmap_subprocess(*args)
    assert result.code == code, result.err
    for word in words:
        assert word in getattr(result, stream)
    assert "Traceback" not in result.text


def test_a_run_converts_only_the_options_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start-up: a converter (a pydantic TypeAdapter each) is built for the values given, not for every option."""
    from typer import _adapters

    built: list[object] = []
    real = _adapters.try_build_adapter

    def counted(annotation: object, parameter_info: object) -> object:
        built.append(annotation)
        return real(annotation, parameter_info)  # type: ignore[arg-type]

    monkeypatch.setattr(_adapters, "try_build_adapter", counted)
    result = agentmap("run", "graphs/hello_world.csv", "--json", "--recursion-limit", "5")
    assert result.code == 0, result.text
    assert sorted(map(str, built)) == ["<class 'int'>", "<class 'str'>"]  # FILE and --recursion-limit
    assert agentmap("run", "graphs/hello_world.csv", "--recursion-limit", "0").code == 2  # still checked


@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_commands_lists_the_names_each_module_adds(module: str) -> None:
    """A command imports only the module `COMMANDS` names for it: the names listed must be those it registers."""
    app = typer.Typer()
    importlib.import_module(module).register(app)
    names = [info.name for info in app.registered_commands] + [info.name for info in app.registered_groups]
    assert tuple(names) == COMMANDS[module]
