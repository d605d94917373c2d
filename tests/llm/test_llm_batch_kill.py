"""`agentmap batch --llm-batch` killed with SIGKILL at each moment of its provider jobs' life, then run again with
the same command: it polls the jobs it (or the provider) already has and no call is billed twice."""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import forked
import pytest
from batch_stub import OpenAIBatchStub
from llm_batch_trials import Servers, trial
from openai_stub import Reply, text
from timing import scaled, until

pytestmark = pytest.mark.slow

ROWS = 5
BATCH = (
    "batch",
    "flow.csv",
    "-i",
    "rows.csv",
    "-o",
    "out.csv",
    "--llm-batch",
    "--llm-batch-poll",
    "0.05",
    "--id-column",
    "id",
)
HEADER = ["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Edge"]


def _echo(body: dict[str, object]) -> Reply:
    messages = body.get("messages")
    assert isinstance(messages, list)
    return text(f"<{str(messages[-1]['content']).upper()}>", usage=(100, 10))


def _setup(folder: Path, stub: OpenAIBatchStub) -> dict[str, str]:
    context = json.dumps({"model": "openai:gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0})
    with (folder / "flow.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows(
            [
                HEADER,
                ["G", "A", "llm", "say {topic}", context, "topic", "a", "B"],
                ["G", "B", "llm", "again {a}", context, "a", "b", ""],
            ]
        )
    (folder / "rows.csv").write_text("id,topic\n" + "".join(f"r{i},t{i}\n" for i in range(ROWS)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMAP_")}
    return env | {"OPENAI_API_KEY": "sk-stub"}


@pytest.mark.parametrize("moment", ["creating", "first job open", "second job open"])
def test_killed_then_run_again_bills_each_call_once(tmp_path: Path, moment: str) -> None:
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * (4 * ROWS)))
        env = _setup(tmp_path, stub)
        if moment == "creating":  # the provider takes the job; the batch is killed before it hears its id
            stub.hold_create = threading.Event()
        elif moment == "first job open":
            stub.plans.append("hold")
        else:
            stub.plans.extend(["complete", "hold"])
        proc = forked.start(*BATCH, cwd=tmp_path, env=env)
        want = 2 if moment == "second job open" else 1
        until(lambda: len(stub.jobs) >= want or proc.poll() is not None, 60, f"job {want} submitted")
        if moment != "creating":  # polled at least once while open
            until(lambda: "open: 1 in_progress" in proc.printed()[1] or proc.poll() is not None, 60, "polled")
        assert proc.poll() is None, proc.printed()
        proc.send_signal(signal.SIGKILL)
        proc.wait(scaled(30))
        if stub.hold_create is not None:
            stub.hold_create.set()
        for job in stub.jobs.values():
            job["plan"] = "complete"  # the provider finished the jobs while the batch was gone
        code, _, err = forked.run(*BATCH, cwd=tmp_path, env=env)
        assert code == 0, err
        assert len(stub.custom_ids) == len(set(stub.custom_ids)) == 2 * ROWS  # no call submitted twice
        assert stub.billed == 2 * ROWS  # no call billed twice
        assert len(stub.jobs) == 2
        if moment == "creating":
            assert "took over job batch_1" in err
    with (tmp_path / "out.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["success"] for r in rows] == ["true"] * ROWS
    assert all(f"<SAY T{i}>" in r["b"] for i, r in enumerate(rows))


def test_killed_at_random_moments_no_call_is_billed_twice_and_rows_hold_their_answers(tmp_path: Path) -> None:
    """The small version of bench/llm_batch_kills.py: a whole run timed, then kills drawn across its span."""
    rows, poll = 40, 0.05

    def start(args: Sequence[str], folder: Path, env: dict[str, str]) -> forked.Forked:
        return forked.start(*args, cwd=folder, env=env)

    def run(args: Sequence[str], folder: Path, env: dict[str, str]) -> tuple[int, str]:
        code, _, err = forked.run(*args, cwd=folder, env=env)
        return code, err

    def one(folder: Path, *delays: float) -> dict[str, Any]:
        folder.mkdir()
        with Servers(rows, job_seconds=0.3) as servers:
            return trial(servers, folder, delays, poll, start, run)

    whole = one(tmp_path / "whole", scaled(120))  # killed only if it has not ended by then
    assert not whole["killed"], "a whole run did not end in time"
    assert whole["jobs"] == 2 and whole["calls_in_jobs"] == 2 * rows and whole["wrong_rows"] == 0
    rng = random.Random(42)
    span = whole["seconds"]
    # two runs killed once each, then one killed three times as it goes on (a kill while it takes up a killed run)
    for n, kills in enumerate((1, 1, 3)):
        found = one(tmp_path / f"trial{n}", *(rng.uniform(0.0, 2 * span / (kills + 1)) for _ in range(kills)))
        assert found["unfinished"] == 0, found["error"]
        assert (found["billed_twice"], found["sync_calls"], found["wrong_rows"]) == (0, 0, 0), found
