"""`agentmap chat` and `agentmap ask` (agentmap/cli/chat.py) through the real command, in subprocesses."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest
from cli_helpers import COMMAND, GRAPHS, ROOT, Result, _env, agentmap, agentmap_tty, write
from timing import deadline, scaled

from agentmap.contracts import AGENT_OUTPUT_SCHEMA
from agentmap.interface.logs import read_log

AGENT = '''
import asyncio
import os
import pathlib


async def run_agent(prompt, chat_history=None, memory=None, config=None):
    """Says what it heard, how many earlier user messages it was given, and its memory and config."""
    if "explode" in prompt:
        raise RuntimeError("kaboom")
    if "sleep" in prompt:
        pathlib.Path(os.environ["READY_FILE"]).touch()
        await asyncio.sleep(60)
    if "silence" in prompt:
        return {"content": "", "response_time_secs": 0.0, "traces": []}
    earlier = [line[6:] for line in (chat_history or "").splitlines() if line.startswith("user: ")]
    extra = f" memory={memory}" if memory else ""
    extra += f" config={sorted(config)}" if config else ""
    return {"content": f"heard {prompt} after {earlier}{extra}", "response_time_secs": 0.0, "traces": []}
'''


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    return write(tmp_path / "my_agent.py", AGENT)


def chat(*args: str | Path, lines: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> Result:
    """`agentmap chat ARGS` with `lines` on stdin."""
    proc = subprocess.run(
        [*COMMAND, "chat", *map(str, args)],
        cwd=cwd,
        env=_env(env),
        input=lines,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.slow
def test_chat_keeps_the_history_across_turns_and_writes_the_log(agent_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "session.log"
    result = chat(
        "--log",
        log,
        lines="hello\n\nhow are you\nexplode now\nthird\nexit\nnever asked\n",
        env={"ACTIVE_AGENT_PATH": str(agent_file)},
    )
    assert result.code == 0, result.text
    assert result.out.splitlines() == [
        "heard hello after []",
        "heard how are you after ['hello']",
        "Error: the agent failed (RuntimeError: kaboom).",
        "heard third after ['hello', 'how are you', 'explode now']",
    ]
    conversation = read_log(log)
    assert conversation.metadata.stop_reason == "user_exit"
    assert [t.text for t in conversation.turns if t.role == "user"] == ["hello", "how are you", "explode now", "third"]
    assert f"written to {log}" in result.err
    assert "Traceback" not in result.text


@pytest.mark.slow
def test_chat_with_a_workflow_file_ends_at_end_of_input() -> None:
    result = chat(GRAPHS / "llm_offline.csv", lines="please reverse the text hello world\nhello there\n")
    assert result.code == 0, result.text
    assert result.out.splitlines() == [
        "Done: reverse text returned dlrow olleh. (your request had 6 words)",
        "[offline] hello there (your request had 2 words)",
    ]


@pytest.mark.slow
def test_chat_max_turns_memory_and_agent_config(agent_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "short.log"
    result = chat(
        agent_file,
        "--max-turns",
        "2",
        "--memory",
        "likes tea",
        "--agent-config",
        '{"execution_mode": "threads"}',
        "--log",
        log,
        lines="one\ntwo\nthree\n",
    )
    assert result.code == 0, result.text
    assert result.out.splitlines() == [
        "heard one after [] memory=likes tea config=['execution_mode']",
        "heard two after ['one'] memory=likes tea config=['execution_mode']",
    ]
    assert read_log(log).metadata.stop_reason == "max_turns"


@pytest.mark.slow
def test_ctrl_c_at_the_prompt_ends_the_chat_cleanly(agent_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "interrupted.log"
    proc = subprocess.Popen(
        [*COMMAND, "chat", str(agent_file), "--log", str(log)],
        cwd=ROOT,
        env=_env(None),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("hello\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "heard hello after []\n"  # the chat now waits at the prompt
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=scaled(60))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert [t.text for t in read_log(log).turns] == ["hello", "heard hello after []"]


def test_ask_prints_the_reply() -> None:
    result = agentmap("ask", "please title case the text big apple", GRAPHS / "llm_offline.csv")
    assert result.code == 0, result.text
    assert result.out == "Done: title case returned Big Apple. (your request had 7 words)\n"


def test_ask_json_matches_the_seed_schema() -> None:
    result = agentmap("ask", "please reverse the text hello world", GRAPHS / "llm_offline.csv", "--json")
    assert result.code == 0, result.text
    output = json.loads(result.out)
    jsonschema.validate(output, AGENT_OUTPUT_SCHEMA)
    assert output["content"] == "Done: reverse text returned dlrow olleh. (your request had 6 words)"
    assert [t["tool"] for t in output["traces"]] == ["word_count", "reverse_text"]
    assert output["response_time_secs"] > 0


def test_ask_uses_the_active_agent(agent_file: Path) -> None:
    result = agentmap("ask", "hi", "--memory", "m1", env={"ACTIVE_AGENT_PATH": str(agent_file)})
    assert result.code == 0, result.text
    assert result.out == "heard hi after [] memory=m1\n"


@pytest.mark.parametrize(
    ("args", "env", "code", "words"),
    [
        (["ask", "hi"], {}, 2, ["no active agent", "ACTIVE_AGENT_PATH"]),
        (["ask", "hi", "missing.csv"], {}, 3, ["missing.csv does not exist"]),
        (["chat"], {"ACTIVE_AGENT_PATH": "gone/agent.py"}, 3, ["$ACTIVE_AGENT_PATH names gone/agent.py"]),
        (["ask", "hi", "AGENT", "--agent-config", "[1, 2]"], {}, 2, ["--agent-config must be a JSON object"]),
        (["ask", "hi", "AGENT", "--agent-config", "{oops"], {}, 2, ["--agent-config is not valid JSON"]),
        (["chat", "AGENT", "--agent-config", '{"execution_mode": "fast"}'], {}, 2, ["execution_mode"]),
        (["ask", "please explode", "AGENT"], {}, 5, ["the agent failed: RuntimeError: kaboom", "--debug"]),
        (["ask", "silence", "AGENT"], {}, 5, ["the agent returned no reply"]),
        (["chat", "AGENT", "--max-turns", "0"], {}, 2, ["--max-turns"]),
    ],
)
def test_bad_input_is_one_paragraph_with_the_right_exit_code(
    agent_file: Path, args: list[str], env: dict[str, str], code: int, words: list[str]
) -> None:
    result = agentmap(*(str(agent_file) if a == "AGENT" else a for a in args), env=env)
    assert result.code == code, result.text
    for word in words:
        assert word in result.err
    assert "Traceback" not in result.text


def test_ask_json_reports_an_error_as_json(agent_file: Path) -> None:
    result = agentmap("ask", "please explode", agent_file, "--json")
    assert result.code == 5
    document = json.loads(result.out)
    assert document["error"]["code"] == "agent-error" and document["exit_code"] == 5


def test_debug_shows_the_agents_traceback(agent_file: Path) -> None:
    result = agentmap("ask", "please explode", agent_file, "--debug")
    assert result.code == 5
    assert "Traceback" in result.err and "kaboom" in result.err


@pytest.mark.slow
def test_ctrl_c_while_the_agent_replies_exits_130(agent_file: Path, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [*COMMAND, "ask", "please sleep", str(agent_file)],
        cwd=ROOT,
        env=_env({"READY_FILE": str(ready)}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        give_up = deadline(60)
        while not ready.exists() and time.monotonic() < give_up:  # the agent has started its minute of sleep
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=scaled(30))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted: Ctrl-C stopped the agent before it replied" in err
    assert "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("no_color", [True, False])
def test_errors_honour_no_color(no_color: bool) -> None:
    env = {"NO_COLOR": "1"} if no_color else {}
    result = agentmap_tty("ask", "hi", "missing.csv", env=env)
    assert result.code == 3
    assert ("\x1b[" in result.out) is not no_color
    assert "missing.csv does not exist" in result.plain


def _read_until(master: int, marker: str, give_up: float) -> str:
    seen = b""
    while marker.encode() not in seen and time.monotonic() < give_up:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                seen += os.read(master, 4096)
            except OSError:  # the terminal closed: the process has exited
                break
    return seen.decode("utf-8", "replace")


@pytest.mark.slow
def test_chat_in_a_terminal_prompts_and_says_how_to_leave(agent_file: Path) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*COMMAND, "chat", str(agent_file)],
        cwd=ROOT,
        env={**_env(None), "NO_COLOR": "1"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    give_up = deadline(60)
    try:
        banner = _read_until(master, "you> ", give_up)
        os.write(master, b"hi\n")
        reply = _read_until(master, "you> ", give_up)
        os.write(master, b"/exit\n")
        code = proc.wait(timeout=scaled(30))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert "Type /exit or press Ctrl-D to leave" in banner
    assert "heard hi after []" in reply
    assert code == 0


def test_ask_chat_and_eval_run_resolve_active_agent_path_from_the_repository_root(tmp_path: Path) -> None:
    # the same resolution as run_agent: a relative path is taken from the folder holding pyproject.toml
    write(tmp_path / "pyproject.toml", "[project]\nname = 'mine'\n")
    write(tmp_path / "agents" / "mine.py", AGENT)
    scenarios = write(tmp_path / "evals" / "scenarios.csv", "scenario,user_message\nhello,hi there\n")
    deep = tmp_path / "work" / "deep"
    deep.mkdir(parents=True)
    env = {"ACTIVE_AGENT_PATH": "agents/mine.py"}
    asked = agentmap("ask", "hi", cwd=deep, env=env)
    assert (asked.code, asked.out) == (0, "heard hi after []\n"), asked.text
    chatted = agentmap("chat", cwd=deep, env=env)  # stdin is empty: the chat ends at once
    assert chatted.code == 0, chatted.text
    evaluated = agentmap("eval", "run", scenarios, "--out", tmp_path / "logs", "--json", cwd=deep, env=env)
    assert evaluated.code == 0, evaluated.text
    assert json.loads(evaluated.out)["counts"] == {"single_turn": 1}
    missing = agentmap("ask", "hi", cwd=deep, env={"ACTIVE_AGENT_PATH": "agents/gone.py"})
    assert missing.code == 3 and "repository root" in missing.err
