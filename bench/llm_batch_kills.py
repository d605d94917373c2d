"""Kill -9 at random moments of an `agentmap batch --llm-batch` run, then the same command until it finishes: no
call is billed twice and every row ends with the answers its calls got (issue 42's target: 0 in 50 trials of a
10,000-row run).

The workflow, servers and accounting are tests/llm/llm_batch_trials.py's: two LLM nodes, A
(`openai:gpt-4o-mini`) then B on A's answer (`anthropic:claude-sonnet-4-5`), served in this process by the test
servers that speak OpenAI's Files + Batches and Anthropic's Message Batches, each answer unique and recorded. A job
stays `in_progress` for `--job-seconds` after it is created, so a run spends time polling too.

First one whole run without a kill is timed (its span; the machine's load changes it, so a trial whose run ended
before its kill gives the span from then on). Each trial, on fresh servers and in a fresh folder, starts
`python -m agentmap batch flow.csv -i rows.csv -o out.csv --llm-batch --id-column id --llm-batch-poll P`, sends it
SIGKILL after a delay drawn uniformly from [0, span] (while rows run to their calls, while a job is submitted,
polled or collected, while rows go on), then runs the same command until it exits 0, and counts (targets 0):

* calls billed twice: a node's request in two jobs the providers took (they bill every request of every job),
  or answered twice;
* calls sent outside a job (to the chat endpoints);
* rows without the answers their calls got (missing, failed, or holding another answer);
* runs not finished after 10 reruns.

With `--kills-per-run K`, each trial's run is killed K times, each time after a delay drawn from [0, 2 span / (K+1)],
the next start taking up where the last left off (kills while a run recovers from the one before too), and then
run until it finishes: `--trials 1 --kills-per-run 50` is 50 kills at random moments of one run, in about a run's
time rather than 50 runs'.

Run: `python bench/llm_batch_kills.py [--rows 10000] [--trials 50] [--seed 1] [--job-seconds 1] [--poll 0.2]
[--span SECONDS] [--kills-per-run 1]`
(also `python bench/llm_batch.py --only kills --kill-rows N --trials N`).
"""

from __future__ import annotations

import argparse
import collections
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent / "tests" / d) for d in ("llm", ".")]

from llm_batch_trials import BATCH, Servers, trial  # noqa: E402

COUNTED = ("billed_twice", "sync_calls", "wrong_rows", "unfinished")


def _start(args: Sequence[str], folder: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    out = subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-m", "agentmap", *args], cwd=folder, env=env, stdout=out, stderr=out)


def _run(args: Sequence[str], folder: Path, env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "agentmap", *args], cwd=folder, env=env, capture_output=True, text=True
    )
    return done.returncode, done.stderr


def whole_run(rows: int, job_seconds: float, poll: float) -> float:
    """Seconds one run takes without a kill (checked as a trial is)."""
    with Servers(rows, job_seconds) as servers, tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        found = trial(servers, Path(tmp), [float("inf")], poll, _start, _run)
        seconds = time.perf_counter() - started
    assert not found["killed"] and not any(found[k] for k in COUNTED), found
    return seconds


def run(
    rows: int, trials: int, seed: int, job_seconds: float, poll: float, span: float | None = None, per_run: int = 1
) -> int:
    """The trials (kills drawn in [0, `span`]; None: a whole run timed first), `per_run` kills each; prints each
    and the totals; the number of bad outcomes."""
    print(
        f"kill -9 trials of `agentmap {' '.join(BATCH)} --llm-batch-poll {poll:g}`: {rows} rows x 2 LLM nodes "
        f"(OpenAI, then Anthropic), {trials} trials of {per_run} kill(s) each, seed {seed}, jobs answered "
        f"{job_seconds:g} s after creation",
        flush=True,
    )
    if span is None:
        span = whole_run(rows, job_seconds, poll)
        print(
            f"  a whole run without a kill: {span:.1f} s; kills drawn uniformly in [0, {2 / (per_run + 1):g} span]",
            flush=True,
        )
    else:
        print(f"  kills drawn uniformly in [0, {2 * span / (per_run + 1):g}] s (--span {span:g})", flush=True)
    rng = random.Random(seed)
    totals: collections.Counter[str] = collections.Counter()
    seconds = []
    for n in range(trials):
        # one kill: anywhere in a run; k kills: each run of the k killed after a k+1-th of the span on average
        delays = [rng.uniform(0.0, 2 * span / (per_run + 1)) for _ in range(per_run)]
        with Servers(rows, job_seconds) as servers, tempfile.TemporaryDirectory() as tmp:
            found = trial(servers, Path(tmp), delays, poll, _start, _run)
        seconds.append(found["seconds"])
        if per_run == 1 and not found["killed"]:
            span = found["seconds"]
        for key in (*COUNTED, "killed", "reruns"):
            totals[key] += found[key]
        for k, (delay, moment) in enumerate(zip(delays, found["moments"], strict=False)):
            print(f"    kill {k + 1} after {delay:.2f} s: {moment}", flush=True)
        print(
            f"  trial {n + 1}: {found['killed']} kill(s); {found['reruns']} rerun(s) to finish; "
            f"{found['jobs']} jobs, {found['calls_in_jobs']} calls in them (of {2 * rows}); billed twice "
            f"{found['billed_twice']}, outside a job {found['sync_calls']}, wrong rows {found['wrong_rows']}, "
            f"unfinished {found['unfinished']} {found['error']} ({found['seconds']:.1f} s)",
            flush=True,
        )
    bad = sum(totals[k] for k in COUNTED)
    each = sum(seconds) / max(1, trials)
    print(f"{trials} trials of {rows} rows ({totals['killed']} kills before a run's end; {each:.1f} s per trial):")
    print(f"  calls billed twice: {totals['billed_twice']}")
    print(f"  calls sent outside a job: {totals['sync_calls']}")
    print(f"  rows without the answers their calls got: {totals['wrong_rows']}")
    print(f"  runs not finished: {totals['unfinished']}")
    print("OK" if bad == 0 else f"FAILED: {bad}")
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--job-seconds", type=float, default=1.0)
    parser.add_argument("--poll", type=float, default=0.2)
    parser.add_argument("--span", type=float, default=None, help="seconds to draw kills in (default: a whole run's)")
    parser.add_argument("--kills-per-run", type=int, default=1, help="kills in each trial's run (default 1)")
    args = parser.parse_args()
    bad = run(args.rows, args.trials, args.seed, args.job_seconds, args.poll, args.span, args.kills_per_run)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
