"""`anthropic` nodes against the local Anthropic-shaped server, through the real `ChatAnthropic`: the tokens
(cache reads included) and cost a call reports recorded per node and per run, and the reply streamed to
`stream_mode="messages"` as the server sends it."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import components
import pytest
from anthropic_stub import AnthropicStub
from components import clean_env
from openai_stub import streamed, text

import agentmap

sys.path[:0] = [str(Path(__file__).parents[1] / "cli")]
from cli_helpers import agentmap as command  # noqa: E402

HEADER = ["GraphName", "Node", "AgentType", "Input_Fields", "Output_Field", "Prompt", "Context"]


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicStub]:
    found = importlib.util.find_spec("langchain_anthropic") is not None
    components.require(found, 'langchain-anthropic is not installed (pip install -e ".[dev]")')
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-stub")
    with AnthropicStub() as server:
        yield server


def _workflow(folder: Path, stub: AnthropicStub) -> Path:
    context = json.dumps({"model": "claude-sonnet-4-6", "base_url": stub.base_url, "max_retries": 0})
    path = folder / "ask.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerow(["g", "Ask", "anthropic", "question", "answer", "Answer briefly.", context])
    return path


def _run(folder: Path, state: str) -> tuple[int, str, str]:
    """`agentmap run ask.csv --state STATE --json` in `folder`: exit code, stdout, stderr."""
    result = command("run", "ask.csv", "--state", state, "--json", cwd=folder, env=clean_env())
    return result.code, result.out, result.err


def test_tokens_cache_reads_and_cost_are_recorded(tmp_path: Path, stub: AnthropicStub) -> None:
    stub.script(text("Paris.", usage=(1400, 200, 400)))  # 1000 new input tokens, 400 read from the cache
    _workflow(tmp_path, stub)
    code, out, err = _run(tmp_path, '{"question": "capital?"}')
    assert code == 0, err
    document = json.loads(out)
    assert document["state"]["answer"] == "Paris."
    assert stub.requests[0]["model"] == "claude-sonnet-4-6"
    # claude-sonnet-4: $3 input, $15 output, $0.30 cached input per million tokens (the default table)
    cost = pytest.approx((1000 * 3.0 + 400 * 0.30 + 200 * 15.0) / 1e6)
    assert document["usage"] == {
        **{"input_tokens": 1400, "output_tokens": 200, "cached_tokens": 400, "cache_write_tokens": 0},
        **{"total_tokens": 1600, "model_calls": 1, "replayed_calls": 0, "cache_hits": 0, "cost": cost},
    }
    ask = document["summary"][0]["metadata"]
    assert (ask["input_tokens"], ask["cached_tokens"], ask["cost"]) == (1400, 400, cost)
    assert "has no price" not in err


def test_cache_writes_are_counted_and_priced_at_the_cache_write_price(tmp_path: Path, stub: AnthropicStub) -> None:
    stub.script(text("Paris.", usage=(3000, 100, 0, 2000)))  # 1000 new input tokens, 2000 written to the cache
    _workflow(tmp_path, stub)
    code, out, err = _run(tmp_path, '{"question": "capital?"}')
    assert code == 0, err
    usage = json.loads(out)["usage"]
    assert (usage["input_tokens"], usage["cached_tokens"], usage["cache_write_tokens"]) == (3000, 0, 2000)
    # claude-sonnet-4: $3 input, $3.75 for 5-minute cache writes (1.25x), $15 output per million tokens
    assert usage["cost"] == pytest.approx((1000 * 3.0 + 2000 * 3.75 + 100 * 15.0) / 1e6)


def test_a_cache_write_price_in_agentmap_yaml_prices_the_writes(tmp_path: Path, stub: AnthropicStub) -> None:
    stub.script(text("Paris.", usage=(3000, 100, 0, 2000)))
    _workflow(tmp_path, stub)
    prices = "{input: 1.0, output: 2.0, cached_input: 0.1, cache_write: 5.0}"
    (tmp_path / "agentmap.yaml").write_text(f"llm:\n  prices:\n    claude-sonnet-4-6: {prices}\n")
    code, out, err = _run(tmp_path, '{"question": "capital?"}')
    assert code == 0, err
    assert json.loads(out)["usage"]["cost"] == pytest.approx((1000 * 1.0 + 2000 * 5.0 + 100 * 2.0) / 1e6)


def test_the_reply_streams_as_the_server_sends_it(tmp_path: Path, stub: AnthropicStub) -> None:
    gate = threading.Event()
    stub.script(streamed("Par", "is is ", "the capital.", gate=gate))
    app = agentmap.compile(_workflow(tmp_path, stub))
    chunks = []
    for message, meta in app.stream({"question": "capital of France?"}, stream_mode="messages"):
        chunks.append((message, meta))
        if message.text == "Par":  # shown before the server sent the rest
            assert not gate.is_set()
            gate.set()
    assert [type(m).__name__ for m, _ in chunks] == ["AIMessageChunk"] * len(chunks)
    assert [m.text for m, _ in chunks if m.text] == ["Par", "is is ", "the capital."]
    assert {meta["langgraph_node"] for _, meta in chunks} == {"Ask"}
    assert stub.requests[0]["stream"] is True
    usage = [m.usage_metadata for m, _ in chunks if m.usage_metadata]
    assert (sum(u["input_tokens"] for u in usage), sum(u["output_tokens"] for u in usage)) == (10, 5), usage
