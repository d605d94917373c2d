"""`agentmap batch`: the README example, the JSON summary, exit codes, resume after kill -9, the progress bar."""

from __future__ import annotations

import csv
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import forked
import pytest
from cli_helpers import GRAPHS, ROOT, agentmap_tty
from components import clean_env
from timing import deadline, scaled, until

from agentmap.cli import main

EXAMPLE = GRAPHS / "batch_example.csv"
REFUNDS = GRAPHS / "data" / "refunds.csv"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_readme_example(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (line,) = [line for line in readme.splitlines() if line.startswith("agentmap batch graphs/")]
    monkeypatch.chdir(ROOT)
    out = tmp_path / "results.csv"
    code = main([str(out) if a == "results.csv" else a for a in shlex.split(line)[1:]])
    err = capsys.readouterr().err
    assert "ERROR" not in err  # the failure is in its row, not in a log line
    assert code == 1  # T-104's amount is not a number: that row fails, the others do not
    assert "5 rows ran: 4 succeeded, 1 failed" in err and "rerun them with --redo-failed" in err
    rows = _rows(out)
    assert [r["ticket_id"] for r in rows] == ["T-101", "T-102", "T-103", "T-104", "T-105"]
    assert rows[1]["reply"] == "Dear Grace, your refund is in the Manual review for 250 EUR."
    assert rows[3]["success"] == "false" and "could not convert string to float" in rows[3]["error"]
    # Run again: done rows are skipped, and the failed row is still failed in the output, so the exit code is
    # the one the first run had.
    assert main(["batch", str(EXAMPLE), "-i", str(REFUNDS), "-o", str(out), "--id-column", "ticket_id"]) == 1
    err = capsys.readouterr().err
    assert "0 rows ran" in err and "1 row failed, 1 of them in an earlier run" in err and "--redo-failed" in err


def test_json_summary_and_outputs_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.jsonl"
    args = ["batch", str(EXAMPLE), "-i", str(REFUNDS), "-o", str(out), "--outputs", "reply", "--json"]
    assert main(args) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["graph"] == "Refunds" and summary["exit_code"] == 1
    assert (summary["rows"], summary["succeeded"], summary["failed"], summary["skipped"]) == (5, 4, 1, 0)
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert list(first) == [
        *("ticket_id", "customer", "amount", "reply", "success", "error", "failed_nodes", "duration_s"),
        *("tokens_in", "tokens_out", "tokens_cached", "cost", "row_id"),
    ]
    assert main([*args, "--redo-failed"]) == 1
    assert json.loads(capsys.readouterr().out)["ran"] == 1


@pytest.mark.parametrize(
    ("extra", "code", "words"),
    [
        (["-i", "missing.csv", "-o", "out.csv"], 3, "does not exist"),
        (["-i", "{refunds}", "-o", "out.txt"], 2, "unsupported extension"),
        (["-o", "out.csv"], 2, "--input is required"),
        (["-i", "{refunds}", "-o", "out.csv", "--map", "nope"], 2, "--map column=state_key"),
        (["-i", "{refunds}", "-o", "out.csv", "--rate-limit", "lots"], 2, "bad rate limit"),
        (["-i", "{refunds}", "-o", "out.csv", "--executor", "gpu"], 2, "unknown executor"),
        (["-i", "{refunds}", "-o", "out.csv", "--id-column", "nope"], 2, "no id column 'nope'"),
    ],
)
def test_mistakes_exit_with_their_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], code: int, words: str
) -> None:
    args = [a.format(refunds=REFUNDS) for a in extra]
    args = [str(tmp_path / a) if a.endswith((".csv", ".txt")) and "/" not in a else a for a in args]
    assert main(["batch", str(EXAMPLE), *args]) == code
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_a_workflow_that_does_not_validate_exits_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("GraphName,Node,AgentType\nG,A,nosuchtype\n", encoding="utf-8")
    assert main(["batch", str(bad), "-i", str(REFUNDS), "-o", str(tmp_path / "o.csv")]) == 4
    assert main(["batch", str(tmp_path / "none.csv"), "-i", str(REFUNDS), "-o", str(tmp_path / "o.csv")]) == 3
    capsys.readouterr()


def test_a_row_that_does_not_fit_the_header_exits_2_unless_lenient(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text('ticket_id,customer,amount\nT-1,Ada,10\nT-2,Grace\nT-3,"Linus,30\nT-4,Ken,40"\n')
    args = ["batch", str(EXAMPLE), "-i", str(rows), "-o", str(tmp_path / "out.csv")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "rows.csv:3: the row has 2 cells but the header names 3" in err and "--lenient" in err
    assert "Traceback" not in err
    assert len((tmp_path / "out.csv.partial").read_text().splitlines()) == 1  # its header: no row ran
    main([*args, "--lenient"])
    err = capsys.readouterr().err
    assert err.count("warning: ") == 2 and "rows.csv:3: the row has 2 cells" in err
    assert "rows.csv:4: the quote opened in column 2 of this row is still open on line 5" in err
    assert [r["ticket_id"] for r in _rows(tmp_path / "out.csv")] == ["T-1", "T-2", "T-3"]


_SLOW_AGENT = """
import time
from agentmap import BaseAgent

class NapAgent(BaseAgent):
    def process(self, inputs):
        time.sleep(0.02)
        with open("runs.log", "a", encoding="utf-8") as log:
            log.write(str(inputs.get("n")) + "\\n")
        return int(inputs.get("n")) * 2
"""


def _slow_batch(folder: Path) -> tuple[list[str], dict[str, str]]:
    """A 200-row batch of 20 ms rows (each logged to runs.log); the command and its environment."""
    (folder / "custom_agents").mkdir()
    (folder / "custom_agents" / "nap.py").write_text(_SLOW_AGENT, encoding="utf-8")
    (folder / "flow.csv").write_text("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Nap,nap,n,double\n")
    (folder / "rows.csv").write_text("n\n" + "".join(f"{i}\n" for i in range(200)), encoding="utf-8")
    command = [sys.executable, "-m", "agentmap", "batch", "flow.csv", "-i", "rows.csv", "-o", "out.csv"]
    env = clean_env()
    return [*command, "--concurrency", "4", "--json"], env


def _start_and_stop(
    folder: Path, command: list[str], env: dict[str, str], sig: int, whom: Callable[[int], int] = lambda pid: pid
) -> tuple[int, str, str]:
    """Start the batch, send `sig` once its .partial file holds 30 rows; exit code, stdout and stderr.

    `whom`: the process to send it to, from the command's pid (default: the command).
    """
    out, err = folder / "stdout.txt", folder / "stderr.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:  # files, not pipes: a leftover worker cannot block us
        proc = subprocess.Popen(command, cwd=folder, env=env, stdout=stdout, stderr=stderr)
    partial = folder / "out.csv.partial"
    give_up = deadline(60)
    while time.monotonic() < give_up and (not partial.exists() or len(partial.read_bytes().splitlines()) < 31):
        time.sleep(0.02)
    os.kill(whom(proc.pid), sig)
    code = proc.wait(timeout=scaled(60))
    return code, out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8")


@pytest.mark.slow
def test_resume_after_kill_9_loses_no_row_and_repeats_none(tmp_path: Path) -> None:
    command, env = _slow_batch(tmp_path)
    _start_and_stop(tmp_path, command, env, signal.SIGKILL)
    kept = len((tmp_path / "out.csv.partial").read_bytes().splitlines()) - 1  # less the header line
    assert 30 <= kept < 200 and not (tmp_path / "out.csv").exists()
    ran_before = len((tmp_path / "runs.log").read_text().split())
    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=scaled(120))
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["skipped"] >= kept - 1 and summary["skipped"] + summary["ran"] == 200
    rows = _rows(tmp_path / "out.csv")
    assert [int(r["n"]) for r in rows] == list(range(200))  # every row once, in input order
    assert all(int(r["double"]) == 2 * int(r["n"]) and r["success"] == "true" for r in rows)
    runs = (tmp_path / "runs.log").read_text().split()
    assert len(runs) - ran_before == summary["ran"]  # the second run ran only what was not recorded


def _processes_in(folder: Path) -> list[int]:
    """Processes whose working directory is `folder` (a batch's leftover workers would be)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cwd").resolve() == folder.resolve():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _gone(folder: Path, within: float = 30.0) -> list[int]:
    """The processes still working in `folder` once they have all ended, or when `within` seconds have passed."""
    give_up = deadline(within)
    while (left := _processes_in(folder)) and time.monotonic() < give_up:
        time.sleep(0.05)
    return left


@pytest.mark.slow
def test_kill_9_of_a_process_batch_leaves_no_worker_behind(tmp_path: Path) -> None:
    command, env = _slow_batch(tmp_path)
    command += ["--executor", "process", "--workers", "2", "--chunk-size", "2"]
    _start_and_stop(tmp_path, command, env, signal.SIGKILL)
    # Workers, the fork server and the resource tracker end by themselves once the command is gone.
    assert _gone(tmp_path) == []
    # ... and say nothing on the terminal the command had (the tracker warned of leaked semaphores).
    err = (tmp_path / "stderr.txt").read_text(encoding="utf-8")
    assert "Warning" not in err and "Traceback" not in err, err


def _resource_tracker(pid: int) -> int:
    """The multiprocessing resource tracker that the process `pid` started."""
    for entry in Path("/proc").iterdir():
        try:
            child = entry.name.isdigit() and (entry / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(pid)
            if child and b"resource_tracker" in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except OSError:
            continue
    raise AssertionError(f"process {pid} has no resource tracker")


@pytest.mark.slow
def test_a_killed_resource_tracker_prints_no_traceback(tmp_path: Path) -> None:
    command, env = _slow_batch(tmp_path)
    command += ["--executor", "process", "--workers", "2", "--chunk-size", "2"]
    code, out, err = _start_and_stop(tmp_path, command, env, signal.SIGKILL, whom=_resource_tracker)
    assert code == 0 and json.loads(out)["ran"] == 200
    assert "Traceback" not in err and "Warning" not in err, err
    assert _gone(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["thread", "process"])
def test_ctrl_c_keeps_finished_rows_and_says_how_to_continue(tmp_path: Path, executor: str) -> None:
    command, env = _slow_batch(tmp_path)
    command += ["--executor", executor, "--workers", "2", "--chunk-size", "2"]
    code, out, err = _start_and_stop(tmp_path, command, env, signal.SIGINT)
    assert code == 130, err
    assert "run the same command again to continue" in err and "Traceback" not in err
    assert json.loads(out)["interrupted"] is True
    assert _processes_in(tmp_path) == []  # the command waited for its workers: none is left behind
    # the rows kept: a block the Ctrl-C stopped while it was synced is written again at the stop (its rows twice)
    kept = len({json.loads(line)["row_id"] for line in (tmp_path / "out.csv.partial").read_bytes().splitlines()[1:]})
    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=scaled(120))
    assert again.returncode == 0 and json.loads(again.stdout)["skipped"] == kept
    assert [int(r["n"]) for r in _rows(tmp_path / "out.csv")] == list(range(200))


_SLOW_FORK_SERVER = """
import time

with open("/proc/self/cmdline", "rb") as command:
    if b"multiprocessing.forkserver" in command.read():  # the pool's fork server: a start that takes seconds
        time.sleep(8)
"""


def _described(pid: int) -> str:
    """`pid`, its parent and its command line (what a test found left behind)."""
    try:
        parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return f"{pid} (ended meanwhile)"
    return f"{pid} (parent {parent}): {line[:200]}"


def _fork_server_of(pid: int) -> int | None:
    """The multiprocessing fork server that the process `pid` started, once it runs."""
    for entry in Path("/proc").iterdir():
        try:
            child = entry.name.isdigit() and (entry / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(pid)
            if child and b"multiprocessing.forkserver" in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except OSError:
            continue
    return None


@pytest.mark.slow
def test_ctrl_c_while_the_fork_server_starts_leaves_no_process_behind(tmp_path: Path) -> None:
    """Ctrl-C before the process pool has its first worker: the fork server is still importing what it preloads
    (made to take seconds here, as on a busy machine). It would have gone on for seconds after the command
    exited (before: the command waited 5 s for it, then left it running)."""
    command, env = _slow_batch(tmp_path)
    command += ["--executor", "process", "--workers", "2", "--chunk-size", "2"]
    (tmp_path / "slow_start").mkdir()
    (tmp_path / "slow_start" / "sitecustomize.py").write_text(_SLOW_FORK_SERVER, encoding="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "slow_start"), env.get("PYTHONPATH")]))
    with (tmp_path / "stderr.txt").open("wb") as stderr:
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        until(lambda: _fork_server_of(proc.pid), 60, "the batch never started its fork server")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=scaled(60)) == 130, (tmp_path / "stderr.txt").read_text(encoding="utf-8")
        left = [_described(pid) for pid in _processes_in(tmp_path)]
        assert left == [], (tmp_path / "stderr.txt").read_text(encoding="utf-8")  # none is left to end later
    finally:
        for pid in _processes_in(tmp_path):
            os.kill(pid, signal.SIGKILL)


_EXIT_AGENT = """
import os
from agentmap import BaseAgent

class QuitAgent(BaseAgent):
    def process(self, inputs):
        if inputs.get("n") == "3" and os.environ.get("QUIT") == "yes":
            os._exit(9)
        return int(inputs.get("n")) * 2
"""


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["thread", "async"])
def test_a_row_that_calls_os_exit_stops_the_batch_with_exit_5(tmp_path: Path, executor: str) -> None:
    (tmp_path / "custom_agents").mkdir()
    (tmp_path / "custom_agents" / "quit.py").write_text(_EXIT_AGENT, encoding="utf-8")
    (tmp_path / "flow.csv").write_text("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Q,quit,n,double\n")
    (tmp_path / "rows.csv").write_text("n\n1\n2\n3\n4\n", encoding="utf-8")
    args = ["batch", "flow.csv", "-i", "rows.csv", "-o", "out.csv", "--executor", executor, "--concurrency", "1"]
    env = clean_env()
    code, _, err = forked.run(*args, cwd=tmp_path, env={**env, "QUIT": "yes"})
    assert code == 5, err
    assert "error[row-exited]: row 3 called os._exit(9)" in err and "Traceback" not in err
    journal = (tmp_path / "out.csv.partial").read_text(encoding="utf-8").splitlines()
    assert len(journal) == 3  # its header and the rows before the third: kept for the next run
    code, _, err = forked.run(*args, "--json", cwd=tmp_path, env=env)
    assert code == 0, err
    assert [int(r["double"]) for r in _rows(tmp_path / "out.csv")] == [2, 4, 6, 8]


@pytest.mark.slow
def test_progress_bar_in_a_terminal(tmp_path: Path) -> None:
    result = agentmap_tty("batch", EXAMPLE, "-i", REFUNDS, "-o", tmp_path / "o.csv", cwd=ROOT)
    assert result.code == 1
    assert "5/5" in result.plain and "1 failed" in result.plain and "rows/s" in result.plain


def test_a_table_lacking_an_input_column_is_refused_before_any_row_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("ticket_id,custmer,amount\nT-1,Ada,10\nT-2,Grace,20\nT-3,Linus,30\n")
    assert main(["batch", str(EXAMPLE), "-i", str(rows), "-o", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert "error[missing-state]" in err and "the initial state has no 'customer'" in err
    assert "did you mean 'customer'?" in err and "--missing-inputs warn" in err
    assert not (tmp_path / "out.csv").exists()
    assert len((tmp_path / "out.csv.partial").read_text().splitlines()) == 1  # its header: no row ran


def test_a_table_lacking_an_input_column_warns_once_on_stderr_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("ticket_id,custmer,amount\nT-1,Ada,10\nT-2,Grace,20\nT-3,Linus,30\n")
    out = str(tmp_path / "out.csv")
    assert main(["batch", str(EXAMPLE), "-i", str(rows), "-o", out, "--missing-inputs", "warn"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: ") == 1, err
    assert "the initial state has no 'customer'" in err and "did you mean 'customer'?" in err


def test_the_progress_bars_eta_is_the_rows_left_at_the_batchs_own_rate() -> None:
    """Rows finishing together (concurrent rows) made rich's own estimate `ETA 0:00:03` with 368 of 400 rows left
    at 4 rows/s; the bar's ETA is the rows left at the rate shown."""
    from rich.console import Console

    from agentmap.batch import RowResult
    from agentmap.cli._batch_progress import BarProgress

    now = [0.0]
    out = Console(record=True, width=200, force_terminal=True)
    bar = BarProgress(clock=lambda: now[0], console=out)
    bar.start(400, 0)
    now[0] = 7.9
    for number in range(1, 33):  # 32 rows end within a tenth of a second, 8 s after the start: 4 rows/s
        now[0] += 0.003
        bar.advance(RowResult(number, str(number), {}, True))
    bar.stop()
    shown = out.export_text()
    assert "32/400" in shown and "4.0 rows/s" in shown
    assert "ETA 0:01:32" in shown  # 368 rows at 4 rows/s
