"""Kill -9 trials of `agentmap batch --llm-batch` against the batch test servers, with their accounting: what the
component test (test_llm_batch_kill.py) and the benchmark (bench/llm_batch_kills.py) both run.

The workflow has two LLM nodes: A (`openai:gpt-4o-mini`, "say {topic}") and B on A's answer
(`anthropic:claude-sonnet-4-5`, "again {a}"), served by the OpenAI- and Anthropic-shaped batch test servers
(batch_stub.py). Every request a server answers gets an answer of its own (the request's text upper-cased and a
serial number), recorded by the request's text, so a call answered twice is seen, and so is a row holding an
answer other than its call's. A provider bills every request of every job it took, polled or not: a call in two
jobs is billed twice even when the test server (which answers a job when it is polled) answered only one.

A trial: start the batch command, SIGKILL it after `delay` seconds (unless it ended before), run the same command
until it exits 0, then count from the servers' accounting.
"""

from __future__ import annotations

import collections
import csv
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from batch_stub import AnthropicBatchStub, OpenAIBatchStub
from openai_stub import Reply, text

__all__ = ["BATCH", "Servers", "request_text", "trial"]

BATCH = ("batch", "flow.csv", "-i", "rows.csv", "-o", "out.csv", "--llm-batch", "--id-column", "id")
"""The command every run of a trial makes (after `agentmap`), with `--llm-batch-poll` added."""
HEADER = ["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Edge"]


def request_text(body: dict[str, Any]) -> str:
    """The text of a request's last message (Anthropic's blocks joined: the prompt as rendered)."""
    messages = body.get("messages") or []
    last = messages[-1]["content"] if messages else ""
    if isinstance(last, list):
        last = "".join(block.get("text", "") for block in last)
    return str(last)


class _Answers:
    """The answer both servers give: `<TEXT #serial>`, each recorded under its request's text."""

    def __init__(self) -> None:
        self.given: dict[str, list[str]] = collections.defaultdict(list)
        self._lock = threading.Lock()
        self._serial = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        asked = request_text(body)
        with self._lock:
            self._serial += 1
            answer = f"<{asked.upper()} #{self._serial}>"
            self.given[asked].append(answer)
        return text(answer, usage=(100, 10))


class Servers:
    """The two batch test servers of one trial (a context manager), and what they billed."""

    def __init__(self, rows: int, job_seconds: float) -> None:
        self.rows = rows
        self.answers = _Answers()
        self.openai, self.anthropic = OpenAIBatchStub(), AnthropicBatchStub()
        for stub in (self.openai, self.anthropic):
            stub.answer_after = job_seconds
            stub.script(*([self.answers] * (4 * rows)))

    def __enter__(self) -> Servers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.openai.close()
        self.anthropic.close()

    def write(self, folder: Path) -> dict[str, str]:
        """The workflow and its `rows` input rows in `folder`; the environment to run the batch with."""

        def context(model: str, base_url: str) -> str:
            return json.dumps({"model": model, "base_url": base_url, "max_retries": 0})

        a = context("openai:gpt-4o-mini", self.openai.base_url)
        b = context("anthropic:claude-sonnet-4-5", self.anthropic.base_url)
        with (folder / "flow.csv").open("w", newline="") as handle:
            nodes = [
                ["g", "A", "llm", "say {topic}", a, "topic", "a", "B"],
                ["g", "B", "llm", "again {a}", b, "a", "b", ""],
            ]
            csv.writer(handle).writerows([HEADER, *nodes])
        (folder / "rows.csv").write_text("id,topic\n" + "".join(f"r{n},topic {n}\n" for n in range(self.rows)))
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMAP_")}
        return env | {"OPENAI_API_KEY": "sk-stub", "ANTHROPIC_API_KEY": "sk-ant-stub"}

    def jobs(self) -> list[dict[str, Any]]:
        """Every job the servers took."""
        return [job for stub in (self.openai, self.anthropic) for job in list(stub.jobs.values())]

    def account(self) -> dict[str, int]:
        """`billed_twice`: calls in two jobs or answered twice; `sync_calls`: requests to the chat endpoints
        (not through a job); `jobs`: jobs taken; `calls_in_jobs`: the requests in them."""
        in_jobs: collections.Counter[str] = collections.Counter()
        for job in self.jobs():
            in_jobs.update(request_text(body) for _, body in job["requests"])
        twice = {t for t, n in in_jobs.items() if n > 1} | {t for t, a in self.answers.given.items() if len(a) > 1}
        sync = sum(len(stub.requests) - stub.billed for stub in (self.openai, self.anthropic))
        calls = sum(in_jobs.values())
        return {"billed_twice": len(twice), "sync_calls": sync, "jobs": len(self.jobs()), "calls_in_jobs": calls}

    def wrong_rows(self, out: Path) -> int:
        """Rows missing from `out` or failed, or whose `a` and `b` are not the one answer their calls got."""
        if not out.exists():
            return self.rows
        with out.open(newline="") as handle:
            found = {r["id"]: r for r in csv.DictReader(handle)}
        wrong = 0
        for n in range(self.rows):
            row = found.get(f"r{n}")
            a = self.answers.given.get(f"say topic {n}", [])
            b = self.answers.given.get(f"again {a[0]}", []) if len(a) == 1 else []
            right = len(a) == len(b) == 1 and row is not None and row.get("success") == "true"
            wrong += 0 if right and row is not None and (row["a"], row["b"]) == (a[0], b[0]) else 1
        return wrong

    def moment(self, folder: Path) -> str:
        """Where a run was when it was killed, as the servers and the folder tell."""
        jobs = self.jobs()
        if not jobs:
            return "rows to their first call" if (folder / "out.csv.llm-batch.db").exists() else "starting"
        waiting = sum(1 for job in jobs if job["status"] == "in_progress")
        return f"round {'B' if self.anthropic.jobs else 'A'}: {len(jobs)} jobs taken, {waiting} in progress"


class Process(Protocol):
    """A started batch command (`subprocess.Popen` or tests/forked.py's `Forked`)."""

    def poll(self) -> int | None: ...

    def send_signal(self, sig: int, /) -> None: ...

    def wait(self, timeout: float | None = None) -> int: ...


Start = Callable[[Sequence[str], Path, dict[str, str]], Process]
Run = Callable[[Sequence[str], Path, dict[str, str]], tuple[int, str]]


def trial(
    servers: Servers,
    folder: Path,
    delays: Sequence[float],
    poll: float,
    start: Start,
    run: Run,
    reruns: int = 10,
) -> dict[str, Any]:
    """The command started once per delay and killed `delays[i]` seconds after it started (unless it ended before),
    then run until it exits 0 (at most `reruns` times); the counts. One delay is one trial; several are kills at
    as many moments of one run, each run taking up where the killed one left off."""
    env = servers.write(folder)
    args = [*BATCH, "--llm-batch-poll", str(poll)]
    started = time.monotonic()
    code, killed, moments = 1, 0, []
    for delay in delays:
        began = time.monotonic()
        proc = start(args, folder, env)
        while proc.poll() is None and time.monotonic() - began < delay:
            time.sleep(0.005)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
            proc.wait()
            moments.append(servers.moment(folder))
        else:
            code = proc.wait()
            moments.append("ended before")
            if code == 0:
                break
    runs, err = 0, ""
    while code != 0 and runs < reruns:
        code, err = run(args, folder, env)
        runs += 1
    return {
        **servers.account(),
        "wrong_rows": servers.wrong_rows(folder / "out.csv"),
        "unfinished": int(code != 0),
        "error": err.strip()[-500:] if code != 0 else "",
        "killed": killed,
        "moment": "; ".join(moments),
        "moments": moments,
        "reruns": runs,
        "seconds": time.monotonic() - started,
    }
