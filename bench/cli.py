"""Command-line speed, as whole processes, against baselines measured in the same run.

* `agentmap run graphs/hello_world.csv --json` vs a plain Python script that builds and invokes the same
  two-node graph with LangGraph directly and prints its final state as JSON (target: at most 1.1x).
* `agentmap --version` and `agentmap --help` vs `python -c "import langgraph.graph"` (target: at most 0.2x).

Each figure is the median of several runs. Run: `python bench/cli.py [--repeat N]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BASELINE = """\
import json
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    name: Any
    greeting: Any
    message: Any


def greet(state: State) -> dict[str, Any]:
    return {"greeting": f"Hello, {state['name']}!"}


def finish(state: State) -> dict[str, Any]:
    return {"message": f"Done.\\n\\ngreeting: {state['greeting']}"}


builder = StateGraph(State)
builder.add_node("Greet", greet)
builder.add_node("Finish", finish)
builder.add_edge(START, "Greet")
builder.add_edge("Greet", "Finish")
builder.add_edge("Finish", END)
with open("graphs/hello_world.state.json", encoding="utf-8") as f:
    initial = json.load(f)
print(json.dumps({"state": builder.compile().invoke(initial)}, indent=2))
"""


def median_times(commands: dict[str, list[str]], repeat: int) -> dict[str, float]:
    """Median wall time of each command over `repeat` rounds (after one warm-up), output discarded.

    The commands take turns within each round, so a busy machine slows every side alike.
    """
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(repeat + 1):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            if round_:
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def report(label: str, ours: float, base: float, target: float) -> bool:
    """Print one ratio line; True when within the target."""
    ratio = ours / base
    ok = ratio <= target
    print(
        f"{label:<44} ours {ours:7.3f}s  baseline {base:7.3f}s  ratio {ratio:5.2f}x "
        f"(target <= {target}x) {'OK' if ok else 'MISSED'}"
    )
    return ok


def main() -> int:
    """Measure and print every ratio; exit 1 if one missed its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="runs per figure (median)")
    repeat = parser.parse_args().repeat
    python = sys.executable
    agentmap = [python, "-m", "agentmap"]
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "baseline.py"
        script.write_text(BASELINE, encoding="utf-8")
        # The command turns the garbage collector off during start-up (see agentmap/cli/__init__.py); this
        # variant of the baseline does the same, to show how much of the lead comes from that alone.
        script_gc = Path(folder) / "baseline_gc.py"
        script_gc.write_text(
            "import gc\ngc.disable()\n"
            + BASELINE.replace("print(json.dumps(", "gc.freeze()\ngc.enable()\nprint(json.dumps("),
            encoding="utf-8",
        )
        t = median_times(
            {
                "run_base": [python, str(script)],
                "run_base_gc": [python, str(script_gc)],
                "run_ours": [*agentmap, "run", "graphs/hello_world.csv", "--json"],
                "import_base": [python, "-c", "import langgraph.graph"],
                "version": [*agentmap, "--version"],
                "help": [*agentmap, "--help"],
            },
            repeat,
        )
    results = [
        report("agentmap run graphs/hello_world.csv --json", t["run_ours"], t["run_base"], 1.1),
        report("agentmap --version", t["version"], t["import_base"], 0.2),
        report("agentmap --help", t["help"], t["import_base"], 0.2),
    ]
    ratio = t["run_ours"] / t["run_base_gc"]
    print(
        f"{'(info) run vs baseline with the same gc start-up':<44} ours {t['run_ours']:7.3f}s  baseline "
        f"{t['run_base_gc']:7.3f}s  ratio {ratio:5.2f}x"
    )
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
