"""`agentmap batch --llm-batch`: the rows' model calls sent as provider batch jobs to the local test servers that
speak OpenAI's Files + Batches and Anthropic's Message Batches, round by round, at the batch price, never twice."""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from batch_stub import AnthropicBatchStub, OpenAIBatchStub
from openai_stub import Reply, text

import agentmap
from agentmap.agents.costs import DEFAULT_PRICES, price_of
from agentmap.batch.executors import Executor
from agentmap.batch.rows import Job, RowResult, RowRunner

sys.path[:0] = [str(Path(__file__).parents[1] / "cli")]
from cli_helpers import agentmap as agentmap_cli  # noqa: E402

HEADER = [
    "GraphName",
    "Node",
    "AgentType",
    "Prompt",
    "Context",
    "Input_Fields",
    "Output_Field",
    "Edge",
    "Success_Next",
    "Failure_Next",
]


def _echo(body: dict[str, Any]) -> Reply:
    """The answer to a request: its last message's text, upper-cased (the same in a job as when called)."""
    messages = body.get("messages") or []
    last = messages[-1]["content"] if messages else ""
    if isinstance(last, list):
        last = " ".join(block.get("text", "") for block in last)
    return text(f"<{str(last).upper()}>", usage=(100, 10))


def _workflow(tmp_path: Path, context: dict[str, Any], *, offline_node: bool = False) -> Path:
    """Two LLM nodes (A, then B on A's answer), a function node between them, a branch after B."""
    ctx = json.dumps(context)
    rows = [
        ["G", "A", "llm", "say {topic}", ctx, "topic", "a", "Mid", "", ""],
        ["G", "Mid", "echo", "", "", "a", "mid", "B", "", ""],
        ["G", "B", "llm", "again {mid}", ctx, "mid", "b", "", "Done", "Oops"],
        ["G", "Done", "echo", "", "", "b", "done", "", "", ""],
        ["G", "Oops", "echo", "", "", "b", "oops", "", "", ""],
    ]
    if offline_node:
        rows[3] = ["G", "Done", "llm", "local {b}", '{"model": "offline"}', "b", "done", "", "", ""]
    path = tmp_path / "flow.csv"
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows([HEADER, *rows])
    return path


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"topic": f"t{i}"} for i in range(n)]


def _run(flow: Path, rows: list[dict[str, Any]], out: Path, **kwargs: Any) -> agentmap.BatchResult:
    return agentmap.batch(str(flow), rows, output=out, llm_batch_poll=0.02, **kwargs)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-stub")


def _read(out: Path) -> list[dict[str, str]]:
    with out.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_openai_jobs_answer_every_row_at_half_the_price(tmp_path: Path, keys: None, executor: Executor) -> None:
    n = 6
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * (4 * n)))
        flow = _workflow(tmp_path, {"model": "openai:gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0})
        sync = agentmap.batch(str(flow), _rows(n), output=tmp_path / "sync.csv", executor=executor)
        assert stub.billed == 0 and len(stub.requests) == 2 * n
        lines: list[str] = []
        batched = _run(
            flow, _rows(n), tmp_path / "out.csv", llm_batch=True, executor=executor, on_llm_progress=lines.append
        )
        assert batched.successes == n and batched.failures == 0
        assert stub.billed == 2 * n  # two rounds: A's calls, then B's
        assert len(stub.jobs) == 2
        assert len(set(stub.custom_ids)) == len(stub.custom_ids) == 2 * n  # no call sent twice
    expected = _read(tmp_path / "sync.csv")
    got = _read(tmp_path / "out.csv")
    assert [r["done"] for r in got] == [r["done"] for r in expected]
    assert "<AGAIN" in got[0]["done"] and "<SAY T0>" in got[0]["done"]  # B answered on A's answer
    price = price_of("gpt-4o-mini", DEFAULT_PRICES)
    assert price is not None and sync.cost is not None
    one = (100 * price.input + 10 * price.output) / 1e6
    assert sync.cost == pytest.approx(2 * n * one)
    assert batched.cost == pytest.approx(sync.cost * 0.5)  # OpenAI's batch price: half
    assert float(got[0]["cost"]) == pytest.approx(one)  # both calls of the row, at the batch price
    assert any("submitted job" in line for line in lines)
    assert any("cost so far" in line for line in lines)


def test_a_jobs_polls_reuse_one_connection_per_provider_closed_at_the_end(
    tmp_path: Path, keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job is polled until it ends (every 30 s by default, for hours): each poll on a new client paid a TLS
    context and a connection again."""
    import httpx

    sent: list[tuple[httpx.Client, str]] = []
    real_send = httpx.Client.send

    def send(client: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        sent.append((client, request.url.path))
        return real_send(client, request, **kwargs)

    monkeypatch.setattr(httpx.Client, "send", send)
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 8))
        stub.answer_after = 0.2  # polled every 0.02 s: several polls a job
        flow = _workflow(tmp_path, {"model": "openai:gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0})
        assert _run(flow, _rows(2), tmp_path / "out.csv", llm_batch=True).successes == 2
    to_jobs = [(client, path) for client, path in sent if "/batches" in path or "/files" in path]
    polls = [path for _, path in to_jobs if path.startswith("/v1/batches/")]
    assert len(polls) >= 4  # two jobs (A's round, then B's), each polled while in progress
    clients = {id(client): client for client, _ in to_jobs}
    assert len(clients) == 1
    assert all(client.is_closed for client in clients.values())


def test_anthropic_expired_calls_are_resubmitted_alone_and_failures_are_row_errors(tmp_path: Path, keys: None) -> None:
    with AnthropicBatchStub() as stub:
        stub.script(*([_echo] * 40))
        stub.plans.extend([("expire", 2), ("fail", 0)])
        flow = _workflow(tmp_path, {"model": "anthropic:claude-sonnet-4-5", "base_url": stub.base_url})
        result = _run(flow, _rows(4), tmp_path / "out.csv", llm_batch=True)
        first, again = stub.jobs["msgbatch_1"], stub.jobs["msgbatch_2"]
        assert len(first["requests"]) == 4 and len(again["requests"]) == 2  # the 2 expired calls only
        sent = [body for cid, body in first["requests"][2:]]
        assert [body for _, body in again["requests"]] == sent
    rows = _read(tmp_path / "out.csv")
    failed = [r for r in rows if r["success"] == "false"]
    assert len(failed) == 1 and result.failures == 1
    assert "job msgbatch_2, result line 1" in failed[0]["error"] and "max_tokens is too large" in failed[0]["error"]
    assert "node 'A'" in failed[0]["error"] and failed[0]["failed_nodes"] == "A"
    assert all("<SAY" in r["done"] for r in rows if r["success"] == "true")


def test_retry_sync_makes_a_failed_request_as_a_normal_call(tmp_path: Path, keys: None) -> None:
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 20))
        stub.plans.append(("fail", 0))
        flow = _workflow(tmp_path, {"model": "openai:gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0})
        result = _run(flow, _rows(2), tmp_path / "out.csv", llm_batch=True, llm_batch_retry="sync")
        chat = len(stub.requests) - stub.billed  # requests to /chat/completions, not through a job
        assert len(stub.jobs) == 2  # A's calls, then B's: the failed call was not sent in a job again
        assert chat == 1  # it was made as a normal call
    assert result.failures == 0 and result.successes == 2


@pytest.mark.parametrize("plan", ["malformed", "stray"])
def test_bad_result_lines_are_told_and_other_rows_go_on(tmp_path: Path, keys: None, plan: str) -> None:
    lines: list[str] = []
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 20))
        stub.plans.append(plan)
        flow = _workflow(tmp_path, {"model": "openai:gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0})
        result = _run(flow, _rows(2), tmp_path / "out.csv", llm_batch=True, on_llm_progress=lines.append)
    assert result.successes == 2  # every call had its own line; the bad line is told, not fatal
    if plan == "stray":
        assert any("matches no call" in line and "line 3" in line for line in lines)


def test_a_job_past_the_timeout_fails_its_rows(tmp_path: Path, keys: None) -> None:
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 20))
        stub.plans.append("hold")
        flow = _workflow(tmp_path, {"model": "openai:gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0})
        result = _run(flow, _rows(2), tmp_path / "out.csv", llm_batch=True, llm_batch_timeout=0.2)
        assert stub.jobs["batch_1"]["status"] == "cancelled"
    rows = _read(tmp_path / "out.csv")
    assert result.failures == 2
    assert all("--llm-batch-timeout" in r["error"] for r in rows)


def test_detach_then_the_same_call_collects_without_submitting_again(
    tmp_path: Path, keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []  # the row runs (`RowRunner.run`) of the collecting call
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 20))
        flow = _workflow(tmp_path, {"model": "openai:gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0})
        first = _run(flow, _rows(3), tmp_path / "out.csv", llm_batch=True, detach=True)
        assert first.llm is not None and first.llm.detached and first.llm.waiting_rows == 3
        assert not (tmp_path / "out.csv").exists()
        assert len(stub.jobs) == 1 and stub.billed == 0
        run = RowRunner.run

        def counted(self: RowRunner, job: Job) -> RowResult:
            runs.append(job[1])
            return run(self, job)

        monkeypatch.setattr(RowRunner, "run", counted)
        lines: list[str] = []
        second = _run(flow, _rows(3), tmp_path / "out.csv", llm_batch=True, on_llm_progress=lines.append)
        assert second.successes == 3
        # the rows waiting on job 1 are not run up to their queued call again: each runs once after A's answer,
        # once after B's
        assert second.llm is not None and second.llm.parked == 3
        assert "llm-batch: 3 rows wait on calls queued before; they go on once answered" in lines
        assert len(runs) == 6 and set(Counter(runs).values()) == {2}
        assert len(set(stub.custom_ids)) == len(stub.custom_ids) == 6  # job 1 polled again, not sent again
        assert stub.billed == 6


def test_a_node_without_a_batch_api_is_named_and_runs_synchronously(tmp_path: Path, keys: None) -> None:
    lines: list[str] = []
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 20))
        ctx = {"model": "openai:gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0}
        flow = _workflow(tmp_path, ctx, offline_node=True)
        result = _run(flow, _rows(2), tmp_path / "out.csv", llm_batch=True, on_llm_progress=lines.append)
    assert result.successes == 2
    assert "node 'Done'" in lines[0] and "runs synchronously" in lines[0]


def test_the_command_line_runs_llm_batch(tmp_path: Path, keys: None) -> None:
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 20))
        flow = _workflow(tmp_path, {"model": "openai:gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0})
        rows = tmp_path / "rows.csv"
        rows.write_text("topic\nt0\nt1\n")
        result = agentmap_cli(
            "batch",
            str(flow),
            "-i",
            str(rows),
            "-o",
            str(tmp_path / "out.csv"),
            "--llm-batch",
            "--llm-batch-poll",
            "0.02",
        )
    assert result.code == 0, result.err
    assert "llm-batch: submitted job" in result.err
    assert "<SAY T1>" in _read(tmp_path / "out.csv")[1]["done"]
