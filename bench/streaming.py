"""Token streaming: how long after the local server sends an LLM node's first token the consumer has it.

One `openai` node against a local OpenAI-compatible server that streams its reply in pieces and notes when it
sends each. Three consumers take turns on the same server: a raw langchain `ChatOpenAI.stream` (the floor),
`app.stream(..., stream_mode="messages")` of the compiled workflow, and the writer `agentmap run` shows the text
with (`--stream`, a terminal). Each round gives the time from the server's send of the first piece to its receipt,
and the ratio of each AgentMap consumer to the raw client of the same round. Figures: min/median/max.

Two ways of sending: the pieces back to back (the node's thread keeps reading while `app.stream`'s consumer, in
another thread, waits for the interpreter lock: up to its 5 ms switch interval, more on a loaded machine), and the
rest held until the consumer has the first piece (as a model's next token comes tens of ms later).
Run: `python bench/streaming.py [--repeat N]`.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "llm"))

PIECES = ("Par", "is is ", "the ", "capital.")


def _workflow(folder: Path, base_url: str) -> Path:
    context = {"model": "gpt-stub", "base_url": base_url, "max_retries": 0}
    path = folder / "ask.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field"])
        writer.writerow(["g", "Ask", "openai", "Answer briefly.", json.dumps(context), "question", "answer"])
    return path


def _consumers(app: Any, model: Any) -> dict[str, Callable[[Callable[[], None]], None]]:
    """Each consumer runs one request and calls `got()` when the first piece reaches it."""
    from langchain_core.messages import HumanMessage

    from agentmap._cli_api import TokenWriter

    def raw(got: Callable[[], None]) -> None:
        for chunk in model.stream([HumanMessage("France?")]):
            if chunk.text:
                got()

    def messages(got: Callable[[], None]) -> None:
        for message, _ in app.stream({"question": "France?"}, stream_mode="messages"):
            if message.text:
                got()

    def shown(got: Callable[[], None]) -> None:
        def write(text: str) -> None:
            if text.startswith("Par"):
                got()

        app.invoke({"question": "France?"}, {"callbacks": [TokenWriter(write)]})

    return {"raw ChatOpenAI.stream": raw, "app.stream messages": messages, "agentmap run --stream writer": shown}


def measure(folder: Path, repeat: int, *, held: bool) -> dict[str, list[float]]:
    """Milliseconds from the server's send of the first piece to its receipt, per consumer, one per round;
    `held`: the later pieces are sent once the first is received."""
    import threading

    from openai_stub import OpenAIStub, chat_model, streamed

    import agentmap

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    with OpenAIStub() as stub:
        app = agentmap.compile(_workflow(folder, stub.base_url))
        model = chat_model(stub)

        def first(consume: Callable[[Callable[[], None]], None]) -> float:
            """Run one request; `consume` calls `got()` when the first piece reaches it."""
            gate = threading.Event()
            stub.script(streamed(*PIECES, gate=gate if held else None))
            stub.sent.clear()
            received: list[float] = []

            def got() -> None:
                if not received:
                    received.append(time.perf_counter())
                    gate.set()

            gc.collect()
            consume(got)
            return (received[0] - stub.sent[0]) * 1000

        consumers = _consumers(app, model)
        for consume in consumers.values():  # warm up: imports, the client's connections
            first(consume)
        figures: dict[str, list[float]] = {name: [] for name in consumers}
        for n in range(repeat):
            names = list(consumers) if n % 2 == 0 else list(reversed(consumers))  # taking turns
            for name in names:
                figures[name].append(first(consumers[name]))
    return figures


def _line(label: str, values: list[float], unit: str) -> str:
    fmt = "{:.2f}x" if unit == "x" else "{:.2f} ms"
    return (
        f"{label}: min {fmt.format(min(values))}  median {fmt.format(statistics.median(values))}  "
        f"max {fmt.format(max(values))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    for held, how in ((False, "pieces back to back"), (True, "the rest sent once the first is received")):
        with tempfile.TemporaryDirectory() as tmp:
            figures = measure(Path(tmp), args.repeat, held=held)
        raw = figures["raw ChatOpenAI.stream"]
        print(f"first token, server send -> consumer, {how} ({args.repeat} rounds)")
        for name, values in figures.items():
            print(_line(f"  {name}", values, "ms"))
        for name, values in figures.items():
            if values is not raw:
                print(_line(f"  {name} / raw", [a / b for a, b in zip(values, raw, strict=True)], "x"))


if __name__ == "__main__":
    main()
