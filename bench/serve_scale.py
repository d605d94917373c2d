"""`agentmap serve` on many replicas: what survives a kill -9, and what a second and third replica buy.

Every server is the real command in a subprocess; the client is `langgraph-sdk`. The graph has `--steps` nodes
that each wait `--wait` seconds (as an LLM call would) and append `start/end NODE RUN` to a side file.

* restart (SQLite, one machine): `--runs` background runs, the server killed with kill -9 while they run and
  started again; every run must end `success`, `runs.get` must never answer 404, and no node that ended before
  the kill may run again for its run (the step in flight may).
* kill one of three (PostgreSQL): the same, with three replicas claiming the runs (sent to the two that live on)
  and one of them killed with kill -9, `--trials` times, each at a random moment (`--seed`) between the first
  step's start and the runs' expected end; the others finish its runs once the lease (`--lease`) has run out.
  Printed per trial and in a summary, from the runs' records: successes, the seconds from the kill to the end
  of the last run taken over (against lease + 5 s), nodes that ended before the kill and ran again, runs taken
  over (their record's `attempt` > 1: the step in flight at the kill may have run twice).
* scale (PostgreSQL): runs/s of `--runs` background runs on one replica and on three (alternating, `--rounds`
  times); the ratio three/one, min/median/max. Also one replica on SQLite vs PostgreSQL.
* first event across replicas: a run created on replica A, streamed with `join_stream` from replica B: the delay
  between the first `updates` event on A's own stream and on B's (median over the runs).

Run: `python bench/serve_scale.py [--runs 20] [--rounds 2] [--steps 4] [--wait 0.2]`. It starts its own
PostgreSQL server (Debian's binaries, as the tests do). Keep it short on a shared machine, and say its load.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

ROOT = Path(__file__).resolve().parents[1]
_SERVE_WORKERS = 16
_SERVE_OPTIONS: list[str] = []
"""Given to every server (`--durability`)."""
"""Runs a replica executes at once (`agentmap serve --workers`' default)."""
_AGENT = """
import os, time
from agentmap import BaseAgent

class StepAgent(BaseAgent):
    def process(self, inputs):
        run = inputs.get("topic")
        with open("steps.log", "a") as log:
            log.write(f"start {self.name} {run} {os.getpid()} {time.time():.3f}\\n")
        time.sleep(float(os.environ["STEP_SECONDS"]))
        with open("steps.log", "a") as log:
            log.write(f"end {self.name} {run} {os.getpid()} {time.time():.3f}\\n")
        return self.name
"""


def _project(steps: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="serve-scale-"))
    (folder / "custom_agents").mkdir()
    (folder / "custom_agents" / "steps.py").write_text(_AGENT)
    rows = ["GraphName,Node,AgentType,Input_Fields,Output_Field,Edge"]
    for i in range(steps):
        rows.append(f"Steps,N{i},StepAgent,topic,n{i},{f'N{i + 1}' if i + 1 < steps else ''}")
    (folder / "steps.csv").write_text("\n".join(rows) + "\n")
    return folder


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    def __init__(self, folder: Path, checkpoint: str, wait: float, *extra: str) -> None:
        self.port = _port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, "-m", "agentmap", "serve", "steps.csv", "--port", str(self.port)]
        self.args = [*args, "--checkpoint", checkpoint, *_SERVE_OPTIONS, *extra]
        self.folder, self.env = folder, {**os.environ, "STEP_SECONDS": str(wait)}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        out = open(self.folder / f"server-{self.port}.log", "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(self.args, cwd=self.folder, env=self.env, stdout=out, stderr=out)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/ok", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"the server on {self.port} did not start (see {self.folder})")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(60)


def _create(servers: list[Server], runs: int, first: int = 0) -> list[tuple[Any, str, str]]:
    """`runs` runs sent round robin to `servers`, each on its own thread, named `r{first}`, `r{first + 1}`, ..."""
    made = []
    for i in range(runs):
        client = get_sync_client(url=servers[i % len(servers)].url, api_key=None)
        tid = client.threads.create()["thread_id"]
        run = client.runs.create(tid, "Steps", input={"topic": f"r{first + i}"})
        made.append((client, tid, run["run_id"]))
    return made


def _join_all(servers: list[Server], made: list[tuple[Any, str, str]]) -> list[str]:
    statuses = []
    for i, (_, tid, run_id) in enumerate(made):
        client = get_sync_client(url=servers[i % len(servers)].url, api_key=None)
        client.runs.join(tid, run_id)
        statuses.append(client.runs.get(tid, run_id)["status"])
    return statuses


def _ended(folder: Path) -> Counter[str]:
    lines = (folder / "steps.log").read_text().splitlines()
    return Counter(" ".join(line.split()[1:3]) for line in lines if line.startswith("end"))


def _repeated(folder: Path, ended_before: Counter[str]) -> list[str]:
    """The nodes (`"<node> <topic>"`) that had ended before the kill and ended again after it."""
    return [key for key, count in _ended(folder).items() if count > 1 and ended_before[key] >= 1]


def _repeats(folder: Path, ended_before: Counter[str]) -> int:
    return len(_repeated(folder, ended_before))


def restart(args: argparse.Namespace) -> None:
    folder = _project(args.steps)
    server = Server(folder, "runs.db", args.wait).start()
    made = _create([server], args.runs)
    time.sleep(args.wait * 1.5)
    server.stop(signal.SIGKILL)
    ended = _ended(folder)
    server.start()
    for _, tid, run_id in made:
        get_sync_client(url=server.url, api_key=None).runs.get(tid, run_id)  # raises on a 404
    statuses = _join_all([server], made)
    print(
        f"restart (SQLite): {statuses.count('success')}/{len(made)} success; nodes ended before the kill "
        f"that ran again: {_repeats(folder, ended)}"
    )
    server.stop()


def _first_start(folder: Path, timeout: float = 120) -> float:
    """The moment the first step of any run starts (its line in the side file)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = folder / "steps.log"
        if log.exists() and log.read_text().startswith("start"):
            return time.monotonic()
        time.sleep(0.01)
    raise RuntimeError(f"no step started (see {folder})")


def _after_kill(url: str, made: list[tuple[Any, str, str]], killed: datetime) -> tuple[float, float, dict[str, int]]:
    """From the runs' records: seconds from the kill to the last run's end, to the last taken-over run's end
    (0 when none was), and each run's `attempt` (claimed more than once: taken over, a step may have run twice)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT run_id, updated_at, attempt FROM agentmap_runs WHERE run_id = ANY(%s)", ([m[2] for m in made],)
        ).fetchall()
    ends = {run_id: (datetime.fromisoformat(at) - killed).total_seconds() for run_id, at, _ in rows}
    attempts = {run_id: attempt for run_id, _, attempt in rows}
    moved = {run_id for run_id, attempt in attempts.items() if attempt > 1}
    return max(ends.values(), default=0.0), max((ends[r] for r in moved), default=0.0), attempts


def _beyond_the_rule(repeated: list[str], made: list[tuple[Any, str, str]], moved: set[str]) -> dict[str, int]:
    """Nodes run again that the rule does not allow, per run topic: only the step in flight at the kill of a run
    taken over (its record says so) may run twice, so a second one in the same run, or any in a run not taken
    over, counts."""
    run_of = {f"r{i}": run_id for i, (_, _, run_id) in enumerate(made)}
    per_run = Counter(key.split()[1] for key in repeated)  # key: "<node> <topic>"
    beyond = {topic: count - 1 if run_of[topic] in moved else count for topic, count in per_run.items()}
    return {topic: count for topic, count in beyond.items() if count}


def _explain(
    folder: Path, topic: str, run_id: str, attempt: int, repeated: list[str], killed: float, names: dict[int, str]
) -> str:
    """One run beyond the rule: its side-file lines (node, replica, seconds from the kill), the nodes run again."""
    lines = [line.split() for line in (folder / "steps.log").read_text().splitlines()]
    mine = [f"{w[0]} {w[1]} {names.get(int(w[3]), w[3])} {float(w[4]) - killed:+.2f}" for w in lines if w[2] == topic]
    again = sorted(key.split()[0] for key in repeated if key.split()[1] == topic)
    return f"    {topic} {run_id} attempt {attempt}, again: {' '.join(again)}\n      " + "\n      ".join(mine)


def _checkpoints(url: str, thread_id: str) -> str:
    """The thread's checkpoints in the order they were written: step, the run that wrote it, the tasks' writes
    saved against it (to tell which step a replica continuing the run found saved)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT c.metadata->>'step', c.metadata->>'run_id', c.checkpoint_id, "
            "(SELECT count(DISTINCT w.task_id) FROM checkpoint_writes w WHERE w.thread_id = c.thread_id "
            "AND w.checkpoint_id = c.checkpoint_id) FROM checkpoints c WHERE c.thread_id = %s ORDER BY c.checkpoint_id",
            (thread_id,),
        ).fetchall()
    lines = [f"checkpoint step {step} run {run[:8]} {cid} tasks written {n}" for step, run, cid, n in rows]
    return "\n      ".join(lines)


def _kill_trial(args: argparse.Namespace, url: str, rng: random.Random) -> tuple[bool, float, int, int, int]:
    """One trial: three replicas, `--runs` runs (sent at once to the two that live on, claimed by all three
    from the queue), the first killed with kill -9 at a random moment between the first step's start and the
    runs' expected end. Returns (every run a success, seconds from the kill to the end of the last run taken
    over, nodes ended before the kill that ran again, runs taken over, re-runs beyond the rule)."""
    from concurrent.futures import ThreadPoolExecutor

    folder = _project(args.steps)
    servers = [Server(folder, url, args.wait, "--lease", f"{args.lease}s").start() for _ in range(3)]
    pool = ThreadPoolExecutor(8)
    created = time.monotonic()
    making = [pool.submit(_create, [servers[1 + i % 2]], 1, i) for i in range(args.runs)]
    first = _first_start(folder)
    span = args.steps * args.wait * -(-args.runs // (3 * _SERVE_WORKERS))  # one replica's share, in waves
    kill_at = rng.uniform(0, span)
    time.sleep(max(0.0, first + kill_at - time.monotonic()))
    servers[0].stop(signal.SIGKILL)
    killed = datetime.now(UTC)
    ended = _ended(folder)
    made = [m for f in making for m in f.result()]
    creating = time.monotonic() - created
    statuses = [s for part in pool.map(lambda m: _join_all(servers[1:2], [m]), made) for s in part]
    pool.shutdown()
    last, last_moved, attempts = _after_kill(url, made, killed)
    moved = {run_id for run_id, attempt in attempts.items() if attempt > 1}
    repeated = _repeated(folder, ended)
    beyond_runs = _beyond_the_rule(repeated, made, moved)
    beyond = sum(beyond_runs.values())
    names = {s.proc.pid: ("killed" if i == 0 else f"replica{i}") for i, s in enumerate(servers) if s.proc}
    print(
        f"  trial: killed {kill_at:.2f}s after the first step (of {span:.2f}s; the {len(made)} runs were sent "
        f"in {creating:.1f}s): {statuses.count('success')}/{len(made)} success; last run ended {last:.1f}s after "
        f"the kill, last run taken over {last_moved:.1f}s; nodes ended before it that ran again: {len(repeated)} "
        f"({beyond} beyond the step in flight of a run taken over); runs taken over (a step may have run twice): "
        f"{len(moved)}"
    )
    for topic in beyond_runs:  # each run beyond the rule: what ran where, and when against the kill
        run_id = made[int(topic[1:])][2]
        print(_explain(folder, topic, run_id, attempts[run_id], repeated, killed.timestamp(), names))
        print(f"      {_checkpoints(url, made[int(topic[1:])][1])}")
    for server in servers[1:]:
        server.stop()
    return statuses.count("success") == len(made), last_moved, len(repeated), len(moved), beyond


def kill_one(args: argparse.Namespace, new_db: Any, server_url: str) -> None:
    rng = random.Random(args.seed)
    trials = [_kill_trial(args, new_db(server_url), rng) for _ in range(args.trials)]
    print(
        f"kill one of three (PostgreSQL, lease {args.lease}s, {args.trials} trials, seed {args.seed}): "
        f"{sum(t[0] for t in trials)}/{len(trials)} trials with every run a success; worst end of a run taken "
        f"over: {max(t[1] for t in trials):.1f}s after the kill (lease + 5 s = {args.lease + 5:.1f}s); nodes that "
        f"ran again: {sum(t[2] for t in trials)} ({sum(t[4] for t in trials)} beyond the step in flight of a run "
        f"taken over); runs taken over (a step may have run twice): {sum(t[3] for t in trials)}"
    )


def _rate(servers: list[Server], runs: int) -> float:
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:  # clients send at once, as a load balancer would pass them on
        made = [m for part in pool.map(lambda i: _create([servers[i % len(servers)]], 1), range(runs)) for m in part]
        statuses = list(pool.map(lambda m: _join_all([servers[0]], [m])[0], made))
    assert statuses.count("success") == runs, statuses
    return runs / (time.monotonic() - started)


def scale(args: argparse.Namespace, new_db: Any, server_url: str) -> None:
    ratios, pg_vs_sqlite = [], []
    for _ in range(args.rounds):
        folder = _project(args.steps)
        one = [Server(folder, new_db(server_url), args.wait, "--workers", str(args.workers)).start()]
        three_db = new_db(server_url)
        three = [Server(folder, three_db, args.wait, "--workers", str(args.workers)).start() for _ in range(3)]
        lite = [Server(folder, str(folder / "lite.db"), args.wait, "--workers", str(args.workers)).start()]
        r1, r3, rl = _rate(one, args.runs), _rate(three, args.runs), _rate(lite, args.runs)
        ratios.append(r3 / r1)
        pg_vs_sqlite.append(r1 / rl)
        print(f"  round: one {r1:.2f} runs/s, three {r3:.2f}, one on SQLite {rl:.2f}")
        for server in one + three + lite:
            server.stop()
    print(f"scale three/one: {_stats(ratios)};  PostgreSQL/SQLite (one replica): {_stats(pg_vs_sqlite)}")


def _first_update(url: str, thread_id: str, run_id: str, seen: dict[str, float]) -> None:
    for part in get_sync_client(url=url, api_key=None).runs.join_stream(thread_id, run_id, stream_mode="updates"):
        if part.event == "updates" and "b" not in seen:
            seen["b"] = time.monotonic()


def first_event(args: argparse.Namespace, url: str) -> None:
    folder = _project(args.steps)
    a, b = (Server(folder, url, args.wait).start() for _ in range(2))
    on_a = get_sync_client(url=a.url, api_key=None)
    delays = []
    for i in range(max(1, args.runs // 2)):
        tid = on_a.threads.create()["thread_id"]
        seen: dict[str, float] = {}
        follower: threading.Thread | None = None
        for part in on_a.runs.stream(tid, "Steps", input={"topic": f"f{i}"}, stream_mode="updates"):
            if part.event == "metadata" and follower is None:
                follower = threading.Thread(target=_first_update, args=(b.url, tid, part.data["run_id"], seen))
                follower.start()
            if part.event == "updates" and "a" not in seen:
                seen["a"] = time.monotonic()
        if follower is not None:
            follower.join(30)
        if "a" in seen and "b" in seen:
            delays.append((seen["b"] - seen["a"]) * 1000)
    print(f"first event on another replica, ms after its own stream: {_stats(delays)}")
    a.stop()
    b.stop()


def _stats(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"min {min(values):.2f} / median {statistics.median(values):.2f} / max {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--wait", type=float, default=0.2)
    parser.add_argument("--lease", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=2, help="per replica, in the scale measure")
    parser.add_argument("--trials", type=int, default=1, help="kill trials, each at a random moment")
    parser.add_argument("--seed", type=int, default=None, help="for the kill moments")
    parser.add_argument("--durability", choices=["sync", "async", "exit"], default=None, help="every server's")
    parser.add_argument("--only", choices=["restart", "kill", "first", "scale"], default=None)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    if args.durability:
        _SERVE_OPTIONS.extend(["--durability", args.durability])
    spec = importlib.util.spec_from_file_location("pg", ROOT / "tests" / "runtime" / "pg.py")
    assert spec is not None and spec.loader is not None
    sys.path.insert(0, str(ROOT / "tests"))
    pg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pg)
    if args.only in (None, "restart"):
        restart(args)
    with pg.server(pg.binaries()) as server_url:
        if args.only in (None, "kill"):
            kill_one(args, pg.new_database, server_url)
        if args.only in (None, "first"):
            first_event(args, pg.new_database(server_url))
        if args.only in (None, "scale"):
            scale(args, pg.new_database, server_url)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
