"""`agentmap studio`: refusals before it listens, and the real command printing its address and serving the page."""

from __future__ import annotations

import csv
import os
import re
import signal
import time
from pathlib import Path

import forked
import httpx
import pytest
from cli_helpers import GRAPHS
from timing import deadline, scaled

from agentmap.cli.app import run_cli


def test_refuses_a_public_host_without_a_key_and_a_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["studio", str(GRAPHS / "branching.csv"), "--host", "0.0.0.0"]) == 2
    assert "api-key-required" in capsys.readouterr().err
    assert run_cli(["studio", str(GRAPHS / "nope.csv")]) == 3
    assert "nope.csv does not exist" in capsys.readouterr().err
    assert run_cli(["studio", str(GRAPHS / "hello_world.state.json")]) == 3
    assert "the studio edits .csv, .tsv and .xlsx files" in capsys.readouterr().err


def _workbook(path: Path) -> Path:
    """branching.csv as the first sheet of a workbook, a sheet of notes after it."""
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    first = book.active
    first.title = "Branching Flow"
    for line in (GRAPHS / "branching.csv").read_text(encoding="utf-8").splitlines():
        first.append(next(csv.reader([line])))
    book.create_sheet("Notes")["A1"] = "not a workflow"
    book.save(path)
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "graph", "opened_name", "query"),
    [
        ("branching.csv", "", "branching.csv", "branching.csv"),
        ("branching.csv", "::Approval", "branching.csv", "branching.csv&graph=Approval"),  # that graph's tab
        ("flows.xlsx", "", "flows.xlsx[Branching Flow]", "flows.xlsx%5BBranching%20Flow%5D"),  # the first sheet
        ("flows.xlsx", "::Notes", "flows.xlsx[Notes]", "flows.xlsx%5BNotes%5D"),  # the sheet named
    ],
)
def test_prints_the_address_of_the_page_and_serves_the_file(
    tmp_path: Path, name: str, graph: str, opened_name: str, query: str
) -> None:
    flow = tmp_path / name
    if name.endswith(".xlsx"):
        _workbook(flow)
    else:
        flow.write_bytes((GRAPHS / "branching.csv").read_bytes())
    proc = forked.start("studio", f"{flow}{graph}", "--port", "0", cwd=tmp_path, env=dict(os.environ))
    out = Path(proc._out)
    give_up = deadline(30)
    printed = r"AgentMap studio: (http://127\.0\.0\.1:\d+/)\?file=" + re.escape(query) + r"&token=([\w-]{43})  "
    while not (found := re.search(printed, _read(out))):
        assert proc.poll() is None and time.monotonic() < give_up, _read(out)
        time.sleep(0.05)
    url, token = found.group(1), {"X-AgentMap-Token": found.group(2)}
    try:
        assert "AgentMap studio" in httpx.get(url).text
        refused = httpx.get(url + "studio/api/open", params={"file": opened_name})  # a page without the token
        assert refused.status_code == 401 and refused.json()["code"] == "token-required"
        opened = httpx.get(url + "studio/api/open", params={"file": opened_name}, headers=token).json()
        assert opened["columns"][:2] == ["GraphName", "Node"] or opened_name.endswith("[Notes]")
        assert opened["valid"] is True or opened_name.endswith("[Notes]")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=scaled(20))


@pytest.mark.slow
def test_a_token_from_the_environment_allowed_hosts_and_a_body_limit(tmp_path: Path) -> None:
    flow = tmp_path / "branching.csv"
    flow.write_bytes((GRAPHS / "branching.csv").read_bytes())
    env = {**os.environ, "STUDIO_TOKEN": "scripted-token"}
    args = ["--port", "0", "--token-env", "STUDIO_TOKEN", "--allow-host", "studio.lan", "--max-body", "300"]
    proc = forked.start("studio", str(flow), *args, cwd=tmp_path, env=env)
    out, give_up = Path(proc._out), deadline(30)
    while not (found := re.search(r"AgentMap studio: (http://127\.0\.0\.1:\d+/)\S*token=(\S+)  ", _read(out))):
        assert proc.poll() is None and time.monotonic() < give_up, _read(out)
        time.sleep(0.05)
    url, token = found.group(1), {"X-AgentMap-Token": "scripted-token"}
    try:
        assert found.group(2) == "scripted-token"
        assert httpx.get(url + "studio/api/files", headers={**token, "Host": "studio.lan"}).status_code == 200
        assert httpx.get(url + "studio/api/files", headers={**token, "Host": "evil.example"}).status_code == 403
        rows = [{"id": None, "cells": ["x" * 400]}]
        big = httpx.post(url + "studio/api/check", json={"file": "branching.csv", "rows": rows}, headers=token)
        assert big.status_code == 413
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=scaled(20))


def test_refuses_an_unset_token_variable(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTMAP_TEST_TOKEN", raising=False)
    assert run_cli(["studio", str(GRAPHS / "branching.csv"), "--token-env", "AGENTMAP_TEST_TOKEN"]) == 2
    assert "--token-env names AGENTMAP_TEST_TOKEN, which is not set" in capsys.readouterr().err


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""
