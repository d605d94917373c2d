"""Tokens and cost through the real command against a local OpenAI-compatible server: per node and per run in
`--json` and the summary, cached tokens, an unpriced model (tokens, no cost, one warning), a price set in
agentmap.yaml, `threads show --calls`, and `--budget` stopping a run that `resume --budget` continues."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import forked
import pytest
from openai_stub import OpenAIStub, text

from agentmap.agents.costs import DEFAULT_PRICES, Usage, price_of, price_table

sys.path[:0] = [str(Path(__file__).parents[1] / "cli"), str(Path(__file__).parents[1] / "server")]
from cli_helpers import agentmap_tty  # noqa: E402
from components import clean_env  # noqa: E402
from server_helpers import serving  # noqa: E402

HEADER = ["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Success_Next"]


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def _setup(
    folder: Path,
    stub: OpenAIStub,
    model: str = "gpt-4o-mini",
    config: str | None = None,
    *,
    extra: dict[str, Any] | None = None,
    tell: str = "Say it again.",
) -> dict[str, str]:
    """Two `openai` nodes on `model`, Ask then Tell (its Prompt `tell`), each with `extra` in its Context."""
    context = json.dumps({"model": model, "base_url": stub.base_url, "max_retries": 0, **(extra or {})})
    with (folder / "two.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerow(["g", "Ask", "openai", "Answer briefly.", context, "q", "a", "Tell"])
        writer.writerow(["g", "Tell", "openai", tell, context, "a", "b", ""])
    if config is not None:
        (folder / "agentmap.yaml").write_text(config)
    env = clean_env()
    return env | {"OPENAI_API_KEY": "sk-stub"}


def _run(folder: Path, env: dict[str, str], *extra: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = forked.run("run", "two.csv", "--state", '{"q": "hi"}', "--json", *extra, cwd=folder, env=env)
    return code, (json.loads(out) if out.strip() else {}), err


def _metadata(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e.get("metadata", {}) for e in document["summary"]}


def test_tokens_and_cost_per_node_and_per_run_in_json(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one", usage=(1000, 200, 400)), text("two", usage=(2000, 100)))
    code, document, err = _run(tmp_path, _setup(tmp_path, stub))
    assert code == 0, err
    nodes = _metadata(document)
    # gpt-4o-mini: $0.15 input, $0.60 output, $0.075 cached input per million tokens (the default table)
    ask = nodes["Ask"]
    assert (ask["input_tokens"], ask["output_tokens"], ask["cached_tokens"]) == (1000, 200, 400)
    assert ask["cost"] == pytest.approx((600 * 0.15 + 400 * 0.075 + 200 * 0.60) / 1e6)
    assert nodes["Tell"]["cost"] == pytest.approx(0.00036)
    assert document["usage"] == {
        **{"input_tokens": 3000, "output_tokens": 300, "cached_tokens": 400, "cache_write_tokens": 0},
        **{"total_tokens": 3300, "model_calls": 2, "replayed_calls": 0, "cache_hits": 0},
        "cost": pytest.approx(0.0006),
    }
    assert "has no price" not in err


def test_the_summary_shows_tokens_and_cost(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one", usage=(1000, 200, 400)), text("two", usage=(2000, 100)))
    env = _setup(tmp_path, stub)
    result = agentmap_tty("run", "two.csv", "--state", '{"q": "hi"}', cwd=tmp_path, env=env)
    assert result.code == 0, result.out
    assert "1000/200 (400 cached)" in result.out
    assert "$0.00024" in result.out
    assert "model calls: 2 · tokens: 3000 in (400 cached), 300 out · cost: $0.0006" in result.out


def test_an_unpriced_model_counts_tokens_without_cost_and_says_so_once(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one", usage=(100, 10)), text("two", usage=(100, 10)))
    code, document, err = _run(tmp_path, _setup(tmp_path, stub, model="acme-1"))
    assert code == 0, err
    assert "cost" not in _metadata(document)["Ask"]
    usage = document["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["unpriced_models"]) == (200, 20, ["acme-1"])
    assert "cost" not in usage
    assert err.count("model 'acme-1' has no price") == 1, err


def test_a_price_in_agentmap_yaml_sets_or_overrides_the_table(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one", usage=(1000, 100, 500)), text("two", usage=(1000, 100)))
    config = "llm:\n  prices:\n    acme-1: {input: 2.0, output: 10.0, cached_input: 1.0}\n"
    code, document, err = _run(tmp_path, _setup(tmp_path, stub, model="acme-1", config=config))
    assert code == 0, err
    assert _metadata(document)["Ask"]["cost"] == pytest.approx((500 * 2 + 500 * 1 + 100 * 10) / 1e6)
    assert document["usage"]["cost"] == pytest.approx((2500 + 3000) / 1e6)
    assert "has no price" not in err


def test_a_call_billed_in_a_batch_is_priced_at_the_providers_batch_prices() -> None:
    usage = Usage(input_tokens=3000, output_tokens=100, cached_tokens=1000, cache_write_tokens=1000)
    sonnet = price_of("claude-sonnet-4-5", DEFAULT_PRICES)
    assert sonnet is not None
    # Anthropic's Message Batches API: half of every price, cache reads and writes included
    assert usage.cost(sonnet.in_batch()) == pytest.approx((1000 * 1.5 + 1000 * 0.15 + 1000 * 1.875 + 100 * 7.5) / 1e6)
    assert usage.cost(sonnet.in_batch()) == pytest.approx(usage.cost(sonnet) / 2)
    mini = price_of("gpt-4o-mini-2024-07-18", DEFAULT_PRICES)
    assert mini is not None and (mini.batch_input, mini.batch_output) == (0.075, 0.30)
    table = price_table({"acme-1": {"input": 2.0, "output": 4.0, "batch_input": 1.0, "batch_output": 2.0}})
    assert Usage(1000, 1000).cost(table["acme-1"].in_batch()) == pytest.approx(3000 / 1e6)
    unbatched = price_table({"acme-2": {"input": 2.0, "output": 4.0}})["acme-2"]
    assert unbatched.in_batch() == unbatched  # no batch price known: the price itself


def test_a_bad_price_is_a_validation_error(tmp_path: Path, stub: OpenAIStub) -> None:
    env = _setup(tmp_path, stub, config="llm:\n  prices:\n    acme-1: {input: cheap}\n")
    code, out, err = forked.run("validate", "two.csv", cwd=tmp_path, env=env)
    assert code == 4, out + err
    assert "llm.prices.acme-1 is not a price" in out + err
    env = _setup(tmp_path, stub, config="llm:\n  prices:\n    acme-1: {input: 1, output: 2, batch: 0.5}\n")
    code, out, err = forked.run("validate", "two.csv", cwd=tmp_path, env=env)
    assert code == 4, out + err
    assert "llm.prices.acme-1 is not a price" in out + err and "batch_input" in out + err


def test_threads_show_calls_lists_tokens_and_cost(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one", usage=(1000, 200, 400)), text("two", usage=(2000, 100)))
    env = _setup(tmp_path, stub)
    code, _, err = _run(tmp_path, env, "--thread", "t")
    assert code == 0, err
    code, out, err = forked.run("threads", "show", "t", "--calls", "--json", cwd=tmp_path, env=env)
    assert code == 0, err
    calls = json.loads(out)["calls"]
    assert [(c["node"], c["input_tokens"], c["output_tokens"], c["cached_tokens"]) for c in calls] == [
        ("Ask", 1000, 200, 400),
        ("Tell", 2000, 100, 0),
    ]
    assert [c["cost"] for c in calls] == [pytest.approx(0.00024), pytest.approx(0.00036)]
    shown = agentmap_tty("threads", "show", "t", "--calls", cwd=tmp_path, env=env)
    assert "1000/200 (400 cached)" in shown.out and "$0.00036" in shown.out, shown.out


def test_the_budget_stops_before_the_call_that_would_pass_it_and_resume_continues(
    tmp_path: Path, stub: OpenAIStub
) -> None:
    config = "llm:\n  prices:\n    acme-1: {input: 1000.0, output: 1000.0}\n"  # $0.001 a token
    env = _setup(tmp_path, stub, model="acme-1", config=config)
    stub.script(text("one", usage=(2000, 0)), text("two", usage=(10, 0)))  # Ask costs $2.00
    code, _, err = _run(tmp_path, env, "--thread", "t", "--budget", "1.5")
    assert code == 6, err
    assert "error[budget-exceeded]" in err and "'Tell'" in err and "$2.0000 of its $1.5000 budget" in err, err
    assert "agentmap resume t --budget MORE" in err, err
    assert len(stub.requests) == 1  # Tell's call was never sent
    code, out, err = forked.run("resume", "t", "--budget", "1.9", "--json", cwd=tmp_path, env=env)
    assert code == 6, err  # the thread's $2.00 counts against a resumed run's budget too
    assert len(stub.requests) == 1
    code, out, err = forked.run("resume", "t", "--budget", "5", "--json", cwd=tmp_path, env=env)
    assert code == 0, err
    assert json.loads(out)["state"]["b"] == "two"
    assert len(stub.requests) == 2  # Ask was not asked again


def test_a_node_budget_in_context_stops_its_own_calls(tmp_path: Path, stub: OpenAIStub) -> None:
    context = json.dumps({"model": "gpt-4o", "base_url": stub.base_url, "budget": 0.000001})
    with (tmp_path / "one.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerow(["g", "Ask", "openai", "Answer with a long reply, please. " * 4, context, "q", "a", ""])
    env = clean_env() | {"OPENAI_API_KEY": "sk-stub"}
    code, out, err = forked.run("run", "one.csv", "--state", '{"q": "hi"}', "--json", cwd=tmp_path, env=env)
    assert code == 6, out + err
    assert "node 'Ask' stopped before calling 'gpt-4o'" in err and "Context budget" in err, err
    assert stub.requests == []


def test_batch_rows_carry_tokens_and_cost_and_the_batch_totals_them(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(*[text("ok", usage=(100, 10, 40))] * 4)  # 40 of the 100 input tokens read from the cache
    env = _setup(tmp_path, stub)
    (tmp_path / "in.csv").write_text("q\nhi\nho\n")
    args = ("batch", "two.csv", "--input", "in.csv", "--output", "out.csv", "--json")
    code, out, err = forked.run(*args, cwd=tmp_path, env=env)
    assert code == 0, err
    with (tmp_path / "out.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    per_row = 2 * (60 * 0.15 + 40 * 0.075 + 10 * 0.60) / 1e6  # two gpt-4o-mini calls a row
    assert [(r["tokens_in"], r["tokens_out"], r["tokens_cached"]) for r in rows] == [("200", "20", "80")] * 2
    assert [float(r["cost"]) for r in rows] == [pytest.approx(per_row)] * 2
    summary = json.loads(out)
    assert (summary["tokens_in"], summary["tokens_out"], summary["tokens_cached"]) == (400, 40, 160)
    assert summary["cost"] == pytest.approx(2 * per_row)
    assert "batch: tokens 400 in (160 cached), 40 out, cost $0.000072" in err, err


def test_spans_carry_tokens_and_cost(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one", usage=(1000, 200, 400)), text("two", usage=(2000, 100)))
    env = _setup(tmp_path, stub)
    code, _, err = _run(tmp_path, env, "--trace", "file:spans.jsonl")
    assert code == 0, err
    spans = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text().splitlines()]
    by_name = {s["name"]: s["attributes"] for s in spans}
    run, ask = by_name["agentmap.run g"], by_name["agentmap.node Ask"]
    assert (run["gen_ai.usage.input_tokens"], run["gen_ai.usage.output_tokens"]) == (3000, 300)
    assert run["agentmap.cost_usd"] == pytest.approx(0.0006)
    assert (ask["gen_ai.usage.input_tokens"], ask["gen_ai.usage.cache_read.input_tokens"]) == (1000, 400)
    assert ask["agentmap.cost_usd"] == pytest.approx(0.00024)
    chat = [s["attributes"] for s in spans if s["name"].startswith("chat ")]
    assert [c["gen_ai.usage.input_tokens"] for c in chat] == [1000, 2000]
    assert chat[0]["gen_ai.usage.cache_read.input_tokens"] == 400
    assert [c["agentmap.cost_usd"] for c in chat] == [pytest.approx(0.00024), pytest.approx(0.00036)]


def test_the_servers_run_metadata_carries_the_usage(
    tmp_path: Path, stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk = pytest.importorskip("langgraph_sdk")
    stub.script(text("one", usage=(1000, 200, 400)), text("two", usage=(2000, 100)))
    _setup(tmp_path, stub)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    served = serving(tmp_path / "two.csv", checkpoint=str(tmp_path / "runs.db"))
    with served as url, sdk.get_sync_client(url=url, api_key=None) as client:
        thread = client.threads.create()["thread_id"]
        run = client.runs.create(thread, "g", input={"q": "hi"})
        client.runs.join(thread, run["run_id"])
        usage = client.runs.get(thread, run["run_id"])["metadata"]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["cached_tokens"]) == (3000, 300, 400)
    assert usage["cost"] == pytest.approx(0.0006)


def test_the_batch_budget_stops_the_batch_and_a_higher_one_runs_the_rest(tmp_path: Path, stub: OpenAIStub) -> None:
    config = "llm:\n  prices:\n    acme-1: {input: 1000.0, output: 1000.0}\n"  # $0.001 a token
    env = _setup(tmp_path, stub, model="acme-1", config=config)
    stub.script(*[text("ok", usage=(500, 0))] * 9)  # $0.50 a call, two calls a row
    (tmp_path / "in.csv").write_text("q\na\nb\nc\nd\n")
    args = ("batch", "two.csv", "--input", "in.csv", "--output", "out.csv", "--concurrency", "1", "--json")
    code, out, err = forked.run(*args, "--budget", "1.3", cwd=tmp_path, env=env)
    assert code == 6, err
    assert "error[budget-exceeded]" in err and "stopped at its $1.3000 budget after spending $1.5000" in err, err
    assert json.loads(out)["succeeded"] == 1 and "Traceback" not in err
    assert len(stub.requests) == 3  # row 2's second call was never sent
    assert not (tmp_path / "out.csv").exists() and (tmp_path / "out.csv.partial").exists()
    code, out, err = forked.run(*args, "--budget", "10", cwd=tmp_path, env=env)
    assert code == 0, err
    assert json.loads(out)["succeeded"] == 3  # rows b, c and d: b was not recorded as done
    with (tmp_path / "out.csv").open(newline="") as handle:
        assert [r["b"] for r in csv.DictReader(handle)] == ["ok"] * 4


def test_llm_budget_in_agentmap_yaml_is_the_default_budget(tmp_path: Path, stub: OpenAIStub) -> None:
    config = "llm:\n  budget: 1.5\n  prices:\n    acme-1: {input: 1000.0, output: 1000.0}\n"
    env = _setup(tmp_path, stub, model="acme-1", config=config)
    stub.script(text("one", usage=(2000, 0)), text("two", usage=(10, 0)))
    code, _, err = _run(tmp_path, env)
    assert code == 6, err
    assert "$2.0000 of its $1.5000 budget" in err and "run again with a higher --budget" in err, err
    assert len(stub.requests) == 1


def test_a_budget_that_is_not_a_positive_amount_is_a_usage_error(tmp_path: Path, stub: OpenAIStub) -> None:
    env = _setup(tmp_path, stub)
    code, _, err = _run(tmp_path, env, "--budget", "0")
    assert code == 2, err
    assert "the budget must be a positive number of US dollars, got 0.0" in err, err
    assert stub.requests == []
