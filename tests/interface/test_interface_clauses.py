"""The run_agent interface and the conversation log format, held exactly: ACTIVE_AGENT_PATH relative to the
repository root, `max_turns` of a chat log as the real limit, and user-facing text naming the contracts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentmap.cli.app import build_app, run_cli
from agentmap.interface.agent import load_active_agent, run_agent
from agentmap.interface.chat import DEFAULT_MAX_TURNS, chat_loop

ROOT = Path(__file__).resolve().parents[2]

AGENT = """
async def run_agent(prompt, chat_history=None, memory=None, config=None):
    return {"content": f"echo {prompt}", "response_time_secs": 0.0, "traces": []}
"""


async def test_active_agent_path_is_relative_to_the_repository_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "mine.py").write_text(AGENT)
    (tmp_path / "deep" / "down").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "deep" / "down")
    monkeypatch.setenv("ACTIVE_AGENT_PATH", "agents/mine.py")
    assert (await run_agent("hi"))["content"] == "echo hi"
    monkeypatch.setenv("ACTIVE_AGENT_PATH", str(tmp_path / "agents" / "mine.py"))  # absolute works as is
    assert (await run_agent("yo"))["content"] == "echo yo"


async def test_a_chat_log_always_holds_its_real_turn_limit() -> None:
    lines = iter(["one", "two", "three"])
    log = await chat_loop(lambda prompt, **_: {"content": prompt}, lambda _: next(lines), lambda _: None, max_turns=2)
    assert (log.metadata.max_turns, log.metadata.stop_reason) == (2, "max_turns")
    more = iter(["a", "b"])

    def ended(_: str) -> str:  # two messages, then end of input
        try:
            return next(more)
        except StopIteration:
            raise EOFError from None

    log = await chat_loop(lambda prompt, **_: {"content": prompt}, ended, lambda _: None)
    users = sum(1 for t in log.turns if t.role == "user")
    assert log.metadata.max_turns == DEFAULT_MAX_TURNS >= users == 2


def test_chat_help_speaks_of_the_contracts_by_name() -> None:
    text = CliRunner().invoke(build_app(), ["chat", "--help"], terminal_width=200).output
    assert "seed" not in text.lower()
    assert "the run_agent interface" in text and "conversation log format" in text
    assert re.search(r"--max-turns .*\[default: 100", text)


def test_the_active_agent_hint_points_at_a_file_that_exists(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ACTIVE_AGENT_PATH", raising=False)
    with pytest.raises(Exception) as raised:
        load_active_agent()
    hint = str(getattr(raised.value, "hint", ""))
    path = re.search(r"ACTIVE_AGENT_PATH=(\S+)", hint)
    assert path is not None and (ROOT / path.group(1)).is_file()
    monkeypatch.chdir(ROOT)
    assert run_cli(["ask", "hello"]) == 2
    assert path.group(1) in capsys.readouterr().err


def test_every_path_agentmap_names_in_its_messages_exists() -> None:
    named = {
        match
        for source in (ROOT / "agentmap").rglob("*.py")
        for match in re.findall(r"(?:graphs|csv_specs|docs)/[\w./-]+\.(?:csv|md|py|json)", source.read_text("utf-8"))
    }
    assert "graphs/assistant/assistant.csv" in named
    assert [p for p in sorted(named) if not (ROOT / p).is_file()] == []
