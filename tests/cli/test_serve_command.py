"""`agentmap serve`: refusals before it listens, and the real command serving a LangGraph client."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_helpers import COMMAND, GRAPHS, ROOT
from timing import deadline, scaled

from agentmap.cli.app import run_cli


def test_refuses_a_public_host_without_a_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["serve", str(GRAPHS / "hello_world.csv"), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "api-key-required" in err and "refuses to listen on 0.0.0.0 without an API key" in err


def test_refuses_an_unset_key_variable(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTMAP_TEST_KEY", raising=False)
    assert run_cli(["serve", str(GRAPHS / "hello_world.csv"), "--api-key-env", "AGENTMAP_TEST_KEY"]) == 2
    assert "--api-key-env names AGENTMAP_TEST_KEY, which is not set" in capsys.readouterr().err


def test_refuses_an_unset_webhook_secret_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTMAP_TEST_HOOK", raising=False)
    assert run_cli(["serve", str(GRAPHS / "hello_world.csv"), "--webhook-secret-env", "AGENTMAP_TEST_HOOK"]) == 2
    assert "names AGENTMAP_TEST_HOOK, which is not set" in capsys.readouterr().err


def test_webhook_options_reach_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentmap._cli_api

    seen: list[Any] = []
    monkeypatch.setattr(agentmap._cli_api, "serve", lambda config, **_: seen.append(config))  # what the CLI calls
    monkeypatch.setenv("AGENTMAP_TEST_HOOK", "s3cret")
    hosts = ["--webhook-host", "Hooks.Example.com", "--webhook-host", "*.example.org"]
    args = ["serve", str(GRAPHS / "hello_world.csv"), *hosts, "--webhook-secret-env", "AGENTMAP_TEST_HOOK"]
    assert run_cli(args) == 0
    assert seen[0].webhook_hosts == ("hooks.example.com", "*.example.org") and seen[0].webhook_secret == "s3cret"
    assert seen[0].webhook_timeout == 10.0
    assert run_cli([*args, "--webhook-timeout", "2.5s"]) == 0 and seen[1].webhook_timeout == 2.5
    assert run_cli([*args, "--webhook-timeout", "never"]) == 2


def test_webhook_settings_come_from_the_config_file_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agentmap._cli_api

    seen: list[Any] = []
    monkeypatch.setattr(agentmap._cli_api, "serve", lambda config, **_: seen.append(config))  # what the CLI calls
    monkeypatch.setenv("AGENTMAP_TEST_HOOK", "from-env")
    config = tmp_path / "agentmap.yaml"
    config.write_text("serve:\n  webhook_hosts: [hooks.example.com]\n  webhook_secret_env: AGENTMAP_TEST_HOOK\n")
    args = ["serve", str(GRAPHS / "hello_world.csv"), "--config", str(config), "--webhook-host", "127.0.0.1"]
    assert run_cli(args) == 0
    assert seen[0].webhook_hosts == ("127.0.0.1", "hooks.example.com") and seen[0].webhook_secret == "from-env"


def test_connection_options_reach_the_server_and_bad_ones_are_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentmap._cli_api

    seen: list[Any] = []
    monkeypatch.setattr(agentmap._cli_api, "serve", lambda config, **_: seen.append(config))  # what the CLI calls
    args = ["serve", str(GRAPHS / "hello_world.csv")]
    assert run_cli([*args, "--max-connections", "50", "--header-timeout", "2m"]) == 0
    assert (seen[0].max_connections, seen[0].header_timeout) == (50, 120.0)
    assert run_cli(args) == 0 and (seen[1].max_connections, seen[1].header_timeout) == (1000, 10.0)
    assert run_cli([*args, "--max-connections", "0"]) == 2
    assert "Invalid value for '--max-connections'" in capsys.readouterr().err
    assert run_cli([*args, "--header-timeout", "soon"]) == 2
    assert "--header-timeout" in capsys.readouterr().err


def test_refuses_an_unknown_durability(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["serve", str(GRAPHS / "hello_world.csv"), "--durability", "never"]) == 2
    assert "--durability must be sync, async or exit" in capsys.readouterr().err


def test_missing_workflow_and_no_workflow(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli(["serve", "nope.csv"]) == 3
    assert "nope.csv does not exist" in capsys.readouterr().err
    assert run_cli(["serve"]) == 2
    assert "no workflow to serve" in capsys.readouterr().err


_WITHOUT_FASTAPI = """
import sys
sys.modules["fastapi"] = None  # as if the serve extra were not installed
from agentmap.cli.app import run_cli
sys.exit(run_cli(sys.argv[1:]))
"""


def test_without_the_serve_extra_the_command_says_what_to_install() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_FASTAPI, "serve", str(GRAPHS / "hello_world.csv")],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert done.returncode == 2, done.stderr
    assert "missing-extra" in done.stderr and 'pip install "agentmap[serve]"' in done.stderr
    assert "Traceback" not in done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_until_healthy(proc: subprocess.Popen[str], port: int) -> str:
    """The server's URL, once it answers /health."""
    url = f"http://127.0.0.1:{port}"
    give_up = deadline(60)
    while True:
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return url
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < give_up, "the server did not start"
        time.sleep(0.1)


@pytest.mark.slow
def test_serve_answers_the_sdk_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    sdk = pytest.importorskip("langgraph_sdk")
    port = _free_port()
    database = tmp_path / "state" / "runs.db"
    proc = subprocess.Popen(
        [
            *COMMAND,
            "serve",
            str(GRAPHS / "hello_world.csv"),
            "--port",
            str(port),
            "--checkpoint",
            str(database),
            "--strict",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _wait_until_healthy(proc, port)
        with sdk.get_sync_client(url=url, api_key=None) as client:
            thread = client.threads.create()
            result = client.runs.wait(thread["thread_id"], "HelloWorld", input={"name": "Ada"})
            with pytest.raises(httpx.HTTPStatusError, match="422"):  # --strict: the input lacks 'name'
                client.runs.wait(None, "HelloWorld", input={})
        assert result["greeting"] == "Hello, Ada!"
        assert database.is_file()  # the folder of the checkpoint file is made
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=scaled(30))
    assert proc.returncode == 130, err  # Ctrl-C: a graceful shutdown, then the interrupted exit code
    assert "Traceback" not in err
    assert "request_id=" in err and "POST /threads" in err  # access log lines carry the request id


@pytest.mark.slow
def test_serve_traces_each_run_and_writes_the_spans_when_stopped(tmp_path: Path) -> None:
    """`--trace`: each served run's span carries its thread and run ids; Ctrl-C sends the spans still held."""
    import json

    sdk = pytest.importorskip("langgraph_sdk")
    port, spans = _free_port(), tmp_path / "spans.jsonl"
    command = [*COMMAND, "serve", str(GRAPHS / "hello_world.csv"), "--port", str(port)]
    command += ["--checkpoint", str(tmp_path / "runs.db"), "--trace", f"file:{spans}"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = _wait_until_healthy(proc, port)
        with sdk.get_sync_client(url=url, api_key=None) as client:
            thread = client.threads.create()["thread_id"]
            assert client.runs.wait(thread, "HelloWorld", input={"name": "Ada"})["greeting"] == "Hello, Ada!"
            (run,) = client.runs.list(thread)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=scaled(30))
    assert proc.returncode == 130 and "Traceback" not in err, err
    lines = [json.loads(line) for line in spans.read_text(encoding="utf-8").splitlines()]
    (span,) = [s for s in lines if s["name"] == "agentmap.run HelloWorld"]
    assert span["attributes"]["agentmap.thread_id"] == thread
    assert span["attributes"]["agentmap.run_id"] == run["run_id"]
    assert span["attributes"]["agentmap.success"] is True and "agentmap.run.input" not in span["attributes"]
    nodes = [s for s in lines if s["name"].startswith("agentmap.node ")]
    assert len(nodes) == 2 and all(n["parentSpanId"] == span["spanId"] for n in nodes)


def test_serve_without_a_file_takes_active_agent_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_root = tmp_path / "repo"
    (write_root / "deep").mkdir(parents=True)
    (write_root / "pyproject.toml").write_text("[project]\nname = 'mine'\n", encoding="utf-8")
    (write_root / "agent.py").write_text("async def run_agent(prompt, **_):\n    return {}\n", encoding="utf-8")
    monkeypatch.chdir(write_root / "deep")
    monkeypatch.setenv("ACTIVE_AGENT_PATH", "agent.py")
    assert run_cli(["serve"]) == 2
    err = capsys.readouterr().err
    assert "ACTIVE_AGENT_PATH names" in err and "agent.py, which is not a workflow" in err
    monkeypatch.setenv("ACTIVE_AGENT_PATH", "flow.csv")
    assert run_cli(["serve"]) == 3  # a workflow it names is what serve tries to serve
    assert "flow.csv does not exist" in capsys.readouterr().err


@pytest.mark.slow
def test_serve_serves_the_active_agent_workflow_from_a_subfolder(tmp_path: Path) -> None:
    sdk = pytest.importorskip("langgraph_sdk")
    port = _free_port()
    env = {**os.environ, "ACTIVE_AGENT_PATH": "graphs/hello_world.csv"}
    command = [*COMMAND, "serve", "--port", str(port), "--checkpoint", str(tmp_path / "runs.db")]
    pipe = subprocess.PIPE
    proc = subprocess.Popen(command, cwd=ROOT / "docs", env=env, text=True, stdout=pipe, stderr=pipe)
    try:
        url = _wait_until_healthy(proc, port)
        with sdk.get_sync_client(url=url, api_key=None) as client:
            thread = client.threads.create()
            result = client.runs.wait(thread["thread_id"], "HelloWorld", input={"name": "Ada"})
        assert result["greeting"] == "Hello, Ada!"
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=scaled(30))
    assert proc.returncode == 130, err
