"""Every command's help ends with examples, and every example works as printed."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import typer
from cli_helpers import GRAPHS, agentmap

from agentmap.cli.app import EXAMPLES, build_app

PYTHON_TYPE = re.compile(r"<(str|int|float|bool|path|file|dir|list\[[^>]*\]|int range|float range)>")
EXIT_CODE = {"batch": 1}  # graphs/data/refunds.csv holds a row that fails on purpose: exit 1, the row recorded
LONG_RUNNING = {"serve", "studio", "mcp"}  # they serve until stopped: their examples are parsed, not run


def _command_paths(command: object, path: tuple[str, ...] = ()) -> list[str]:
    """Every command a user can run (`eval` alone only lists its commands)."""
    runnable = not hasattr(command, "commands") or getattr(command, "invoke_without_command", False)
    found = [" ".join(path)] if path and runnable else []
    for name, sub in getattr(command, "commands", {}).items():
        found += _command_paths(sub, (*path, name))
    return found


def test_every_command_has_examples_at_the_end_of_its_help() -> None:
    paths = _command_paths(typer.main.get_command(build_app()))
    assert sorted(paths) == sorted(EXAMPLES)
    for path in paths:
        help_text = agentmap(*path.split(), "--help").out
        tail = help_text[help_text.index("Examples:") :]
        assert [line.strip() for line in tail.splitlines()[1:] if line.strip()] == list(EXAMPLES[path]), path


def test_help_shows_placeholders_and_choices_not_python_types() -> None:
    resume = agentmap("resume", "--help").out
    assert "Usage: agentmap resume [OPTIONS] THREAD [ANSWER]" in resume
    assert "--durability [sync|async|exit]" in resume and "--checkpoint FILE|URL" in resume
    export = agentmap("export", "--help").out
    assert "--format [mermaid|json|svg|png|dot|python]" in export and "--allow-root DIR" in export
    for path in EXAMPLES:
        text = agentmap(*path.split(), "--help").out
        assert not PYTHON_TYPE.search(text), path
        assert "{" not in text.splitlines()[0], path  # usage lines without braced arguments


def test_every_example_runs_as_printed(tmp_path: Path) -> None:
    shutil.copytree(GRAPHS, tmp_path / "graphs")
    command = typer.main.get_command(build_app())
    for path, examples in EXAMPLES.items():
        for example in examples:
            words = shlex.split(example)
            assert words[0] == "agentmap"
            if path in LONG_RUNNING:
                sub = command.commands[path]  # type: ignore[attr-defined]
                sub.make_context(f"agentmap {path}", words[2:])  # every option and value is accepted
                continue
            result = agentmap(*words[1:], cwd=tmp_path)
            assert result.code == EXIT_CODE.get(path, 0), f"{example}\n{result.text}"
    shown = json.loads(agentmap("threads", "show", "r1", "--json", cwd=tmp_path).out)
    assert (shown["status"], shown["resume"]) == ("done", None)  # answered by the resume example: nothing left
    assert (tmp_path / "branching.svg").read_text(encoding="utf-8").startswith("<svg")
    assert (tmp_path / "report.html").is_file() and (tmp_path / "my_project" / "workflow.csv").is_file()
