"""Every command's help ends with examples, and every example works as printed.

The examples of `serve`, `studio` and `mcp` serve until they are stopped: the fast tier parses them, and the
component tier starts each, asks it something as a client would, and stops it. An example naming a PostgreSQL
URL says it needs that server (`# needs ...`); it runs against the test's own PostgreSQL server.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import signal
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_helpers import GRAPHS, agentmap
from components import clean_env
from timing import scaled, until

from agentmap.cli.app import EXAMPLES, build_app

PYTHON_TYPE = re.compile(r"<(str|int|float|bool|path|file|dir|list\[[^>]*\]|int range|float range)>")
EXIT_CODE = {"batch": 1}  # graphs/data/refunds.csv holds a row that fails on purpose: exit 1, the row recorded
LONG_RUNNING = {"serve", "studio", "mcp"}  # they serve until stopped: parsed here, run in the component tier


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
    threads = agentmap("threads", "--help").out  # `agentmap threads` alone lists them: no COMMAND is needed
    assert "Usage: agentmap threads [OPTIONS] [show THREAD]" in threads and "COMMAND [ARGS]" not in threads
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
            words = shlex.split(example, comments=True)
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


def _serving_examples() -> list[tuple[str, str]]:
    return [(path, example) for path in sorted(LONG_RUNNING) for example in EXAMPLES[path]]


@pytest.mark.slow
@pytest.mark.parametrize(("path", "example"), _serving_examples())
def test_every_serving_example_serves_as_printed(
    tmp_path: Path, request: pytest.FixtureRequest, path: str, example: str
) -> None:
    """Started as printed (on a free port, and a PostgreSQL URL the test's own), each answers a client, then
    stops on Ctrl-C with the exit code `agentmap --help` gives for it."""
    shutil.copytree(GRAPHS, tmp_path / "graphs")
    words = shlex.split(example, comments=True)[2:]
    if any(word.startswith("postgresql://") for word in words):
        assert re.search(r"# needs .*PostgreSQL", example), f"{example}: say it needs a PostgreSQL server"
        url = request.getfixturevalue("postgres_url")
        words = [url if word.startswith("postgresql://") else word for word in words]
    env = clean_env()
    {"serve": _serves, "studio": _studio_serves, "mcp": _mcp_serves}[path](tmp_path, words, env)


def _without_port(words: list[str]) -> list[str]:
    at = words.index("--port") if "--port" in words else None
    return words if at is None else words[:at] + words[at + 2 :]


def _interrupted(proc: Any) -> int:
    """Ctrl-C to the forked command `proc`; its exit code (killed if it does not end)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        code: int = proc.wait(scaled(30))
    except TimeoutError:
        proc.send_signal(signal.SIGKILL)
        raise
    return code


def _serves(tmp_path: Path, words: list[str], env: dict[str, str]) -> None:
    from langgraph_sdk import get_sync_client
    from served import Served

    server = Served(*_without_port(words), cwd=tmp_path, env=env)
    server.spawn()
    try:
        until(server.up, 60, f"agentmap serve {' '.join(words)} did not answer /ok")
        with get_sync_client(url=server.url, api_key=None) as client:
            graphs = {a["graph_id"] for a in client.assistants.search(limit=100)}
            assert {"HelloWorld", "Approval", "Briefing"} <= graphs
            thread = client.threads.create()
            done = client.runs.wait(thread["thread_id"], "HelloWorld", input={"name": "Ada"})
            assert done["greeting"] == "Hello, Ada!"  # type: ignore[call-overload]
    finally:
        code = _interrupted(server.proc)
    assert code == 130, server.proc.printed()[1][-2000:]  # type: ignore[union-attr]


def _studio_serves(tmp_path: Path, words: list[str], env: dict[str, str]) -> None:
    import forked
    import httpx

    proc = forked.start("studio", *_without_port(words), "--port", "0", cwd=tmp_path, env=env)
    printed = re.compile(r"AgentMap studio: (http://127\.0\.0\.1:\d+/)\?file=(\S+)&token=(\S+)")

    def address() -> re.Match[str] | None:
        out, err = proc.printed()
        assert proc.poll() is None, f"the studio exited: {err[-2000:]}"
        return printed.search(out)

    try:
        found = until(address, 60, "the studio printed no address")
        url, token = found.group(1), {"X-AgentMap-Token": found.group(3)}
        opened = httpx.get(url + "studio/api/open", params={"file": found.group(2)}, headers=token).json()
        assert opened["columns"][:3] == ["GraphName", "Node", "AgentType"] and opened["valid"] is True
    finally:
        code = _interrupted(proc)
    assert code == 130, proc.printed()[1][-2000:]


def _mcp_serves(tmp_path: Path, words: list[str], env: dict[str, str]) -> None:
    """The first graph of the file named (of hello_world.csv for a folder) called with its state file's keys."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    import agentmap as package

    flow = tmp_path / words[0] if words[0].endswith(".csv") else tmp_path / "graphs" / "hello_world.csv"
    graph = package.load(flow).graph_names[0]
    arguments = json.loads(flow.with_name(f"{flow.stem}.state.json").read_text(encoding="utf-8"))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentmap", "mcp", *words], cwd=tmp_path, env=env
    )

    async def call() -> tuple[set[str], Any]:
        with open(tmp_path / "mcp.err", "w", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, timedelta(seconds=scaled(60))) as session,
            ):
                await session.initialize()
                tools = {tool.name for tool in (await session.list_tools()).tools}
                return tools, await session.call_tool(graph, arguments)

    tools, result = asyncio.run(call())
    assert {graph, "resume"} <= tools, tools
    assert not result.isError, result
    if "--checkpoint" in words:
        assert (tmp_path / words[words.index("--checkpoint") + 1]).is_file()  # where a paused run is kept
