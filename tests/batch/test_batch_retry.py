"""A batch honours each LLM node's retry policy, behind the rate limiter: a stub provider on 127.0.0.1 answers
429 / 5xx / too slowly before it answers, and the row succeeds, or fails with the provider's error once the
policy's attempts are spent."""

from __future__ import annotations

import csv
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from openai_stub import OpenAIStub, Reply, error, slow, text

import agentmap
from agentmap.cli import main

KEY_ENV = "AGENTMAP_TEST_STUB_KEY"
# Set at import (collection), before any worker process or local Ray starts: they inherit it from here.
os.environ.setdefault(KEY_ENV, "sk-stub")


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def retry_flow(folder: Path, stub: OpenAIStub, retry: dict[str, Any], **context: Any) -> Path:
    """Pre (echo) -> Answer (llm, with the retry policy) -> Post (echo): a chain batch would fuse."""
    folder.mkdir(parents=True, exist_ok=True)
    options = {"model": "openai:gpt-stub", "base_url": stub.base_url, "api_key_env": KEY_ENV, "retry": retry}
    path = folder / "ask.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Edge"])
        writer.writerow(["Ask", "Pre", "echo", "", "", "question", "asked", "Answer"])
        writer.writerow(
            ["Ask", "Answer", "llm", "Answer: {question}", json.dumps(options | context), "question", "answer", "Post"]
        )
        writer.writerow(["Ask", "Post", "echo", "", "", "answer", "final", ""])
    return path


def clocked(reply: Reply, arrivals: list[float]) -> Any:
    """`reply`, noting when its request arrived."""

    def answer(body: dict[str, Any]) -> Reply:
        arrivals.append(time.monotonic())
        return reply

    return answer


def _rows(folder: Path, count: int) -> Path:
    rows = folder / "rows.jsonl"
    rows.write_text("".join(json.dumps({"question": f"q{i}"}) + "\n" for i in range(count)), encoding="utf-8")
    return rows


def _output(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_429_and_5xx_are_retried_with_backoff_until_the_row_succeeds(
    stub: OpenAIStub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arrivals: list[float] = []
    stub.script(*(clocked(r, arrivals) for r in (error(429, "slow down"), error(503, "busy"), text("42"), text("7"))))
    flow = retry_flow(tmp_path, stub, {"max_attempts": 4, "initial_interval": 0.1, "backoff": 2.0})
    out = tmp_path / "out.jsonl"
    args = ["batch", str(flow), "-i", str(_rows(tmp_path, 2)), "-o", str(out), "--concurrency", "1"]
    assert main([*args, "--rate-limit", "50/s"]) == 0
    assert [(r["success"], r["answer"], r["final"]) for r in _output(out)] == [
        (True, "42", {"answer": "42"}),
        (True, "7", {"answer": "7"}),
    ]
    # three calls for the first row (no hidden client retries), one for the second
    assert len(stub.requests) == 4 and stub.remaining == 0
    first, second = arrivals[1] - arrivals[0], arrivals[2] - arrivals[1]
    assert first >= 0.1 and second >= 0.2  # the policy's backoff: 0.1 s, then twice that
    capsys.readouterr()


def test_a_spent_policy_fails_the_row_with_the_provider_error(
    stub: OpenAIStub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.script(text("fine"), error(429, "slow down"), error(429, "slow down"), text("fine"))
    flow = retry_flow(tmp_path, stub, {"max_attempts": 2, "initial_interval": 0.01})
    out = tmp_path / "out.jsonl"
    args = ["batch", str(flow), "-i", str(_rows(tmp_path, 3)), "-o", str(out), "--concurrency", "1"]
    assert main(args) == 1
    rows = _output(out)
    assert [r["success"] for r in rows] == [True, False, True]
    assert "refused the call: rate limit reached" in rows[1]["error"] and "slow down" in rows[1]["error"]
    assert rows[1]["failed_nodes"] == "Answer"
    assert len(stub.requests) == 4  # row 2 made exactly its two attempts
    assert "1 failed" in capsys.readouterr().err


def test_a_timeout_is_retried(stub: OpenAIStub, tmp_path: Path) -> None:
    stub.script(slow(2.0, text("too late")), text("in time"))
    flow = retry_flow(tmp_path, stub, {"max_attempts": 2, "initial_interval": 0.01}, timeout=0.3)
    result = agentmap.batch(flow, [{"question": "q"}], concurrency=1, rate_limit="20/s")
    assert result.successes == 1 and result.rows[0].outputs["answer"] == "in time"
    assert len(stub.requests) == 2


def test_only_the_listed_failures_are_retried(stub: OpenAIStub, tmp_path: Path) -> None:
    """`on` names the LLM error classes: a 500 is not a rate limit, so it fails at once."""
    stub.script(error(429), text("ok"), error(500, "broken"), text("unused"))
    flow = retry_flow(tmp_path, stub, {"max_attempts": 3, "initial_interval": 0.01, "on": ["LLMRateLimitError"]})
    result = agentmap.batch(flow, [{"question": "a"}, {"question": "b"}], concurrency=1)
    assert [r.success for r in result.rows] == [True, False]
    assert "HTTP 500" in (result.rows[1].error or "") and len(stub.requests) == 3


@pytest.mark.slow
def test_process_workers_retry_like_threads(stub: OpenAIStub, tmp_path: Path) -> None:
    lock = threading.Lock()

    def flaky(body: dict[str, Any]) -> Reply:
        """Each question is refused once, then answered."""
        question = body["messages"][-1]["content"]
        with lock:
            seen = sum(1 for r in stub.requests if r["messages"][-1]["content"] == question)
        return error(429, "slow down") if seen == 1 else text(f"answer to {question}")

    stub.script(*[flaky] * 6)
    flow = retry_flow(tmp_path, stub, {"max_attempts": 2, "initial_interval": 0.01})
    rows = [{"question": f"q{i}"} for i in range(3)]
    result = agentmap.batch(flow, rows, executor="process", workers=2, chunk_size=1, rate_limit="100/s")
    assert [r.outputs["answer"] for r in result.rows] == [f"answer to Answer: q{i}" for i in range(3)]
    assert len(stub.requests) == 6 and result.successes == 3
