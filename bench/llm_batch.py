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

2. Provider batch jobs (target <= 0.55x, equal outputs; the batch's own CPU <= 2 ms per call): `--rows2` rows
   (default 1,000) of a two-LLM-node workflow (`openai:gpt-4o-mini`, node B asking on node A's answer) against
   the local OpenAI test server with its Files and Batches endpoints (tests/llm/batch_stub.py), run in another
   process so its work is not counted. Each round runs, alternating their order: the batch as usual (`sync`),
   the same with `--checkpoint` (`sync+ckpt`: what `--llm-batch` keeps per row too), and with `--llm-batch`
   (poll 0.05 s). Cost: the rows' `cost` summed at the default price table (gpt-4o-mini $0.15/$0.60 per
   million, batch $0.075/$0.30); outputs compared cell by cell. CPU: `time.process_time()` of this process
   around each batch; the batch's own CPU per call is (llm-batch - sync+ckpt) / calls: the journal's queued
   entries, grouping, the JSONL files, polling, the answers written and replayed. Each side's CPU varies by a
   second or two from round to round on a shared machine (as much as the whole difference), so the figure is
   also printed from the least CPU of each side over the rounds, the steadier one.

3. Kill -9 at random moments (target: 0 calls billed twice, every row with its calls' answers, in 50 trials of a
   10,000-row run): `--only kills` runs bench/llm_batch_kills.py's trials, `--kill-rows` rows (default 10,000),
   `--trials` trials (default 50); not part of a run without `--only`.

Run: `python bench/llm_batch.py [--rows N] [--concurrency N] [--repeat N] [--rows2 N] [--repeat2 N]
[--only caching|jobs|kills] [--kill-rows N] [--trials N] [--seed N]`.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # timing.py, which the stubs import
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


def _serve(conn: Any, rows: int) -> None:
    """In a child process: the OpenAI batch test server, answering every request by echoing its last message."""
    from batch_stub import OpenAIBatchStub
    from openai_stub import text

    def echo(body: dict[str, Any]) -> Any:
        return text(f"<{str(body['messages'][-1]['content']).upper()}>", usage=(100, 10))

    with OpenAIBatchStub() as stub:
        stub.script(*([echo] * (8 * rows)))
        conn.send(stub.base_url)
        conn.recv()  # until the parent is done


def _two_nodes(folder: Path, base_url: str, rows: int) -> tuple[Path, Path]:
    context = json.dumps({"model": "openai:gpt-4o-mini", "base_url": base_url, "max_retries": 0})
    flow = folder / "two.csv"
    with flow.open("w", newline="") as handle:
        csv.writer(handle).writerows(
            [
                ["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Edge"],
                ["g", "A", "llm", "say {topic}", context, "topic", "a", "B"],
                ["g", "B", "llm", "again {a}", context, "a", "b", ""],
            ]
        )
    table = folder / "rows2.csv"
    table.write_text("id,topic\n" + "".join(f"r{n},topic {n}\n" for n in range(rows)))
    return flow, table


def _round(rows: int, concurrency: int, order: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Each kind of batch once, in `order`, on a fresh test server in another process."""
    import multiprocessing

    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("fork").Process(target=_serve, args=(child, rows * 3), daemon=True)
    server.start()
    base_url = parent.recv()
    found: dict[str, dict[str, Any]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            flow, table = _two_nodes(folder, base_url, rows)
            for kind in order:
                out = folder / f"{kind}.csv"
                extra: dict[str, Any] = {}
                if kind == "sync+ckpt":
                    extra = {"checkpoint": folder / "ckpt.db"}
                elif kind == "llm-batch":
                    extra = {"llm_batch": True, "llm_batch_poll": 0.05, "on_llm_progress": lambda _: None}
                cpu, wall = time.process_time(), time.perf_counter()
                result = agentmap.batch(
                    flow, table, output=out, concurrency=concurrency, keep_rows=False, id_column="id", **extra
                )
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                assert result.successes == rows, f"{kind}: {result.failures} rows failed"
                with out.open(newline="") as handle:
                    cells = [(r["a"], r["b"]) for r in csv.DictReader(handle)]
                found[kind] = {"cost": result.cost or 0.0, "cpu": cpu, "wall": wall, "cells": cells}
    finally:
        parent.send("stop")
        server.join(10)
    return found


def provider_jobs(rows: int, concurrency: int, repeat: int) -> None:
    """Figure 2: cost and CPU of --llm-batch against the same batch without it."""
    import statistics

    print(f"2. provider batch jobs: {rows} rows x 2 LLM nodes, concurrency {concurrency}, {repeat} rounds")
    ratios, own, cpus = [], [], []
    kinds = ("sync", "sync+ckpt", "llm-batch")
    _round(10, concurrency, kinds)  # warm-up: imports and first compiles, not measured
    for n in range(repeat):
        found = _round(rows, concurrency, kinds if n % 2 == 0 else kinds[::-1])
        sync, ckpt, jobs = (found[k] for k in kinds)
        equal = sync["cells"] == jobs["cells"] == ckpt["cells"]
        ratios.append(jobs["cost"] / sync["cost"])
        own.append((jobs["cpu"] - ckpt["cpu"]) / (2 * rows) * 1000)
        cpus.append((ckpt["cpu"], jobs["cpu"]))
        print(
            f"   round {n + 1}: sync ${sync['cost']:.4f} ({sync['cpu']:.1f}s CPU, {sync['wall']:.1f}s), sync+ckpt "
            f"{ckpt['cpu']:.1f}s CPU, llm-batch ${jobs['cost']:.4f} ({jobs['cpu']:.1f}s CPU, {jobs['wall']:.1f}s): "
            f"cost {ratios[-1]:.3f}x, outputs equal: {equal}, the batch's own CPU {own[-1]:.2f} ms per call"
        )
        assert equal, "the outputs differ"
    verdict = "met" if max(ratios) <= 0.55 else "NOT met"
    print(f"   cost with --llm-batch / without: {min(ratios):.3f}x to {max(ratios):.3f}x (target <= 0.55x: {verdict})")
    mid = statistics.median(own)
    verdict = "met" if max(own) <= 2.0 else "NOT met"
    least = (min(j for _, j in cpus) - min(c for c, _ in cpus)) / (2 * rows) * 1000
    print(
        f"   the batch's own CPU per call: min {min(own):.2f}, median {mid:.2f}, max {max(own):.2f} ms "
        f"(target <= 2 ms: {verdict}); from the least CPU of each side over the rounds: {least:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--rows2", type=int, default=1000)
    parser.add_argument("--repeat2", type=int, default=3)
    parser.add_argument("--only", choices=("caching", "jobs", "kills"), default=None)
    parser.add_argument("--kill-rows", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.only == "kills":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from llm_batch_kills import run

        sys.exit(1 if run(args.kill_rows, args.trials, args.seed, job_seconds=1.0, poll=0.2) else 0)
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-bench"  # the local test server takes any key; no real one is sent
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    if args.only != "jobs":
        prompt_caching(args.rows, args.concurrency, args.repeat)
    if args.only != "caching":
        provider_jobs(args.rows2, args.concurrency, args.repeat2)


if __name__ == "__main__":
    main()
