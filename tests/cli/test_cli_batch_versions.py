"""`agentmap batch --checkpoint` run again after the workflow was edited: each unfinished row goes on at the revision
it started on and new rows run the file as it is, said in the summary; `--latest` moves the unfinished rows to the
file as it is when that is safe, and a row whose move is not safe fails saying why, its thread untouched."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from cli_helpers import agentmap

import agentmap as api

APPROVE = '"{""interaction_type"": ""approval""}"'
HEADER = "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
A = HEADER + (
    f"Purchase,Review,human,Approve the purchase of {{request}}?,{APPROVE},request,approved,Report\n"
    "Purchase,Report,template,Purchase of {request} approved: {approved},,request|approved,report,Notify\n"
    "Purchase,Notify,template,Told the team about {request},,request,note,\n"
)
B = HEADER + (  # Review renamed Approval, Notify removed, Report reads a new input
    f"Purchase,Approval,human,Approve the purchase of {{request}}?,{APPROVE},request,approved,Report\n"
    "Purchase,Report,template,Purchase of {request} for {cost_center} approved: {approved},,"
    "request|approved|cost_center,report,\n"
)
SAFE = A.replace("Told the team about", "Wrote to the team about")  # a prompt of a node still to run


def _batch(folder: Path, *more: str) -> tuple[int, dict[str, Any], str]:
    done = agentmap(
        "batch",
        folder / "purchase.csv",
        "-i",
        folder / "rows.csv",
        "-o",
        folder / "out.csv",
        "--checkpoint",
        folder / "runs.db",
        "--id-column",
        "id",
        "--json",
        *more,
    )
    return done.code, json.loads(done.out), done.err


def _rows(folder: Path) -> dict[str, dict[str, str]]:
    with (folder / "out.csv").open(encoding="utf-8", newline="") as table:
        return {row["id"]: row for row in csv.DictReader(table)}


def _waiting_at(folder: Path, thread: str) -> tuple[str, ...]:
    app = api.compile(folder / "purchase.csv", checkpointer=str(folder / "runs.db"))
    return tuple(app.thread(thread).snapshot().next)


def _started(tmp_path: Path) -> Path:
    (tmp_path / "purchase.csv").write_text(A, encoding="utf-8")
    (tmp_path / "rows.csv").write_text("id,request\nr1,a desk\nr2,a lamp\nr3,a rug\n", encoding="utf-8")
    code, summary, _ = _batch(tmp_path)
    assert code == 1 and summary["failed"] == 3  # each row waits on its question
    return tmp_path


def test_a_rerun_after_an_edit_goes_on_at_each_rows_revision_and_runs_new_rows_on_the_new_one(tmp_path: Path) -> None:
    folder = _started(tmp_path)
    first = api.compile(folder / "purchase.csv").revision
    assert first is not None
    (folder / "purchase.csv").write_text(B, encoding="utf-8")
    with (folder / "rows.csv").open("a", encoding="utf-8") as rows:
        rows.write("r4,a pen\n")

    code, summary, said = _batch(folder, "--redo-failed", "--missing-inputs", "warn")  # B's cost_center: no column
    assert summary["on_earlier_revisions"] == {first.id: 3}, summary
    assert summary["moved_to_revision"] == 0 and summary["revision"] != first.id
    assert f"3 unfinished rows went on at the revision they started on ({first.short}: 3)" in said, said
    assert [_waiting_at(folder, r) for r in ("r1", "r2", "r3")] == [("Review",)] * 3  # still revision A's node
    assert _waiting_at(folder, "r4") == ("Approval",)  # a new row runs the file as it is
    assert code == 1 and summary["ran"] == 4
    answered = agentmap("resume", "r2", "yes", "--checkpoint", folder / "runs.db", "--json")
    assert json.loads(answered.out)["state"]["note"] == "Told the team about a lamp"  # finished on revision A


def test_latest_moves_the_rows_it_safely_can_and_fails_the_others_saying_why(tmp_path: Path) -> None:
    folder = _started(tmp_path)
    (folder / "purchase.csv").write_text(B, encoding="utf-8")
    code, summary, _ = _batch(folder, "--redo-failed", "--latest", "--missing-inputs", "warn")
    assert code == 1 and summary["moved_to_revision"] == 0 and summary["failed"] == 3
    error = _rows(folder)["r2"]["error"]
    assert "needs a migration map" in error and "'Review', where it waits, was renamed 'Approval'" in error, error
    assert _waiting_at(folder, "r2") == ("Review",)  # untouched: it can still finish on its own revision

    (folder / "purchase.csv").write_text(SAFE, encoding="utf-8")
    code, summary, said = _batch(folder, "--redo-failed", "--latest")
    assert summary["moved_to_revision"] == 3 and summary["on_earlier_revisions"] == {}, summary
    assert "3 unfinished rows moved to the file as it is now" in said, said
    resumed = agentmap("resume", "r3", "yes", "--checkpoint", folder / "runs.db", "--json")
    assert resumed.code == 0, resumed.err
    assert json.loads(resumed.out)["state"]["note"] == "Wrote to the team about a rug"


def test_latest_without_a_checkpoint_is_refused(tmp_path: Path) -> None:
    (tmp_path / "purchase.csv").write_text(A, encoding="utf-8")
    (tmp_path / "rows.csv").write_text("id,request\nr1,a desk\n", encoding="utf-8")
    refused = agentmap(
        "batch", tmp_path / "purchase.csv", "-i", tmp_path / "rows.csv", "-o", tmp_path / "out.csv", "--latest"
    )
    assert refused.code == 2, refused.err
    assert "give --checkpoint" in refused.err
    assert not (tmp_path / "out.csv").exists()
