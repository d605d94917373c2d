"""Saves that meet: two `agentmap studio` processes on one file, and a save killed half-way."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import forked
import httpx
import pytest
from studio_helpers import studio_client
from timing import deadline, scaled

from agentmap.studio import StudioConfig

FLOW = "GraphName,Node,AgentType,Prompt\nG,A,echo,hello\n"


def _started(flow: Path) -> tuple[forked.Forked, str, str]:
    """`agentmap studio FLOW` in a process of its own; the address and the token it prints once it listens."""
    proc = forked.start("studio", flow, "--port", "0", cwd=flow.parent, env=dict(os.environ))
    give_up = deadline(60)
    printed = r"AgentMap studio: (http://127\.0\.0\.1:\d+/)\S*token=(\S+)  "
    while not (found := re.search(printed, proc.printed()[0])):
        assert proc.poll() is None and time.monotonic() < give_up, proc.printed()
        time.sleep(0.05)
    return proc, found.group(1), found.group(2)


@pytest.fixture
def two_studios(tmp_path: Path) -> Iterator[list[httpx.Client]]:
    """Two `agentmap studio` processes on one file: a client of each's API, sending its token."""
    flow = tmp_path / "flow.csv"
    flow.write_text(FLOW, encoding="utf-8")
    procs = [_started(flow) for _ in range(2)]
    clients = [
        httpx.Client(base_url=url + "studio/api/", headers={"X-AgentMap-Token": token}, timeout=scaled(60))
        for _, url, token in procs
    ]
    try:
        yield clients
    finally:
        for client in clients:
            client.close()
        for proc, _, _ in procs:
            proc.send_signal(signal.SIGINT)
        for proc, _, _ in procs:
            proc.wait(timeout=scaled(30))


def _edited(opened: dict[str, Any], prompt: str) -> dict[str, Any]:
    rows = [{"id": r["id"], "cells": list(r["cells"])} for r in opened["rows"]]
    rows[1]["cells"][3] = prompt
    return {"file": "flow.csv", "rows": rows, "base": opened["version"]}


@pytest.mark.slow
def test_two_studios_saving_from_the_same_version_at_once_never_lose_a_change(
    tmp_path: Path, two_studios: list[httpx.Client]
) -> None:
    """Each of 30 rounds: both studios open the file, then both save their own change of it at the same moment.
    One save is written; the other is refused with 409 `file-changed`, never answered 200 and overwritten."""
    flow, clients = tmp_path / "flow.csv", two_studios
    outcomes: list[tuple[int, int]] = []
    for trial in range(30):
        bodies = [
            _edited(client.get("open", params={"file": "flow.csv"}).json(), f"trial {trial} by studio {n}")
            for n, client in enumerate(clients)
        ]
        assert bodies[0]["base"] == bodies[1]["base"]
        barrier = threading.Barrier(2)

        def save(n: int, bodies: list[dict[str, Any]] = bodies, barrier: threading.Barrier = barrier) -> Any:
            barrier.wait()
            return clients[n].post("save", json=bodies[n])

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(save, range(2)))
        statuses = (answers[0].status_code, answers[1].status_code)
        outcomes.append(statuses)
        written = flow.read_text(encoding="utf-8")
        if sorted(statuses) == [200, 409]:
            winner, loser = (0, 1) if statuses[0] == 200 else (1, 0)
            assert answers[loser].json()["code"] == "file-changed"
            assert f"trial {trial} by studio {winner}" in written
            assert (
                answers[winner].json()["version"]
                == clients[loser].get("version", params={"file": "flow.csv"}).json()["version"]
            )
    lost = [n for n, statuses in enumerate(outcomes) if statuses != (200, 409) and statuses != (409, 200)]
    assert not lost, f"{len(lost)} of 30 rounds did not end with one save written and one refused: {outcomes}"


_STUCK = """
import os, sys, time
from pathlib import Path
from agentmap.studio._files import Files

def stuck(source, target):  # the save has written and flushed its temporary file: it dies before the rename
    Path("stuck").write_text(str(source))
    time.sleep(600)

os.replace = stuck
files = Files(Path("flow.csv"))
opened = files.open("flow.csv")
files.save("flow.csv", [(0, opened.records[0].cells), (1, ["G", "A", "echo", "changed"])], opened.version)
"""


def test_a_save_killed_half_way_leaves_the_file_as_it_was_and_the_next_start_removes_its_temporary(
    tmp_path: Path,
) -> None:
    flow = tmp_path / "flow.csv"
    flow.write_text(FLOW, encoding="utf-8")
    theirs = [tmp_path / ".flow.csv.mine.tmp", tmp_path / "notes.tmp", tmp_path / ".other.csv.studio-x.tmp"]
    for path in theirs:  # the user's own files, which no studio wrote
        path.write_text("keep me", encoding="utf-8")
    proc = forked.start_python(_STUCK, cwd=tmp_path)
    try:
        give_up = deadline(60)
        while not (tmp_path / "stuck").exists():
            assert proc.poll() is None and time.monotonic() < give_up, proc.printed()
            time.sleep(0.05)
        temporary = Path((tmp_path / "stuck").read_text())
        assert temporary.parent == tmp_path and temporary.read_bytes().endswith(b"changed\n")
        with studio_client(StudioConfig(target=tmp_path)):  # a save still under way: left alone
            assert temporary.exists()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=scaled(30))
    assert temporary.exists() and flow.read_text(encoding="utf-8") == FLOW
    with studio_client(StudioConfig(target=flow)) as client:
        assert not temporary.exists()
        assert all(path.read_text(encoding="utf-8") == "keep me" for path in theirs)
        opened = client.get("/studio/api/open", params={"file": "flow.csv"}).json()
        saved = client.post("/studio/api/save", json=_edited(opened, "after the kill"))
        assert saved.status_code == 200, saved.text
    assert flow.read_text(encoding="utf-8").endswith("after the kill\n")
