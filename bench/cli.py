"""Command-line speed, as whole processes, against baselines measured in the same run.

* `agentmap run graphs/hello_world.csv --json` vs a plain Python script that builds and invokes the same
  two-node graph with LangGraph directly and prints its final state as JSON, given the same garbage-collector
  start-up treatment the command uses (target: at most 1.1x, in wall time and in CPU time; the untreated
  script is shown for reference).
* `agentmap validate` vs `agentmap run` on the same file (target: at most 0.6x).
* `agentmap --version` and `agentmap --help` vs `python -c "import langgraph.graph"` (target: at most 0.2x).

The commands take turns in each round; each figure is min / median / max of the per-round ratios.
Run: `python bench/cli.py [--repeat N]`.
"""

from __future__ import annotations

import argparse
import resource
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


def round_times(commands: dict[str, list[str]], repeat: int) -> dict[str, list[float]]:
    """Wall times of each command over `repeat` rounds (after one warm-up), output discarded; under `NAME cpu`,
    the CPU time (user + system) of each command's process, which a machine shared with others disturbs less.

    The commands take turns within each round, so a busy machine slows every side alike.
    """
    times: dict[str, list[float]] = {key: [] for name in commands for key in (name, f"{name} cpu")}
    for round_ in range(repeat + 1):
        for name, command in commands.items():
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            if round_:
                times[name].append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                times[f"{name} cpu"].append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
    return times


def report(label: str, ours: list[float], base: list[float], target: float | None) -> bool:
    """Print min / median / max of the per-round ratios; True when the median is within the target."""
    ratios = [o / b for o, b in zip(ours, base, strict=True)]
    median = statistics.median(ratios)
    ok = target is None or median <= target
    goal = f"(target <= {target}x) {'OK' if ok else 'MISSED'}" if target is not None else "(for reference)"
    print(
        f"{label:<52} ours {statistics.median(ours):6.3f}s  baseline {statistics.median(base):6.3f}s  "
        f"ratio {min(ratios):4.2f} / {median:4.2f} / {max(ratios):4.2f}x {goal}"
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
        t = round_times(
            {
                "run_base": [python, str(script)],
                "run_base_gc": [python, str(script_gc)],
                "run_ours": [*agentmap, "run", "graphs/hello_world.csv", "--json"],
                "validate": [*agentmap, "validate", "graphs/hello_world.csv"],
                "import_base": [python, "-c", "import langgraph.graph"],
                "version": [*agentmap, "--version"],
                "help": [*agentmap, "--help"],
            },
            repeat,
        )
    results = [
        report("agentmap run hello_world --json vs the same-gc script", t["run_ours"], t["run_base_gc"], 1.1),
        report("  the same, CPU time", t["run_ours cpu"], t["run_base_gc cpu"], 1.1),
        report("agentmap run hello_world --json vs the plain script", t["run_ours"], t["run_base"], None),
        report("agentmap validate vs agentmap run, same file", t["validate"], t["run_ours"], 0.6),
        report("agentmap --version", t["version"], t["import_base"], 0.2),
        report("agentmap --help", t["help"], t["import_base"], 0.2),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
