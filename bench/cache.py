"""The LLM response cache: a cache hit against the same model call sent to a local OpenAI-compatible server.

One `LLMAdapter` on `ChatOpenAI` (pointed at the local test server, tests/llm/openai_stub.py) with a cache
`ttl`; the cache is `.agentmap/llm_cache.db` in a temporary folder (a run without a checkpoint). Each pair makes
the same request `--calls` times answered by the cache and `--calls` times with the cache off (`no_cache`, as
`--no-cache` sets it: sent to the server), taking turns on which goes first; the ratio is call / hit. Figures:
min/median/max over the pairs, against the test server as it is and with TCP_NODELAY (no ~40 ms wait for
a delayed ACK on a kept-alive connection: the fairer baseline). Run: `python bench/cache.py [--repeat N] [--calls N]`.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "llm"))


def measure(folder: Path, repeat: int, calls: int, nodelay: bool) -> tuple[list[float], list[float], list[float]]:
    """(ratios call / hit, milliseconds per hit, milliseconds per call), one of each per pair; `nodelay`: the
    server sends each reply at once (TCP_NODELAY), else as the test server does (its header and body are two
    writes: on a kept-alive connection the body waits for the client's delayed ACK, about 40 ms on Linux)."""
    import socketserver

    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.runnables.config import var_child_runnable_config
    from openai_stub import OpenAIStub, chat_model, text

    from agentmap.llm.adapter import LLMAdapter

    os.chdir(folder)  # the default cache file is in the working folder
    socketserver.StreamRequestHandler.disable_nagle_algorithm = nodelay
    messages = [SystemMessage("Answer briefly."), HumanMessage("What is the capital of France?")]
    with OpenAIStub() as stub:
        stub.script(*[text("Paris.")] * (calls * (repeat + 2) + 2))
        adapter = LLMAdapter(chat_model(stub), cache_ttl=3600)

        def timed(cached: bool) -> float:
            var_child_runnable_config.set({"configurable": {} if cached else {"no_cache": True}})  # type: ignore[typeddict-item]
            gc.collect()
            started = time.perf_counter()
            for _ in range(calls):
                assert adapter.invoke(messages).text == "Paris."
            return (time.perf_counter() - started) / calls * 1000

        timed(False), timed(True)  # warm up: imports, the client's connection; the first call stores the reply
        sent = len(stub.requests)
        ratios, hits, misses = [], [], []
        for n in range(repeat):
            if n % 2:
                miss, hit = timed(False), timed(True)
            else:
                hit, miss = timed(True), timed(False)
            ratios.append(miss / hit)
            hits.append(hit)
            misses.append(miss)
        assert len(stub.requests) - sent == repeat * calls, "a cache hit reached the server"
    return ratios, hits, misses


def _figures(values: list[float], unit: str, digits: int = 2) -> str:
    return f"min {min(values):.{digits}f}{unit}  median {statistics.median(values):.{digits}f}{unit}  " + (
        f"max {max(values):.{digits}f}{unit}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    here = Path.cwd()
    for nodelay, server in ((False, "the test server"), (True, "the test server with TCP_NODELAY")):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                ratios, hits, misses = measure(Path(tmp), args.repeat, args.calls, nodelay)
            finally:
                os.chdir(here)
        print(f"{server}: call / cache hit: {_figures(ratios, 'x', 1)}  ({args.repeat} pairs)")
        print(f"  cache hit: {_figures(hits, ' ms', 3)}")
        print(f"  call: {_figures(misses, ' ms', 3)}")


if __name__ == "__main__":
    main()
