"""`agentmap batch` records its finished rows in blocks and reads its input once: a `kill -9` between two writes of the
`.partial` file loses only the rows finished since the last one (run again by the same command, or, with
`--checkpoint`, taken from their finished threads without running again), and the input may be a pipe."""

from __future__ import annotations

import collections
import csv
import json
import os
import signal
import threading
import time
from pathlib import Path

import forked
import pytest
from cli_helpers import GRAPHS
from timing import scaled, until

from agentmap.cli import main

_STEP_AGENT = """
import os
import time
from pathlib import Path

from agentmap import BaseAgent


class StepAgent(BaseAgent):
    \"\"\"Doubles `n`, noting each run in effects.log; row HOLD_AT waits (before its effect) until it is killed.\"\"\"

    def process(self, inputs):
        n = int(inputs.get("n"))
        if str(n) == os.environ.get("HOLD_AT"):
            Path("held").touch()
            while True:
                time.sleep(0.05)
        with open("effects.log", "a", encoding="utf-8") as log:
            log.write(f"{n}\\n")
        return n * 2
"""

_BLOCKS_OF_FIVE = """
import sys

from agentmap.batch import _blocks

_blocks.BLOCK_ROWS, _blocks.BLOCK_SECONDS = 5, 3600.0  # a block is written when 5 rows wait, never by time alone
from agentmap.cli import main

sys.exit(main({args!r}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint", [False, True], ids=["plain", "checkpoint"])
def test_a_kill_between_two_writes_runs_again_only_the_rows_held_back_and_with_checkpoints_none(
    tmp_path: Path, checkpoint: bool
) -> None:
    (tmp_path / "custom_agents").mkdir()
    (tmp_path / "custom_agents" / "step.py").write_text(_STEP_AGENT, encoding="utf-8")
    (tmp_path / "flow.csv").write_text("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Step,step,n,double\n")
    (tmp_path / "rows.csv").write_text("n\n" + "".join(f"{n}\n" for n in range(1, 21)), encoding="utf-8")
    args = ["batch", "flow.csv", "-i", "rows.csv", "-o", "out.csv", "--concurrency", "1"]
    args += ["--checkpoint", "runs.db"] if checkpoint else []
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMAP_")}
    # Rows run one after another: row 1 is written as it finishes, rows 2-6 and 7-11 as blocks; rows 12 and 13
    # finish and wait for their block when row 14 holds the batch: the kill comes between two writes.
    first = forked.start_python(_BLOCKS_OF_FIVE.format(args=args), cwd=tmp_path, env={**env, "HOLD_AT": "14"})
    until(lambda: (tmp_path / "held").exists() or first.poll() is not None, 60, "row 14 never started")
    assert first.poll() is None, first.printed()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=scaled(30))
    assert _effects(tmp_path) == collections.Counter(range(1, 14))  # rows 1-13 finished, each once

    code, out, err = forked.run(*args, "--json", cwd=tmp_path, env=env)
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["skipped"], summary["ran"]) == (11, 9)  # rows 12 and 13 were lost with the kill: they ran again
    with (tmp_path / "out.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["n"]) for r in rows] == list(range(1, 21))  # every row once, in input order
    assert all(r["success"] == "true" and int(r["double"]) == 2 * int(r["n"]) for r in rows)
    again = _effects(tmp_path) - collections.Counter(range(1, 21))
    # Without checkpoints the rows held back run again from their start, their effects with them; with them, each
    # took its finished thread's result and ran nothing.
    assert again == (collections.Counter() if checkpoint else collections.Counter([12, 13]))


def _effects(folder: Path) -> collections.Counter[int]:
    """How many times each row made its effect."""
    log = folder / "effects.log"
    return collections.Counter(int(n) for n in log.read_text().split()) if log.exists() else collections.Counter()


def test_the_input_is_read_once_so_it_may_be_a_pipe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = tmp_path / "refunds.csv"
    os.mkfifo(rows)
    done = threading.Event()
    feeder = threading.Thread(target=_feed, args=(rows, (GRAPHS / "data" / "refunds.csv").read_text(), done))
    feeder.start()
    out = tmp_path / "out.csv"
    try:
        code = main(["batch", str(GRAPHS / "batch_example.csv"), "-i", str(rows), "-o", str(out), "--json"])
    finally:
        done.set()
        feeder.join(timeout=scaled(30))
    assert code == 1, capsys.readouterr().err  # T-104's amount is not a number, as from the file
    summary = json.loads(capsys.readouterr().out)
    assert (summary["rows"], summary["succeeded"], summary["failed"]) == (5, 4, 1)
    with out.open(encoding="utf-8", newline="") as handle:
        written = list(csv.DictReader(handle))
    assert [r["ticket_id"] for r in written] == ["T-101", "T-102", "T-103", "T-104", "T-105"]
    assert written[1]["reply"] == "Dear Grace, your refund is in the Manual review for 250 EUR."


def _feed(pipe: Path, text: str, done: threading.Event) -> None:
    """Write `text` into the named pipe for its first reader; a reader that opens it again finds it empty (end of
    file) rather than waiting for ever, so a batch reading its input twice sees no rows the second time."""
    fd = _writer(pipe, done)
    if fd is None:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    while not done.is_set():
        fd = _writer(pipe, done)
        if fd is not None:
            os.close(fd)


def _writer(pipe: Path, done: threading.Event) -> int | None:
    """The pipe opened for writing once a reader has it open (None when `done` first)."""
    while not done.is_set():
        try:
            fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader yet
            time.sleep(0.01)
            continue
        os.set_blocking(fd, True)
        return fd
    return None


@pytest.mark.parametrize("extension", [".parquet", ".xlsx"])
def test_a_pipe_of_a_table_read_from_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extension: str
) -> None:
    rows = tmp_path / f"rows{extension}"
    os.mkfifo(rows)
    assert main(["batch", str(GRAPHS / "batch_example.csv"), "-i", str(rows), "-o", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert f"is a pipe, and a {extension} table is read from a file" in err and "Traceback" not in err
