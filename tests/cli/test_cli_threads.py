"""`agentmap threads`, `agentmap resume` and `run --thread` in-process: defaults, answers, refusals."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import durable_graphs
import pytest

from agentmap.cli.app import run_cli


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTMAP_CHECKPOINT", raising=False)
    monkeypatch.setenv("TICK_FILE", str(tmp_path / "side.txt"))
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = run_cli([*args, "--json"])
    out, err = capsys.readouterr()
    try:
        return code, json.loads(out), err
    except json.JSONDecodeError:
        return code, out, err


def _paused(capsys: pytest.CaptureFixture[str], folder: Path, thread: str = "p") -> None:
    durable_graphs.approval(folder)
    code, document, err = cli(capsys, "run", "review.csv", "--thread", thread, "--state", '{"count": 0}')
    assert code == 0 and document["status"] == "paused", err


def test_run_thread_saves_in_agentmap_runs_db_and_threads_lists_it(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    durable_graphs.counter(folder, 3)
    code, done, _ = cli(capsys, "run", "counter.csv", "--thread", "t1", "--state", '{"count": 0}')
    assert code == 0 and done["status"] == "done" and done["thread"] == "t1"
    assert (folder / ".agentmap" / "runs.db").is_file()
    _paused(capsys, folder)
    code, listed, _ = cli(capsys, "threads")
    rows = [(t["thread"], t["graph"], t["status"], t["step"]) for t in listed["threads"]]
    assert rows == [("p", "Review", "paused", 1), ("t1", "Count", "done", 3)]
    assert listed["threads"][1]["workflow"] == str((folder / "counter.csv").resolve())


def test_threads_in_a_terminal_is_a_table(
    capsys: pytest.CaptureFixture[str], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _paused(capsys, folder, "t-table")
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert run_cli(["threads"]) == 0
    out = capsys.readouterr().out
    assert "t-table" in out and "Review" in out and "paused" in out
    assert run_cli(["threads", "show", "t-table"]) == 0
    shown = capsys.readouterr().out
    assert "Publish the draft?" in shown and "continue with: agentmap resume t-table" in shown


def test_resume_takes_data_as_json(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    _paused(capsys, folder)
    code, done, err = cli(capsys, "resume", "p", "--data", '{"approved": true, "note": "ok"}')
    assert code == 0, err
    assert done["state"]["decision"] == {"approved": True, "note": "ok"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resume", "p", "yes", "--data", "true"], "give the answer once"),
        (["resume", "p", "--data", "{nope"], "--data is not valid JSON"),
        (["resume", "p", "--durability", "later"], "--durability must be sync, async or exit"),
        (["threads", "show", "zz"], "no thread 'zz'"),
        (["resume", "zz"], "has no thread 'zz'"),
    ],
)
def test_bad_resume_options_exit_2(
    capsys: pytest.CaptureFixture[str], folder: Path, args: list[str], message: str
) -> None:
    _paused(capsys, folder)
    code, _, err = cli(capsys, *args)
    assert code == 2 and message in err and "Traceback" not in err


def test_an_unfinished_thread_is_not_started_over_unless_restart(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    _paused(capsys, folder)
    code, _, err = cli(capsys, "run", "review.csv", "--thread", "p")
    assert code == 2 and "thread 'p' has not finished (it is paused at step 1)" in err
    assert "resume it with `agentmap resume p`, or pass --restart" in err
    code, again, _ = cli(capsys, "run", "review.csv", "--thread", "p", "--restart", "--state", '{"count": 10}')
    assert code == 0 and again["status"] == "paused" and again["state"]["count"] == 11


def test_a_changed_workflow_file_does_not_strand_the_thread(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    _paused(capsys, folder)
    with (folder / "review.csv").open("a", encoding="utf-8") as csv:
        csv.write("# a comment row\n")
    code, done, err = cli(capsys, "resume", "p", "yes")  # no flag: it finishes on the revision it started on
    assert code == 0 and done["state"]["decision"] == {"approved": True}, err


def test_a_missing_workflow_file_still_resumes_on_its_revision(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    _paused(capsys, folder)
    (folder / "review.csv").unlink()
    code, _, err = cli(capsys, "resume", "p", "yes", "--latest")  # there is no file as it is now to move to
    assert code == 3 and "no longer exists" in err
    code, done, err = cli(capsys, "resume", "p", "yes")
    assert code == 0 and done["state"]["decision"] == {"approved": True}, err


def test_agentmap_checkpoint_names_the_store(
    capsys: pytest.CaptureFixture[str], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTMAP_CHECKPOINT", str(folder / "elsewhere.db"))
    _paused(capsys, folder)
    assert (folder / "elsewhere.db").is_file() and not (folder / ".agentmap").exists()
    code, done, err = cli(capsys, "resume", "p", "no")
    assert code == 0 and done["state"]["decision"] == {"approved": False}, err


def test_a_tampered_checkpoint_is_refused_by_resume(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    import sqlite3

    import ormsgpack

    _paused(capsys, folder)
    marker = folder / "pwned"
    with sqlite3.connect(folder / ".agentmap" / "runs.db") as conn:
        (row,) = conn.execute("SELECT checkpoint FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1").fetchall()
        key_size = int.from_bytes(row[0][16:18], "big")  # after its checksum: its key's length, its key, its bytes
        checkpoint = ormsgpack.unpackb(row[0][18 + key_size :], option=ormsgpack.OPT_NON_STR_KEYS)
        checkpoint["channel_values"]["count"] = "SENTINEL"
        raw = ormsgpack.packb(checkpoint, option=ormsgpack.OPT_NON_STR_KEYS)
        forged = raw.replace(
            ormsgpack.packb("SENTINEL"),
            ormsgpack.packb(ormsgpack.Ext(1, ormsgpack.packb(("os", "system", [f"touch {marker}"])))),
            1,
        )
        conn.execute(  # written as a record without a checksum: one with a checksum would not match it
            "UPDATE checkpoints SET checkpoint = ?, type = 'msgpack' WHERE checkpoint_id = "
            "(SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1)",
            (forged,),
        )
    code, _, err = cli(capsys, "resume", "p", "yes")
    assert code == 2 and "error[unsafe-checkpoint]" in err and "os.system" in err and "refused" in err
    assert not marker.exists()


def _flip(folder: Path, table: str, column: str, at: int = 24, count: int = 8) -> None:
    """Flip `count` bytes, from byte `at`, of the newest record of `table` (a disk or copy error)."""
    with sqlite3.connect(folder / ".agentmap" / "runs.db") as conn:
        rowid, blob = conn.execute(
            f"SELECT rowid, {column} FROM {table} ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        damaged = bytearray(blob)
        for i in range(at, min(at + count, len(damaged))):
            damaged[i] ^= 0x5A
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (bytes(damaged), rowid))


def test_flipped_bytes_in_the_latest_checkpoint_are_reported_and_the_last_good_one_continues(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    import re

    _paused(capsys, folder)  # Draft ran (count 1), Review waits
    _flip(folder, "checkpoints", "checkpoint")
    code, _, err = cli(capsys, "resume", "p", "yes")
    assert code == 2 and "error[corrupt-checkpoint]" in err and "thread 'p'" in err and "(step 1)" in err, err
    found = re.search(r"agentmap resume p --from-checkpoint (\S+)", err)
    assert found and "(step 0)" in err, err
    code, _, err = cli(capsys, "threads", "show", "p")
    assert code == 2 and "error[corrupt-checkpoint]" in err  # looking is refused alike, never a wrong status
    code, document, err = cli(capsys, "resume", "p", "--from-checkpoint", found.group(1))
    assert code == 0 and document["status"] == "paused", err  # Draft ran again from step 0; Review asks again
    code, document, err = cli(capsys, "resume", "p", "yes")
    assert code == 0 and document["status"] == "done" and document["state"]["count"] == 2, err


def test_a_damaged_pending_write_is_reported_not_resumed(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    _paused(capsys, folder)
    _flip(folder, "writes", "value", at=16, count=2)
    code, _, err = cli(capsys, "resume", "p", "yes")
    assert code == 2 and "error[corrupt-checkpoint]" in err and "thread 'p'" in err, err


def test_a_damaged_checkpoint_file_is_reported_naming_it(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    _paused(capsys, folder)
    db = folder / ".agentmap" / "runs.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:  # every page in the file itself, none in its log
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    data[:100] = bytes(range(100))  # the file's header overwritten
    db.write_bytes(bytes(data))
    # a new process, as after a restart: this one may still hold the file's pages in its connection
    done = subprocess.run([sys.executable, "-m", "agentmap", "resume", "p", "yes"], capture_output=True, text=True)
    assert done.returncode == 2, done
    assert "error[corrupt-checkpoint]" in done.stderr and "runs.db" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_checkpoint_file_whose_tables_lost_a_column_is_reported_as_damaged(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    _paused(capsys, folder)
    with contextlib.closing(sqlite3.connect(folder / ".agentmap" / "runs.db")) as conn:  # as a flipped schema byte
        conn.execute("ALTER TABLE checkpoints RENAME COLUMN type TO tape")
    code, _, err = cli(capsys, "resume", "p", "yes")
    assert code == 2 and "error[corrupt-checkpoint]" in err and "no such column" in err, err


def test_looking_into_a_folder_without_runs_creates_nothing(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    code, listed, _ = cli(capsys, "threads")
    assert code == 0 and listed == {"threads": []}
    code, _, err = cli(capsys, "resume", "t1")
    runs = folder / ".agentmap" / "runs.db"  # the test's AGENTMAP_STATE_DIR (conftest)
    assert code == 2 and f"no thread 't1': there is no checkpoint file {runs} here" in err
    assert not (folder / ".agentmap").exists()


def test_a_null_answer_resumes_an_input_node(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    (folder / "ask.csv").write_text(
        "GraphName,Node,AgentType,Prompt,Context,Output_Field,Edge\n"
        'Ask,Name,input,Name?,"{""interrupt"": true}",name,\n',
        encoding="utf-8",
    )
    code, paused, _ = cli(capsys, "run", "ask.csv", "--thread", "n")
    assert code == 0 and paused["status"] == "paused"
    code, done, err = cli(capsys, "run", "ask.csv", "--thread", "n", "--resume", "null")
    assert code == 0 and done["status"] == "done" and done["state"].get("name") is None, err
