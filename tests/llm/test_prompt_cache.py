"""The provider's prompt cache through the real command against the local test servers: an LLM node's static
system prompt marked `cache_control` for Anthropic (a cache write on the first call, reads after), put first for
OpenAI (which caches a long common prefix by itself), cached tokens in the batch output's `tokens_cached` and the
summaries, costs and `--budget` at the prices paid, and `prompt_cache: false` sending no marks."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import components
import pytest
from anthropic_stub import AnthropicStub
from openai_stub import OpenAIStub, counted, tokens

import agentmap
from agentmap.agents.costs import DEFAULT_PRICES, Usage, price_of

sys.path[:0] = [str(Path(__file__).parents[1] / "cli")]
from cli_helpers import agentmap as command  # noqa: E402
from cli_helpers import agentmap_tty  # noqa: E402
from components import clean_env  # noqa: E402

HEADER = ["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Tool_Source"]
STATIC = " ".join(f"Rule {n}: answer in the customer's language, politely and briefly." for n in range(125))
PROMPT = STATIC + " The topic is {topic}."
"""A system prompt of about 2,000 tokens that every call sends alike, then a placeholder."""
TOOLS = '''
def lookup(order: str) -> str:
    """Look an order up."""
    return "shipped"
'''


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicStub]:
    found = importlib.util.find_spec("langchain_anthropic") is not None
    components.require(found, 'langchain-anthropic is not installed (pip install -e ".[dev]")')
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-stub")
    with AnthropicStub() as server:
        yield server


@pytest.fixture
def openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    with OpenAIStub() as server:
        yield server


def _setup(
    folder: Path,
    base_url: str,
    model: str = "claude-sonnet-4-6",
    *,
    prompt: str = PROMPT,
    extra: dict[str, Any] | None = None,
    config: str | None = None,
    tools: bool = False,
    rows: int = 2,
) -> dict[str, str]:
    """One `llm` node (Prompt `prompt`, Context `extra`) answering `question` about `topic`, and `rows` input rows."""
    context = json.dumps({"model": model, "base_url": base_url, "max_retries": 0, **(extra or {})})
    with (folder / "ask.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerow(["g", "Ask", "llm", prompt, context, "topic|question", "answer", "tools.py" if tools else ""])
    (folder / "tools.py").write_text(TOOLS)
    lines = ["topic,question", *(f"orders,Where is order {n}?" for n in range(1, rows + 1))]
    (folder / "in.csv").write_text("\n".join(lines) + "\n")
    if config is not None:
        (folder / "agentmap.yaml").write_text(config)
    return clean_env()


def _batch(folder: Path, env: dict[str, str], *extra: str) -> tuple[int, dict[str, Any], str]:
    args = ("batch", "ask.csv", "--input", "in.csv", "--output", "out.csv", "--concurrency", "1", "--json", *extra)
    result = command(*args, cwd=folder, env=env)
    return result.code, (json.loads(result.out) if result.out.strip() else {}), result.err


def _rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "out.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def _system(request: dict[str, Any]) -> list[dict[str, Any]]:
    system = request["system"]
    return [{"type": "text", "text": system}] if isinstance(system, str) else system


def test_anthropic_caches_the_static_system_prompt_and_prices_writes_and_reads(
    tmp_path: Path, anthropic: AnthropicStub
) -> None:
    anthropic.script(counted("It shipped."), counted("It shipped."))
    code, summary, err = _batch(tmp_path, _setup(tmp_path, anthropic.base_url))
    assert code == 0, err
    first, second = (_system(r) for r in anthropic.requests)
    static = STATIC + " The topic is "
    for system in (first, second):
        assert system == [
            {"type": "text", "text": static, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "orders."},
        ]
    cached = tokens(static)
    total = cached + tokens("orders.") + tokens("user: Where is order 1?")
    price = price_of("claude-sonnet-4-6", DEFAULT_PRICES)
    assert price is not None and (price.cache_write, price.cached_input) == (3.75, 0.30)  # 1.25x and 0.1x of $3
    written = Usage(total, tokens("It shipped."), cache_write_tokens=cached).cost(price)
    read = Usage(total, tokens("It shipped."), cached_tokens=cached).cost(price)
    rows = _rows(tmp_path)
    assert [(r["tokens_in"], r["tokens_cached"]) for r in rows] == [(str(total), "0"), (str(total), str(cached))]
    assert [float(r["cost"]) for r in rows] == [pytest.approx(written), pytest.approx(read)]
    assert read < 0.2 * written
    assert (summary["tokens_in"], summary["tokens_cached"]) == (2 * total, cached)
    assert summary["cost"] == pytest.approx(written + read)
    assert f"batch: tokens {2 * total} in ({cached} cached), " in err, err


def test_prompt_cache_false_sends_no_marks_and_pays_the_input_price(tmp_path: Path, anthropic: AnthropicStub) -> None:
    anthropic.script(counted("It shipped."), counted("It shipped."))
    env = _setup(tmp_path, anthropic.base_url, extra={"prompt_cache": False})
    code, summary, err = _batch(tmp_path, env)
    assert code == 0, err
    assert [r["system"] for r in anthropic.requests] == [STATIC + " The topic is orders."] * 2
    assert "cache_control" not in json.dumps(anthropic.requests)
    assert [r["tokens_cached"] for r in _rows(tmp_path)] == ["0", "0"]
    total = summary["tokens_in"] // 2
    price = price_of("claude-sonnet-4-6", DEFAULT_PRICES)
    assert price is not None
    assert summary["cost"] == pytest.approx(2 * Usage(total, tokens("It shipped.")).cost(price))


def test_llm_prompt_cache_false_in_agentmap_yaml_turns_it_off_for_every_node(
    tmp_path: Path, anthropic: AnthropicStub
) -> None:
    anthropic.script(counted("It shipped."))
    env = _setup(tmp_path, anthropic.base_url, config="llm:\n  prompt_cache: false\n", rows=1)
    code, _, err = _batch(tmp_path, env)
    assert code == 0, err
    assert "cache_control" not in json.dumps(anthropic.requests)


def test_a_prompt_cache_that_is_not_true_or_false_is_a_validation_error(
    tmp_path: Path, anthropic: AnthropicStub
) -> None:
    env = _setup(tmp_path, anthropic.base_url, extra={"prompt_cache": "no"})
    result = command("validate", "ask.csv", cwd=tmp_path, env=env)
    assert result.code == 4, result.text
    assert "Context prompt_cache must be true or false" in result.text, result.text


def test_the_run_summary_shows_cache_reads_and_writes(tmp_path: Path, anthropic: AnthropicStub) -> None:
    anthropic.script(counted("It shipped."), counted("It shipped."))
    env = _setup(tmp_path, anthropic.base_url)
    cached = tokens(STATIC + " The topic is ")
    state = '{"topic": "orders", "question": "Where is order 1?"}'
    first = agentmap_tty("run", "ask.csv", "--state", state, cwd=tmp_path, env=env)
    assert first.code == 0, first.out
    assert f"({cached} written to the cache)" in first.out, first.out
    second = agentmap_tty("run", "ask.csv", "--state", state, cwd=tmp_path, env=env)
    assert second.code == 0, second.out
    assert f"({cached} cached)" in second.out, second.out
    assert [r["stream"] for r in anthropic.requests] == [True, True]  # in a terminal the reply streams


def test_the_budget_counts_the_price_paid_for_cached_input(tmp_path: Path, anthropic: AnthropicStub) -> None:
    # claude-sonnet-4-6 rows of ~2,120 input tokens: $0.0064 each uncached; with the cache the first writes
    # (~$0.0080) and the next read (~$0.0007), so four rows cost ~$0.0101 and a $0.012 budget runs them all
    anthropic.script(*[counted("ok")] * 4)
    code, summary, err = _batch(tmp_path, _setup(tmp_path, anthropic.base_url, rows=4), "--budget", "0.012")
    assert code == 0, err
    assert summary["succeeded"] == 4 and summary["cost"] < 0.012
    assert len(anthropic.requests) == 4


def test_without_the_cache_the_same_budget_stops_the_batch(tmp_path: Path, anthropic: AnthropicStub) -> None:
    anthropic.script(*[counted("ok")] * 4)
    env = _setup(tmp_path, anthropic.base_url, extra={"prompt_cache": False}, rows=4)
    code, _, err = _batch(tmp_path, env, "--budget", "0.012")
    assert code == 6, err
    assert "error[budget-exceeded]" in err, err
    assert len(anthropic.requests) == 1  # the second row's call would pass the budget at the input price


def test_the_budget_counts_the_first_calls_cache_write_before_it_is_made(
    tmp_path: Path, anthropic: AnthropicStub
) -> None:
    # the prompt alone is ~$0.0064 at the input price, ~$0.0078 with its ~2,090-token static part written at $3.75
    env = _setup(tmp_path, anthropic.base_url)
    state = '{"topic": "orders", "question": "Where is order 1?"}'
    result = command("run", "ask.csv", "--state", state, "--budget", "0.007", cwd=tmp_path, env=env)
    assert result.code == 6, result.err
    assert "error[budget-exceeded]" in result.err and "would cost about $0.0078" in result.err, result.err
    assert anthropic.requests == []


def test_a_node_with_tools_and_no_static_prompt_marks_its_last_tool(tmp_path: Path, anthropic: AnthropicStub) -> None:
    anthropic.script(counted("It shipped."))
    env = _setup(tmp_path, anthropic.base_url, prompt="{topic}", tools=True, rows=1)
    code, _, err = _batch(tmp_path, env)
    assert code == 0, err
    (request,) = anthropic.requests
    assert [t["name"] for t in request["tools"]] == ["lookup"]
    assert request["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps([request.get("system"), request["messages"]])


def test_a_node_with_tools_and_a_static_prompt_marks_the_prompt(tmp_path: Path, anthropic: AnthropicStub) -> None:
    anthropic.script(counted("It shipped."), counted("It shipped."))
    code, _, err = _batch(tmp_path, _setup(tmp_path, anthropic.base_url, tools=True))
    assert code == 0, err
    first, _ = anthropic.requests
    assert _system(first)[0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(first["tools"])  # the prompt's mark caches the tools before it
    prefix = tokens(json.dumps(first["tools"][0], sort_keys=True)) + tokens(STATIC + " The topic is ")
    assert [r["tokens_cached"] for r in _rows(tmp_path)] == ["0", str(prefix)]


def test_openai_gets_the_static_part_first_and_its_cached_prefix_is_priced(tmp_path: Path, openai: OpenAIStub) -> None:
    openai.script(counted("It shipped."), counted("It shipped."))
    code, summary, err = _batch(tmp_path, _setup(tmp_path, openai.base_url, model="gpt-4o-mini"))
    assert code == 0, err
    for request in openai.requests:
        assert request["messages"][0] == {"role": "system", "content": STATIC + " The topic is orders."}
        assert request["messages"][1]["role"] == "user"
    assert "cache_control" not in json.dumps(openai.requests)
    # OpenAI caches the longest prefix seen before, from 1,024 tokens up in steps of 128
    shared = len(f"system: {STATIC} The topic is orders.\nuser: Where is order ") // 4
    cached = 1024 + (shared - 1024) // 128 * 128
    rows = _rows(tmp_path)
    assert [r["tokens_cached"] for r in rows] == ["0", str(cached)]
    total = int(rows[1]["tokens_in"])
    price = price_of("gpt-4o-mini", DEFAULT_PRICES)
    assert price is not None and price.cached_input == 0.075  # half the input price
    assert float(rows[1]["cost"]) == pytest.approx(Usage(total, tokens("It shipped."), cached).cost(price))
    assert summary["tokens_cached"] == cached


def test_an_assistants_constitution_is_cached(
    tmp_path: Path, anthropic: AnthropicStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTMAP_DECISION_LOG", str(tmp_path / "decisions.db"))
    anthropic.script(counted("Hello."), counted("Hello again."))
    context = json.dumps({"model": "anthropic:claude-sonnet-4-6", "base_url": anthropic.base_url, "max_retries": 0})
    with (tmp_path / "chat.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerow(
            [
                "Chat",
                "Assistant",
                "assistant",
                STATIC,
                context,
                "message|user_id",
                "response|pending_confirmation",
                "tools.py",
            ]
        )
    (tmp_path / "tools.py").write_text(TOOLS)
    app = agentmap.compile(tmp_path / "chat.csv")
    first = app.invoke({"message": "hi", "user_id": "ada"})
    second = app.invoke({"message": "hi again", "user_id": "ada"})
    assert (first.state["response"], second.state["response"]) == ("Hello.", "Hello again.")
    for request in anthropic.requests:
        assert _system(request) == [{"type": "text", "text": STATIC, "cache_control": {"type": "ephemeral"}}]
    prefix = tokens(json.dumps(anthropic.requests[0]["tools"][0], sort_keys=True)) + tokens(STATIC)
    assert (first.usage["cache_write_tokens"], first.usage["cached_tokens"]) == (prefix, 0)
    assert (second.usage["cache_write_tokens"], second.usage["cached_tokens"]) == (0, prefix)
