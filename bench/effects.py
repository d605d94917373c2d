"""The call journal: what recording every model and tool call costs, against the same run without a journal.

One `openai` node runs a 3-call tool loop (3 model calls to a local OpenAI-compatible server, 2 tool calls: 5
journaled calls) on a SQLite checkpoint file. The same compiled workflow runs with the journal and with the
journal switched off (no call looked up or recorded), taking turns; each pair gives a ratio (journal / none)
and the difference per call. Figures: min/median/max. Run: `python bench/effects.py [--repeat N]`.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "llm"))

CALLS = 5
TOOLS = '''
def charge_card(amount: int) -> str:
    """Charge the card."""
    return f"charged {amount}"
'''


def _loop(body: dict[str, Any]) -> Any:
    from openai_stub import text, tool_calls

    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    return text("paid") if done >= 2 else tool_calls(("charge_card", {"amount": done + 1}))


def _workflow(folder: Path, base_url: str) -> Path:
    (folder / "tools.py").write_text(TOOLS)
    context = {"model": "gpt-stub", "base_url": base_url, "max_retries": 0}
    path = folder / "pay.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "GraphName",
                "Node",
                "AgentType",
                "Prompt",
                "Context",
                "Input_Fields",
                "Output_Field",
                "Tool_Source",
                "Available_Tools",
            ]
        )
        writer.writerow(["g", "Pay", "openai", "Pay.", json.dumps(context), "q", "answer", "tools.py", "charge_card"])
    return path


def measure(folder: Path, repeat: int) -> tuple[list[float], list[float]]:
    """(ratios journal / none, milliseconds added per call), one of each per pair of runs."""
    from openai_stub import OpenAIStub

    import agentmap
    from agentmap.agents import journal

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    real = journal._where
    with OpenAIStub() as stub:
        stub.script(*[_loop] * (3 * (2 * repeat + 4)))
        app = agentmap.compile(_workflow(folder, stub.base_url), checkpointer=str(folder / "runs.db"))

        def run(n: int, on: bool) -> float:
            journal._where = real if on else (lambda: None)  # type: ignore[assignment]
            gc.collect()
            started = time.perf_counter()
            result = app.invoke({"q": "pay"}, {"configurable": {"thread_id": f"{'j' if on else 'n'}{n}"}})
            elapsed = time.perf_counter() - started
            assert result.state["answer"] == "paid", result.state
            return elapsed

        run(-1, True), run(-1, False)  # warm up: imports, the client's connections, the table
        ratios, added = [], []
        for n in range(repeat):
            first = n % 2 == 0
            a = run(n, first)
            b = run(n, not first)
            with_journal, without = (a, b) if first else (b, a)
            ratios.append(with_journal / without)
            added.append((with_journal - without) / CALLS * 1000)
        journal._where = real  # type: ignore[method-assign]
    return ratios, added


def bookkeeping(folder: Path, repeat: int) -> tuple[list[float], list[float]]:
    """(ratios, microseconds added) of one journaled tool call against the same call unjournaled, no model
    server in between: the journal's own cost (a lookup, two writes for a tool that is not idempotent)."""
    import asyncio

    from langchain_core.runnables.config import var_child_runnable_config

    import agentmap
    from agentmap.agents import journal
    from agentmap.agents.tools import LocalToolExecutor

    saver = agentmap.checkpointer(str(folder / "bookkeeping.db"))

    def charge_card(amount: int) -> str:
        """Charge the card."""
        return f"charged {amount}"

    executor = LocalToolExecutor([charge_card])
    name = "charge_card"
    calls = 200

    async def batch(on: bool, n: int) -> float:
        journal.begin_node("Pay")
        config = {
            "configurable": {
                "thread_id": f"b{n}",
                "checkpoint_ns": "",
                "__pregel_task_id": "task",
                "__pregel_checkpointer": saver if on else None,
            },
            "metadata": {"langgraph_step": 1},
        }
        var_child_runnable_config.set(config)  # type: ignore[arg-type]
        started = time.perf_counter()
        for i in range(calls):
            await executor.execute(name, {"amount": i}, "")
        return (time.perf_counter() - started) / calls

    ratios, added = [], []
    for n in range(repeat):
        if n % 2:  # taking turns
            off, on = asyncio.run(batch(False, n)), asyncio.run(batch(True, n))
        else:
            on, off = asyncio.run(batch(True, n)), asyncio.run(batch(False, n))
        ratios.append(on / off)
        added.append((on - off) * 1e6)
    return ratios, added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ratios, added = measure(Path(tmp), args.repeat)
    print(
        f"journal / no journal, a 5-call tool loop: min {min(ratios):.2f}x  median "
        f"{statistics.median(ratios):.2f}x  max {max(ratios):.2f}x"
    )
    print(
        f"added per call: min {min(added):.2f} ms  median {statistics.median(added):.2f} ms  "
        f"max {max(added):.2f} ms  ({args.repeat} pairs)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        ratios, added = bookkeeping(Path(tmp), args.repeat)
    print(
        f"one tool call, journaled / not: min {min(ratios):.2f}x  median {statistics.median(ratios):.2f}x  "
        f"max {max(ratios):.2f}x; added: min {min(added):.0f} us  median {statistics.median(added):.0f} us  "
        f"max {max(added):.0f} us"
    )


if __name__ == "__main__":
    main()
