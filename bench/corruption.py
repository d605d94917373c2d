"""Damaged checkpoints: what `resume` does with a half-finished SQLite thread whose bytes were flipped.

Each trial runs a six-node chain to a stop before its fourth node (`--thread`, SQLite), damages the file, and
resumes it in the same way `agentmap resume` does (`CompiledWorkflow.resume`, a fresh connection):
* `latest`: 8 bytes flipped in the latest checkpoint's record (the measurement of issue 24);
* `file`: `--flips` random bytes flipped anywhere in the database file (its log folded in first).
Each outcome is one of: `detected` (corrupt-checkpoint, naming what to do), `correct` (the run finished with
the right state: the damage hit bytes nobody reads), `error` (another located AgentMap error), and the two that
must never happen: `WRONG` (a result other than the right one) and `internal` (an unexpected exception).
Run: `python bench/corruption.py [--trials 50] [--flips 8] [--seed 1]`.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import random
import sqlite3
import tempfile
from pathlib import Path

import agentmap
from agentmap.errors import AgentMapError
from agentmap.runtime.checkpoint import CorruptCheckpointError

_CSV = "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\n" + "".join(
    f"Chain,N{i},echo,{'x' if i == 1 else f'a{i - 1}'},a{i},{f'N{i + 1}' if i < 6 else ''}\n" for i in range(1, 7)
)


def _trial(folder: Path, mode: str, flips: int, rng: random.Random) -> str:
    workflow = folder / "chain.csv"
    workflow.write_text(_CSV, encoding="utf-8")
    db = folder / "runs.db"
    app = agentmap.compile(workflow, checkpointer=str(db), interrupt_before=["N4"])
    app.invoke({"x": "v"}, {"configurable": {"thread_id": "t"}})
    del app
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if mode == "latest":
            newest = "SELECT rowid, checkpoint FROM checkpoints ORDER BY checkpoint_id DESC"
            rowid, blob = conn.execute(newest).fetchone()
            at = rng.randrange(0, max(1, len(blob) - 8))
            damaged = bytearray(blob)
            for i in range(at, at + 8):
                damaged[i] ^= rng.randrange(1, 256)
            conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?", (bytes(damaged), rowid))
            conn.commit()
    if mode == "file":
        data = bytearray(db.read_bytes())
        for _ in range(flips):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        db.write_bytes(bytes(data))
    try:
        result = agentmap.compile(workflow, checkpointer=str(db)).resume("t")
    except CorruptCheckpointError:
        return "detected"
    except AgentMapError:
        return "error"
    except Exception:
        return "internal"
    ran = [n.name for n in result.summary if not n.metadata.get("before_resume")]
    expected = agentmap.compile(workflow).invoke({"x": "v"}).state  # the same chain, run whole without a thread
    return "correct" if result.success and result.state == expected and ran == ["N4", "N5", "N6"] else "WRONG"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--flips", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    for mode in ("latest", "file"):
        outcomes: collections.Counter[str] = collections.Counter()
        for _ in range(args.trials):
            with tempfile.TemporaryDirectory() as tmp:
                outcomes[_trial(Path(tmp), mode, args.flips, rng)] += 1
        shown = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        bad = outcomes["WRONG"] + outcomes["internal"]
        print(f"{mode:<7} {args.trials} trials: {shown}  ({'OK' if not bad else 'FAILED'}: {bad} wrong or internal)")


if __name__ == "__main__":
    main()
