"""`--rate-limit`: a batch's LLM calls are spaced per model provider (a stub OpenAI server on 127.0.0.1)."""

from __future__ import annotations

import csv
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from openai_stub import OpenAIStub, Reply, error, text

import agentmap
from agentmap.cli import main


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    with OpenAIStub() as server:
        yield server


def _flow(folder: Path, stub: OpenAIStub) -> Path:
    context = json.dumps({"model": "openai:gpt-stub", "base_url": stub.base_url, "max_retries": 0})
    path = folder / "ask.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field"])
        writer.writerow(["Ask", "Answer", "llm", "Answer: {question}", context, "question", "answer"])
    return path


def _timed(arrivals: list[float], lock: threading.Lock) -> Any:
    def reply(body: dict[str, Any]) -> Reply:
        with lock:
            arrivals.append(time.monotonic())
        return text(f"answer to {body['messages'][-1]['content']}")

    return reply


def test_requests_are_spaced_by_the_rate_limit(stub: OpenAIStub, tmp_path: Path) -> None:
    arrivals: list[float] = []
    lock = threading.Lock()
    stub.script(*[_timed(arrivals, lock) for _ in range(5)])
    rows = [{"question": f"q{i}"} for i in range(5)]
    started = time.monotonic()
    result = agentmap.batch(_flow(tmp_path, stub), rows, concurrency=5, rate_limit="10/s")
    took = time.monotonic() - started
    assert result.successes == 5 and result.rows[2].outputs["answer"] == "answer to Answer: q2"
    # 10/s with no burst: the k-th request is let through at least k/10 s after the first asks, however
    # busy the machine is (five rows in flight at once would take a few milliseconds without the limit).
    assert len(arrivals) == 5 and took >= 0.5
    # Spread over that time at the stub, not sent in a burst; the slack is for a request held up on its way.
    assert max(arrivals) - min(arrivals) >= 0.25


def test_a_refused_call_fails_its_row_only(
    stub: OpenAIStub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.script(text("fine"), error(429, "slow down"), text("fine"))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"question": f"q{i}"}) + "\n" for i in range(3)), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = ["batch", str(_flow(tmp_path, stub)), "-i", str(rows), "-o", str(out), "--concurrency", "1"]
    assert main([*args, "--rate-limit", "50/s"]) == 1
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["success"] for line in lines] == [True, False, True]
    assert "rate limit" in lines[1]["error"]
    capsys.readouterr()
