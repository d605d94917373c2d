"""`agentmap batch status OUTPUT` and `--budget` with `--llm-batch`, through the real command line (and the Python
API) against the local test servers that speak OpenAI's and Anthropic's batch endpoints.

The status reads what the batch left (its output, `.partial` file and checkpoint store) and sends nothing: a job
the test server has not been asked about stays unanswered (the server answers a job when it is first polled), and
no request is made. The budget is held when calls are placed in provider jobs, at the batch price.
"""

from __future__ import annotations

import csv
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from batch_stub import AnthropicBatchStub, OpenAIBatchStub
from openai_stub import Reply, counted

import agentmap
from agentmap.agents.costs import DEFAULT_PRICES, price_of
from agentmap.batch.executors import Executor
from agentmap.batch.results import BatchOverBudget
from agentmap.batch.status import batch_status, status_command
from agentmap.runtime.checkpoint import redacted

sys.path[:0] = [str(Path(__file__).parents[1] / "cli")]
from cli_helpers import agentmap as agentmap_cli  # noqa: E402

HEADER = ["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Edge"]
PADDING = "Answer with the topic in capitals, between angle brackets, and nothing else. " * 5
ROWS = 6


def _echo(body: dict[str, Any]) -> Reply:
    """The topic upper-cased, its usage counted from the request as the provider counts it."""
    messages = body.get("messages") or []
    last = messages[-1]["content"] if messages else ""
    if isinstance(last, list):
        last = " ".join(block.get("text", "") for block in last)
    return counted(f"<{str(last).split(':')[-1].strip().upper()}>")


def _setup(folder: Path, base_url: str, model: str = "openai:gpt-4o-mini", *, nodes: int = 1) -> None:
    context = json.dumps({"model": model, "base_url": base_url, "max_retries": 0, "max_tokens": 20})
    rows = [["G", "A", "llm", f"{PADDING} topic: {{topic}}", context, "topic", "a", "B" if nodes > 1 else ""]]
    if nodes > 1:
        rows.append(["G", "B", "llm", f"{PADDING} topic: {{a}}", context, "a", "b", ""])
    with (folder / "flow.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows([HEADER, *rows])
    (folder / "rows.csv").write_text("id,topic\n" + "".join(f"r{i},t{i}\n" for i in range(ROWS)))


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-stub")


RUN = (
    "batch",
    "flow.csv",
    "-i",
    "rows.csv",
    "-o",
    "out.csv",
    "--id-column",
    "id",
    "--llm-batch",
    "--llm-batch-poll",
    "0.02",
)


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _status(folder: Path, *extra: str) -> dict[str, Any]:
    result = agentmap_cli("batch", "status", "out.csv", "--json", *extra, cwd=folder)
    assert result.code == 0, result.err
    found: dict[str, Any] = json.loads(result.out)
    return found


# --- agentmap batch status ---------------------------------------------------------------------------------------


def test_status_after_detach_shows_the_job_and_the_command_that_collects_it(tmp_path: Path, keys: None) -> None:
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 20))
        _setup(tmp_path, stub.base_url)
        detached = agentmap_cli(*RUN, "--detach", cwd=tmp_path)
        assert detached.code == 0, detached.err
        assert "agentmap batch status out.csv" in detached.err  # the progress lines and the last one say how to look
        assert len(stub.jobs) == 1 and stub.billed == 0
        asked = len(stub.requests)

        shown = agentmap_cli("batch", "status", "out.csv", cwd=tmp_path)
        assert shown.code == 0, shown.err
        assert "rows: 0 done (0 succeeded, 0 failed), 6 waiting for provider batch jobs" in shown.out
        assert "batch_1  openai gpt-4o-mini  open: submitted" in shown.out
        assert "calls 6: 0 answered, 0 failed, 6 waiting" in shown.out
        found = _status(tmp_path)
        assert (found["rows_waiting"], found["calls_in_jobs"], found["calls_answered"]) == (6, 6, 0)
        [job] = found["jobs"]
        assert (job["id"], job["provider"], job["model"], job["calls"]) == ("batch_1", "openai", "gpt-4o-mini", 6)
        collect = found["collect"]
        # the command as given, without --detach (options by their long names)
        assert collect == (
            "agentmap batch flow.csv --input rows.csv --output out.csv --id-column id --llm-batch --llm-batch-poll 0.02"
        )
        assert stub.billed == 0 and len(stub.jobs) == 1 and len(stub.requests) == asked  # nothing sent, nothing asked
        assert stub.jobs["batch_1"]["status"] == "in_progress"  # the job was not even polled

        live = _status(tmp_path, "--live")  # one GET per open job: the test server answers the job when polled
        assert live["jobs"][0]["live"] == "completed" and live["jobs"][0]["status"] == "submitted"  # not recorded

        collected = agentmap_cli(*shlex.split(collect)[1:], cwd=tmp_path)
        assert collected.code == 0, collected.err
        assert stub.billed == 6 and len(set(stub.custom_ids)) == len(stub.custom_ids) == 6  # each call billed once
    done = _status(tmp_path)
    assert done["finished"] and (done["rows_done"], done["rows_succeeded"], done["rows_waiting"]) == (6, 6, 0)
    assert done["calls_answered"] == 6 and done["collect"] is None
    assert done["jobs"][0]["state"] == "done" and done["jobs"][0]["status"] == "completed"
    rows = _read(tmp_path / "out.csv")
    assert done["cost"] == pytest.approx(sum(float(r["cost"]) for r in rows), rel=1e-3)  # the cells are rounded
    assert [r["a"] for r in rows] == [f"<T{i}>" for i in range(ROWS)]


def test_status_from_python_counts_failed_rows_and_anthropic_jobs(tmp_path: Path, keys: None) -> None:
    with AnthropicBatchStub() as stub:
        stub.script(*([_echo] * 20))
        stub.plans.append(("fail", 1))
        _setup(tmp_path, stub.base_url, "anthropic:claude-haiku-4-5")
        out = tmp_path / "out.csv"
        result = agentmap.batch(
            str(tmp_path / "flow.csv"),
            tmp_path / "rows.csv",
            output=out,
            id_column="id",
            llm_batch=True,
            llm_batch_poll=0.02,
        )
    assert (result.successes, result.failures) == (5, 1)
    status = batch_status(out)
    assert (status.rows_done, status.rows_succeeded, status.rows_failed) == (6, 5, 1)
    [job] = status.jobs
    assert (job.id, job.provider, job.answered, job.failed, job.waiting) == ("msgbatch_1", "anthropic", 5, 1, 0)
    assert job.counts == {"processing": 0, "succeeded": 5, "errored": 1, "canceled": 0, "expired": 0}
    assert status.command is None  # the Python API notes no command line
    assert status.cost == pytest.approx(result.cost)


def test_status_of_what_no_batch_wrote_is_a_located_error(tmp_path: Path) -> None:
    missing = agentmap_cli("batch", "status", "nothing.csv", cwd=tmp_path)
    assert missing.code == 3 and "error[no-batch]" in missing.err and "nothing.csv" in missing.err

    (tmp_path / "table.csv").write_text("name,score\nada,3\n")
    foreign = agentmap_cli("batch", "status", "table.csv", cwd=tmp_path)
    assert foreign.code == 2 and "error[output-exists]" in foreign.err and "table.csv" in foreign.err

    (tmp_path / "odd.csv.partial").write_text("not a batch\n")
    partial = agentmap_cli("batch", "status", "odd.csv", cwd=tmp_path)
    assert partial.code == 2 and "error[bad-partial]" in partial.err and "odd.csv.partial" in partial.err

    (tmp_path / "out.csv.llm-batch.db").write_bytes(b"this is not a SQLite database" * 40)
    damaged = agentmap_cli("batch", "status", "out.csv", cwd=tmp_path)
    assert damaged.code == 2 and "error[corrupt-checkpoint]" in damaged.err and "out.csv.llm-batch.db" in damaged.err

    named = agentmap_cli("batch", "status", "out.csv", "--checkpoint", "gone.db", cwd=tmp_path)
    assert named.code == 3 and "error[no-batch]" in named.err and "gone.db" in named.err
    for result in (missing, foreign, partial, damaged, named):
        assert "Traceback" not in result.err


def test_the_run_keeps_its_command_line_beside_the_status_command(tmp_path: Path) -> None:
    """`batch` is a group now: the run's options still go before or after FILE, and a stray word is refused."""
    rows = tmp_path / "rows.csv"
    rows.write_text("name\nAda\n")
    hello = Path(__file__).parents[2] / "graphs" / "hello_world.csv"
    ran = agentmap_cli("batch", "-i", str(rows), str(hello), "-o", str(tmp_path / "o.csv"))
    assert ran.code == 0, ran.err
    stray = agentmap_cli("batch", str(hello), "extra", "-i", str(rows), "-o", str(tmp_path / "p.csv"))
    assert stray.code == 2 and "extra" in stray.err and not (tmp_path / "p.csv").exists()
    assert "Usage: agentmap batch status [OPTIONS] OUTPUT" in agentmap_cli("batch", "status", "--help").out


def test_the_status_command_told_never_shows_a_database_password() -> None:
    told = status_command("out.csv", "postgresql://app:s3cret@db:5432/batch")
    assert told == "agentmap batch status out.csv --checkpoint 'postgresql://app:***@db:5432/batch'"


# --- --budget with --llm-batch -----------------------------------------------------------------------------------


def _call_cost(folder: Path) -> float:
    """What one call of the workflow costs at gpt-4o-mini's batch price, at most (its prompt, 20 output tokens)."""
    price = price_of("gpt-4o-mini", DEFAULT_PRICES)
    assert price is not None
    batch = price.in_batch()
    prompt = -(-len(f"{PADDING} topic: t0") // 4) + 4
    return (prompt * batch.input + 20 * batch.output) / 1e6


def test_a_budget_places_only_the_calls_it_allows_then_a_higher_one_runs_the_rest(tmp_path: Path, keys: None) -> None:
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 20))
        _setup(tmp_path, stub.base_url)
        budget = 2.5 * _call_cost(tmp_path)
        stopped = agentmap_cli(*RUN, "--budget", f"{budget:.10f}", "--json", cwd=tmp_path)
        assert stopped.code == 6, stopped.err
        assert "error[budget-exceeded]" in stopped.err and "held by the budget" in stopped.err
        assert "held by --budget" in stopped.err and "to look: agentmap batch status out.csv" in stopped.err
        summary = json.loads(stopped.out)
        ran = summary["succeeded"]
        assert 1 <= ran < ROWS and summary["llm_batch"]["held"] == ROWS - ran
        assert stub.billed == ran  # only the calls placed were sent and billed
        assert summary["cost"] <= budget  # the price paid: the batch price
        assert not (tmp_path / "out.csv").exists()
        found = _status(tmp_path)
        assert (found["rows_done"], found["rows_waiting"], found["calls_unplaced"]) == (ran, ROWS - ran, ROWS - ran)
        assert found["spent"] <= budget

        again = agentmap_cli(*RUN, "--budget", f"{budget:.10f}", cwd=tmp_path)  # the same budget: nothing more
        assert again.code == 6, again.err
        assert stub.billed == ran and len(stub.custom_ids) == ran  # no call placed, none sent again

        rest = agentmap_cli(*RUN, "--budget", f"{20 * budget:.10f}", cwd=tmp_path)
        assert rest.code == 0, rest.err
        assert stub.billed == ROWS and len(set(stub.custom_ids)) == len(stub.custom_ids) == ROWS  # never twice
    rows = _read(tmp_path / "out.csv")
    assert [r["a"] for r in rows] == [f"<T{i}>" for i in range(ROWS)] and all(r["success"] == "true" for r in rows)


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_a_budget_stops_the_next_round_from_python(tmp_path: Path, keys: None, executor: Executor) -> None:
    """Two LLM nodes: a budget for the first round's calls and a little more submits no whole second round."""
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 40))
        _setup(tmp_path, stub.base_url, nodes=2)
        out = tmp_path / "out.csv"
        budget = (ROWS + 0.5) * _call_cost(tmp_path)
        with pytest.raises(BatchOverBudget) as stopped:
            agentmap.batch(
                str(tmp_path / "flow.csv"),
                tmp_path / "rows.csv",
                output=out,
                id_column="id",
                llm_batch=True,
                llm_batch_poll=0.02,
                budget=budget,
                executor=executor,
            )
        result = stopped.value.result
        assert result.llm is not None and result.llm.held > 0 and result.llm.waiting_rows > 0
        first_round = len(stub.jobs["batch_1"]["requests"])
        assert first_round == ROWS and stub.billed < 2 * ROWS
        assert batch_status(out).spent <= budget
        done = agentmap.batch(
            str(tmp_path / "flow.csv"),
            tmp_path / "rows.csv",
            output=out,
            id_column="id",
            llm_batch=True,
            llm_batch_poll=0.02,
            budget=10 * budget,
            executor=executor,
        )
        assert done.successes == ROWS - result.successes
        assert stub.billed == 2 * ROWS and len(set(stub.custom_ids)) == 2 * ROWS


def test_a_call_queued_for_a_job_is_checked_at_the_batch_price(tmp_path: Path, keys: None) -> None:
    """A budget below the prompt's cost at the full price, above its cost at the batch price: the call is queued,
    placed and answered (before, the row's own check priced it at the full price and the batch ran no row)."""
    price = price_of("gpt-4o-mini", DEFAULT_PRICES)
    assert price is not None
    full = -(-len(f"{PADDING} topic: t0") // 4) * price.input / 1e6
    budget = 0.95 * full
    assert _call_cost(tmp_path) < budget  # the estimate at the batch price, output included, fits
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 4))
        _setup(tmp_path, stub.base_url)
        out = tmp_path / "out.csv"
        result = agentmap.batch(
            str(tmp_path / "flow.csv"),
            [{"id": "r0", "topic": "t0"}],
            output=out,
            id_column="id",
            llm_batch=True,
            llm_batch_poll=0.02,
            budget=budget,
        )
        assert result.successes == 1 and stub.billed == 1
    assert result.cost is not None and result.cost <= budget


def test_status_reads_a_postgresql_store(tmp_path: Path, keys: None, postgres_url: str) -> None:
    with OpenAIBatchStub() as stub:
        stub.script(*([_echo] * 20))
        _setup(tmp_path, stub.base_url)
        detached = agentmap_cli(*RUN, "--checkpoint", postgres_url, "--detach", cwd=tmp_path)
        assert detached.code == 0, detached.err
        assert "to look: agentmap batch status out.csv --checkpoint" in detached.err
        found = _status(tmp_path, "--checkpoint", postgres_url)
        assert (found["rows_waiting"], found["calls_in_jobs"], found["jobs"][0]["id"]) == (ROWS, ROWS, "batch_1")
        assert found["store"] == redacted(postgres_url) and "--checkpoint" in found["collect"]
        assert stub.billed == 0 and stub.jobs["batch_1"]["status"] == "in_progress"  # nothing sent, not polled
        collected = agentmap_cli(*shlex.split(found["collect"])[1:], cwd=tmp_path)
        assert collected.code == 0, collected.err
        assert stub.billed == ROWS
    assert _status(tmp_path, "--checkpoint", postgres_url)["rows_succeeded"] == ROWS
