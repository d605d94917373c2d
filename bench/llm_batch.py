"""What a batch of LLM rows costs: the figures of issue 42 ("Half the price of a big batch").

1. Prompt caching in a synchronous batch (target <= 0.7x): the cost of a batch whose one `llm` node has a
   2,000-token static system prompt (8,000 characters, then "The topic is {topic}."), with the static part
   cached, against the same batch with Context `prompt_cache: false`. The model is
   `anthropic:claude-sonnet-4-6` served by the local Anthropic-shaped test server (tests/llm/anthropic_stub.py),
   which counts a token per 4 characters and caches as Anthropic's API does: a write on the first use of a
   prefix marked `cache_control` of at least 1,024 tokens, reads after. The cost is AgentMap's own (the rows'
   `cost`, summed by the batch) at the default price table: $3 input, $3.75 cache writes, $0.30 cache reads,
   $15 output per million tokens. Each round runs both batches on a fresh server (an empty cache), taking
   turns on which goes first; the figures are the same every round (tokens, not time), and the round's seconds
   are printed beside them.

Run: `python bench/llm_batch.py [--rows N] [--concurrency N] [--repeat N]`.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "llm"))

import agentmap

MODEL = "claude-sonnet-4-6"
SENTENCE = "Answer as the support desk of a shop that sells tea: politely, briefly, in the customer's language. "
STATIC = (SENTENCE * (8000 // len(SENTENCE) + 1))[:8000]
"""The static system prompt: 8,000 characters, 2,000 tokens as the test server counts them."""
ANSWER = "Your order left our warehouse this morning and should reach you within three working days. " * 2
"""A reply of about 45 tokens."""


def write_batch(folder: Path, base_url: str, rows: int, *, cached: bool) -> tuple[Path, Path]:
    """The workflow (one `llm` node with the static prompt) and its `rows` input rows."""
    context: dict[str, Any] = {"model": MODEL, "base_url": base_url, "max_retries": 0}
    if not cached:
        context["prompt_cache"] = False
    flow = folder / ("cached.csv" if cached else "uncached.csv")
    with flow.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field"])
        row = ["g", "Ask", "llm", STATIC + " The topic is {topic}.", json.dumps(context), "topic|question", "answer"]
        writer.writerow(row)
    table = folder / "rows.csv"
    lines = ["topic,question", *(f"orders,Where is my order number {n}?" for n in range(1, rows + 1))]
    table.write_text("\n".join(lines) + "\n")
    return flow, table


def run_batch(folder: Path, rows: int, concurrency: int, *, cached: bool) -> dict[str, float]:
    """One batch on a fresh test server: its cost, tokens and seconds."""
    from anthropic_stub import AnthropicStub
    from openai_stub import counted

    with AnthropicStub() as stub:
        stub.script(*[counted(ANSWER)] * rows)
        flow, table = write_batch(folder, stub.base_url, rows, cached=cached)
        started = time.perf_counter()
        result = agentmap.batch(flow, table, concurrency=concurrency, keep_rows=False)
        seconds = time.perf_counter() - started
    assert result.successes == rows, f"{result.failures} rows failed"
    assert result.cost is not None, "the model has no price"
    tokens = {"tokens_in": result.tokens_in, "tokens_cached": result.tokens_cached}
    return {"cost": result.cost, **tokens, "seconds": seconds}


def prompt_caching(rows: int, concurrency: int, repeat: int) -> None:
    """Figure 1: the cost with caching against without, per round."""
    print(f"1. prompt caching: {rows} rows, a 2,000-token static system prompt, concurrency {concurrency}")
    ratios = []
    for n in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            order = (True, False) if n % 2 == 0 else (False, True)
            found = {cached: run_batch(folder, rows, concurrency, cached=cached) for cached in order}
        on, off = found[True], found[False]
        ratios.append(on["cost"] / off["cost"])
        print(
            f"   round {n + 1}: cached ${on['cost']:.4f} ({on['tokens_cached']:.0f} of {on['tokens_in']:.0f} input "
            f"tokens read from the cache, {on['seconds']:.1f}s), uncached ${off['cost']:.4f} "
            f"({off['tokens_in']:.0f} input tokens, {off['seconds']:.1f}s): {ratios[-1]:.3f}x"
        )
    verdict = "met" if max(ratios) <= 0.7 else "NOT met"
    print(f"   cost with caching / without: {min(ratios):.3f}x to {max(ratios):.3f}x (target <= 0.7x: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-bench"  # the local test server takes any key; no real one is sent
    prompt_caching(args.rows, args.concurrency, args.repeat)


if __name__ == "__main__":
    main()
