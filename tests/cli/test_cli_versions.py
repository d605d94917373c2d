"""`agentmap diff`, `agentmap resume --latest / --migrate` and the revision in `agentmap threads`, in-process."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentmap.cli.app import run_cli

APPROVAL = (
    "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
    'Purchase,Review,human,Approve the purchase of {request}?,"{""interaction_type"": ""approval""}",request,approved,'
    "Report\n"
    "Purchase,Report,template,Purchase of {request} approved: {approved},,request|approved,report,\n"
)
EDITED = (  # Review renamed Approval; the report reads a new input no node writes
    APPROVAL.replace("Purchase,Review,", "Purchase,Approval,")
    .replace("Purchase of {request} approved", "Purchase of {request} for {cost_center} approved")
    .replace("request|approved,report", "request|approved|cost_center,report")
)


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTMAP_CHECKPOINT", raising=False)
    (tmp_path / "approval.csv").write_text(APPROVAL, encoding="utf-8")
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = run_cli([*args, "--json"])
    out, err = capsys.readouterr()
    try:
        return code, json.loads(out), err
    except json.JSONDecodeError:
        return code, out, err


def _waiting(capsys: pytest.CaptureFixture[str], *threads: str, state: str = '{"request": "a desk"}') -> None:
    for thread in threads:
        code, paused, err = cli(capsys, "run", "approval.csv", "--thread", thread, "--state", state)
        assert code == 0 and paused["status"] == "paused", err


def test_threads_shows_each_revision_and_whether_it_is_behind(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    _waiting(capsys, "p1")
    code, listed, _ = cli(capsys, "threads")
    (before,) = listed["threads"]
    assert code == 0 and len(before["revision"]) == 64 and before["behind"] is False
    (folder / "approval.csv").write_text(EDITED, encoding="utf-8")
    _, listed, _ = cli(capsys, "threads")
    (after,) = listed["threads"]
    assert (after["revision"], after["behind"], after["status"], after["next"]) == (
        before["revision"],
        True,
        "paused",
        ["Review"],  # told by its own revision: the edit has no Review
    )


def test_an_approval_edited_while_it_waits_finishes_on_its_revision_or_moves_with_a_map(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    _waiting(capsys, "p1", "p2")
    (folder / "approval.csv").write_text(EDITED, encoding="utf-8")
    code, done, err = cli(capsys, "resume", "p1", "yes")
    assert code == 0 and done["state"]["report"] == "Purchase of a desk approved: True", err
    assert [e["name"] for e in done["summary"]] == ["Review", "Report"]

    code, diff, _ = cli(capsys, "diff", "--thread", "p2")
    assert code == 1 and diff["verdict"] == "needs-migration" and diff["thread"] == "p2"
    assert {c["kind"] for c in diff["changes"]} == {"node-renamed", "prompt", "inputs", "key-added"}
    (verdict,) = diff["threads"]
    assert verdict["at"] == ["Review"] and verdict["map"] == ["node,Review,Approval", "default,cost_center,VALUE"]

    code, _, err = cli(capsys, "resume", "p2", "yes", "--latest")
    assert code == 2 and "error[needs-migration]" in err and "node,Review,Approval" in err
    (folder / "move.csv").write_text("kind,old,new\nnode,Review,Approval\ndefault,cost_center,Facilities\n")
    code, judged, _ = cli(capsys, "diff", "--thread", "p2", "--migrate", "move.csv")
    assert code == 0 and judged["verdict"] == "safe"
    code, moved, err = cli(capsys, "resume", "p2", "--migrate", "move.csv")
    assert code == 0 and moved["moved"] and moved["interrupts"][0]["node"] == "Approval", err
    assert moved["resume"] == "agentmap resume p2 yes"
    code, done, err = cli(capsys, "resume", "p2", "yes")
    assert code == 0 and done["state"]["report"] == "Purchase of a desk for Facilities approved: True", err

    code, shown, _ = cli(capsys, "threads", "show", "p2")
    (step,) = [s for s in shown["history"] if "moved_from" in s]
    assert step["moved_from"] == verdict_revision(diff) and step["migration"][0] == "node,Review,Approval"
    assert shown["behind"] is False
    lamp = '{"request": "a lamp", "cost_center": "Ops"}'  # the edited report reads cost_center: a new run gives it
    code, fresh, _ = cli(capsys, "run", "approval.csv", "--thread", "p3", "--state", lamp)
    assert fresh["interrupts"][0]["node"] == "Approval"  # new runs take the edit


def verdict_revision(diff: dict[str, Any]) -> str:
    return str(diff["old"]["revision"])


def test_resume_latest_and_an_answer_moves_a_safe_edit_and_answers_the_question_it_asks_again(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    _waiting(capsys, "p1")
    (folder / "approval.csv").write_text(APPROVAL.replace("Purchase of", "Order of"), encoding="utf-8")
    code, done, err = cli(capsys, "resume", "p1", "yes", "--latest")
    assert code == 0 and done["state"]["report"] == "Order of a desk approved: True", err
    code, _, err = cli(capsys, "resume", "p1", "--latest")
    assert code == 2 and "nothing to move" in err  # it has finished


@pytest.mark.parametrize(
    ("edit", "code", "verdict"),
    [
        (APPROVAL.replace("Purchase of", "Order of"), 0, "safe"),
        (EDITED, 1, "needs-migration"),
        (APPROVAL.replace("Purchase,Review,human", "Purchase,Review,echo"), 7, "unsafe"),
    ],
    ids=["prompt", "renamed", "no-question"],
)
def test_diff_of_two_files_exits_with_the_worst_verdict(
    capsys: pytest.CaptureFixture[str], folder: Path, edit: str, code: int, verdict: str
) -> None:
    (folder / "edited.csv").write_text(edit, encoding="utf-8")
    exit_code, diff, err = cli(capsys, "diff", "approval.csv", "edited.csv")
    assert exit_code == code and diff["verdict"] == verdict and diff["exit_code"] == code, err
    assert [v["at"] for v in diff["threads"]] == [["Review"], ["Report"]]


def test_diff_of_two_revisions_and_an_unknown_revision(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    _waiting(capsys, "p1")
    (folder / "approval.csv").write_text(EDITED, encoding="utf-8")
    _waiting(capsys, "p2", state='{"request": "a desk", "cost_center": "Ops"}')
    _, listed, _ = cli(capsys, "threads")
    old, new = (next(t["revision"] for t in listed["threads"] if t["thread"] == name) for name in ("p1", "p2"))
    code, diff, err = cli(capsys, "diff", old[:8], new[:8])
    assert code == 1 and diff["old"]["kind"] == "revision" and diff["old"]["revision"] == old, err
    assert any(c["kind"] == "node-renamed" for c in diff["changes"])
    code, _, err = cli(capsys, "diff", "abcdef12", new[:8])
    assert code == 2 and "error[unknown-revision]" in err and "no revision 'abcdef12'" in err
    code, _, err = cli(capsys, "diff", "aproval.csv", new[:8])  # a file name mistyped is named as a file
    assert code == 3 and "aproval.csv does not exist" in err and "approval.csv" in err


def test_diff_in_a_terminal_says_it_in_words(
    capsys: pytest.CaptureFixture[str], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "edited.csv").write_text(EDITED, encoding="utf-8")
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert run_cli(["diff", "approval.csv", "edited.csv"]) == 1
    out = capsys.readouterr().out
    assert "node 'Review' renamed 'Approval'" in out and "map: node,Review,Approval" in out


def test_a_tampered_revision_is_refused_by_resume_and_nothing_runs(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    _waiting(capsys, "p1")
    (folder / "approval.csv").write_text(EDITED, encoding="utf-8")
    with sqlite3.connect(folder / ".agentmap" / "runs.db") as conn:
        conn.execute("UPDATE agentmap_revision_files SET content = replace(content, 'Report', 'Rep0rt')")
    code, _, err = cli(capsys, "resume", "p1", "yes")
    assert code == 2 and "error[corrupt-checkpoint]" in err and "approval.csv does not match its SHA-256" in err
    code, _, _ = cli(capsys, "threads")
    assert code == 2  # the listing refuses the damaged revision too, rather than showing a wrong status


def test_run_resume_answers_a_thread_on_its_revision(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    _waiting(capsys, "p1")
    (folder / "approval.csv").write_text(EDITED, encoding="utf-8")
    code, done, err = cli(capsys, "run", "approval.csv", "--thread", "p1", "--resume", '"yes"')
    assert code == 0 and done["state"]["report"] == "Purchase of a desk approved: True", err


ROUTED = (
    "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge,Success_Next\n"
    'Purchase,Review,human,Approve {request}?,"{""interaction_type"": ""approval""}",request,approved,,func:route\n'
    "Purchase,Yes,template,yes for {request},,request,report,,\n"
    "Purchase,No,template,no for {request},,request,report,,\n"
)


def test_a_changed_python_file_is_named_on_resume_and_a_gone_one_stops_it(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    (folder / "approval.csv").write_text(ROUTED, encoding="utf-8")
    (folder / "functions").mkdir()
    router = folder / "functions" / "route.py"
    router.write_text("def route(state, success_target=None, failure_target=None):\n    return 'Yes'\n")
    _waiting(capsys, "p1", "p2")
    router.write_text("def route(state, success_target=None, failure_target=None):\n    return 'No'\n")
    code, done, err = cli(capsys, "resume", "p1", "yes")
    assert code == 0 and done["status"] == "done", err
    assert "functions/route.py changed since (sha256" in err and "thread 'p1' runs revision" in err
    router.unlink()
    (folder / "approval.csv").write_text(ROUTED.replace("func:route", "Yes"), encoding="utf-8")
    code, _, err = cli(capsys, "resume", "p2", "yes")
    assert code == 2 and "error[revision-unloadable]" in err and "route.py, which is gone" in err
    code, listed, _ = cli(capsys, "threads")
    (waiting,) = [t for t in listed["threads"] if t["thread"] == "p2"]
    assert waiting["status"] == "unknown" and "route.py" in waiting["error"] and waiting["behind"] is True


@pytest.mark.postgres
def test_approvals_edited_while_they_wait_on_postgresql(
    capsys: pytest.CaptureFixture[str], folder: Path, postgres_url: str
) -> None:
    store = ("--checkpoint", postgres_url)
    for thread in ("p1", "p2"):
        code, paused, err = cli(
            capsys, "run", "approval.csv", "--thread", thread, "--state", '{"request": "a desk"}', *store
        )
        assert code == 0 and paused["status"] == "paused", err
    (folder / "approval.csv").write_text(EDITED, encoding="utf-8")
    _, listed, _ = cli(capsys, "threads", *store)
    assert [t["behind"] for t in listed["threads"]] == [True, True]
    code, done, err = cli(capsys, "resume", "p1", "yes", *store)
    assert code == 0 and done["state"]["report"] == "Purchase of a desk approved: True", err
    code, diff, _ = cli(capsys, "diff", "--thread", "p2", *store)
    assert code == 1 and diff["threads"][0]["map"] == ["node,Review,Approval", "default,cost_center,VALUE"]
    (folder / "move.yaml").write_text("nodes: {Review: Approval}\ndefaults: {cost_center: Facilities}\n")
    code, done, err = cli(capsys, "resume", "p2", "yes", "--migrate", "move.yaml", *store)
    assert code == 0 and done["state"]["report"] == "Purchase of a desk for Facilities approved: True", err
    code, diff, _ = cli(capsys, "diff", diff["old"]["revision"][:8], diff["new"]["revision"][:8], *store)
    assert code == 1 and diff["old"]["kind"] == "revision"
