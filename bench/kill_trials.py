"""Kill -9 at random moments, then resume: nothing finished is paid for twice.

A 10-node workflow (`agentmap run --thread`): nine `openai` nodes, each one model call to a local
OpenAI-compatible server that records every request and answers after `--latency` seconds, and in the middle a
`tool` node whose tool is not idempotent (it appends `charge` to a file, then takes `--latency` seconds to
report back). Each trial kills the command with SIGKILL at a random moment of its run, then runs
`agentmap resume` until the thread is done, answering a question about a call in doubt as a person would, by
looking at the file (`done` when the charge is there, `retry` when not: the charge is still wanted).

Counted over all trials (the targets are 0):
* requests repeated: a model request sent again although it was not the one in flight at the kill;
* effects repeated: the charge appended more than once;
* runs that did not finish with the right answer.
Also shown: how many trials asked about the call in doubt, and how many re-sent the request in flight.
Run: `python bench/kill_trials.py [--trials 200] [--latency 0.05] [--seed 1]`.
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "llm"))

TOOLS = """
import os, time


def charge_card(amount: int) -> str:
    \"\"\"Charge the card.\"\"\"
    with open(os.environ["EFFECTS"], "a") as handle:
        handle.write("charge\\n")
    time.sleep(float(os.environ["LATENCY"]))
    return "charged"
"""
HEADER = ["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Edge", "Tool_Source"]


def _workflow(folder: Path, base_url: str) -> None:
    (folder / "tools.py").write_text(TOOLS)
    model = json.dumps({"model": "gpt-stub", "base_url": base_url, "max_retries": 0})
    rows = []
    for i in range(1, 11):
        after = f"N{i + 1}" if i < 10 else ""
        if i == 5:
            rows.append(
                ["g", "N5", "tool", "", json.dumps({"tool": "charge_card"}), "amount", "charged", after, "tools.py"]
            )
        else:
            rows.append(["g", f"N{i}", "openai", f"Step {i}: {{q}}", model, "q", f"a{i}", after, ""])
    with (folder / "flow.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows)


def _command(folder: Path, env: dict[str, str], *args: str) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, "-m", "agentmap", *args, "--json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        document = json.loads(done.stdout) if done.stdout.strip() else {}
    except ValueError:
        document = {}
    return done.returncode, document, done.stderr


def _trial(stub: Any, rng: random.Random, latency: float, full: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _workflow(folder, stub.base_url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMAP_")}
        env |= {"OPENAI_API_KEY": "sk-stub", "EFFECTS": str(folder / "effects"), "LATENCY": str(latency)}
        first = len(stub.requests)
        args = ["run", "flow.csv", "--thread", "t", "--state", '{"q": "go", "amount": 1}', "--json"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentmap", *args],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.0, full))
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
        killed_at = len(stub.requests)  # requests sent before the kill (the last may have been in flight)
        asked = False
        for _ in range(10):
            _, document, err = _command(folder, env, "resume", "t")
            if "unknown-thread" in err:  # killed before its first step was saved: the user runs it again
                _, document, err = _command(folder, env, *args[:-1])
            if document.get("status") == "paused":
                asked = True
                took = (folder / "effects").exists() and "charge" in (folder / "effects").read_text()
                _, document, err = _command(folder, env, "resume", "t", "done" if took else "retry")
            if document.get("status") == "done" or "nothing-to-resume" in err:
                break
        sent = [json.dumps(r["messages"], sort_keys=True) for r in stub.requests[first:]]
        counts = collections.Counter(sent)
        in_flight = sent[killed_at - first - 1] if killed_at > first else None
        repeated = sum(c - 1 for s, c in counts.items() if c > 1 and s != in_flight)
        effects = (folder / "effects").read_text().count("charge") if (folder / "effects").exists() else 0
        finished = document.get("status") == "done" or "nothing-to-resume" in err
        if not (finished and effects == 1):
            print(f"    unfinished: status {document.get('status')}, {effects} charges, {err.strip()[-300:]}")
        return {
            "repeated": repeated,
            "in_flight_resent": counts.get(in_flight, 0) - 1 if in_flight else 0,
            "effects_repeated": max(0, effects - 1),
            "unfinished": 0 if finished and effects == 1 else 1,
            "asked": int(asked),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    from openai_stub import OpenAIStub, slow, text

    rng = random.Random(args.seed)
    totals: collections.Counter[str] = collections.Counter()
    with OpenAIStub() as stub:
        stub.script(*[slow(args.latency, text("ok"))] * 100_000)
        with tempfile.TemporaryDirectory() as tmp:  # how long a whole run takes: the kills fall inside it
            folder = Path(tmp)
            _workflow(folder, stub.base_url)
            env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMAP_")}
            env |= {"OPENAI_API_KEY": "sk-stub", "EFFECTS": str(folder / "effects"), "LATENCY": str(args.latency)}
            start = time.perf_counter()
            _command(folder, env, "run", "flow.csv", "--state", '{"q": "go", "amount": 1}')
            full = time.perf_counter() - start
        for n in range(args.trials):
            for key, value in _trial(stub, rng, args.latency, full).items():
                totals[key] += value
            if (n + 1) % 20 == 0:
                print(f"  {n + 1} trials: {dict(totals)}", flush=True)
    bad = totals["repeated"] + totals["effects_repeated"] + totals["unfinished"]
    print(f"{args.trials} kill -9 trials (a whole run takes {full:.2f}s; kills uniform in it):")
    print(f"  model requests repeated (not in flight at the kill): {totals['repeated']}")
    print(f"  tool effects repeated: {totals['effects_repeated']}")
    print(f"  runs not finished right: {totals['unfinished']}")
    print(
        f"  asked about the call in doubt: {totals['asked']}; in-flight request sent again: "
        f"{totals['in_flight_resent']}"
    )
    print("OK" if bad == 0 else f"FAILED: {bad}")


if __name__ == "__main__":
    main()
