"""Workflows written for AgentMap 0.9 that use storage, human and suspend nodes run here unchanged.

Each case copies one folder of `workflows/` into a fresh directory, runs it end to end (resuming the
pauses with the given answers, in order) through the Python API or the real command line, then checks
the final state, the files written under the storage folder and the validation warnings.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import agentmap
from agentmap.cli.app import build_app

CORPUS = Path(__file__).parent / "workflows"


@dataclass
class Case:
    """One old-style workflow, how to run it, and what a user would see afterwards."""

    folder: str
    state: dict[str, Any]
    answers: list[Any] = field(default_factory=list)
    expect: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Callable[[str], bool]] = field(default_factory=dict)
    success: bool = True
    warnings: list[str] = field(default_factory=list)
    cli: bool = False
    still_paused_after: int | None = None


CASES = [
    Case(
        "goals",
        {"goal": "run 10k", "analysis": "doable"},
        expect={
            "all_goals": [{"goal": "run 10k", "analysis": "doable"}],
            "thanks": "[ThankUser] Thank you for sharing your goal!",
        },
        files={"data/personal_goals.csv": lambda t: t == "goal,analysis\nrun 10k,doable\n"},
    ),
    Case(
        "products",
        {"sku": "G-2", "name": "gadget", "stock": 12, "document_id": "G-2"},
        expect={"product": {"sku": "G-2", "name": "gadget", "stock": "12"}},
        files={"data/products.csv": lambda t: t == "sku,name,stock\nW-1,widget,3\nG-2,gadget,12\n"},
    ),
    Case(
        "catalog",
        {"query": {"status": "in"}},
        expect={
            "in_stock": {
                "A1": {"sku": "A1", "name": "apple", "status": "in"},
                "C3": {"sku": "C3", "name": "cherry", "status": "in"},
            },
            "by_row": lambda rows: [r["sku"] for r in rows.values()] == ["A1", "B2", "C3"] and next(iter(rows)) == "0",
        },
        cli=True,
    ),
    Case(
        "analysis",
        {"topic": "bees"},
        expect={"saved": ["Summary of bees"]},
        files={"data/results/analysis.json": lambda t: json.loads(t) == ["Summary of bees"]},
    ),
    Case(
        "profiles",
        {"data": {"settings": {"theme": "solarized"}}, "document_id": "u1"},
        expect={"theme": "solarized"},
        files={"data/users.json": lambda t: [u["settings"]["theme"] for u in json.loads(t)] == ["solarized", "dark"]},
    ),
    Case(
        "chunks",
        {"collection": "notes.txt"},
        expect={"echoed": lambda v: len(v["document"]) > 3 and all(len(c) <= 40 for c in v["document"])},
    ),
    Case(
        "report",
        {"title": "Q3", "footer": "-- end --"},
        expect={
            "report_text": {
                "content": "# Q3\n-- end --",
                "metadata": {"source": "data/processing_report.md", "characters": 14},
            }
        },
        cli=True,
    ),
    Case(
        "configured",
        {"id": "2", "name": "Grace"},
        expect={"users": [{"id": "1", "name": "Ada"}, {"id": "2", "name": "Grace"}]},
        files={
            "store/csv/users.csv": lambda t: t == "id,name\n1,Ada\n2,Grace\n",
            "store/audit_log.json": lambda t: json.loads(t) == ["Grace"],  # the existing AgentMap's layout
            "notes/welcome.txt": lambda t: t == "Grace",  # file.base_directory, as the existing AgentMap
        },
        cli=True,
    ),
    Case(
        "fanout",
        {"event_a": "a", "event_b": "b", "event_c": "c", "event_d": "d"},
        expect={"events": lambda rows: sorted(r["event"] for r in rows) == ["a", "b", "c", "d"]},
    ),
    Case(
        "approval",
        {"document_content": "Q3 budget"},
        answers=["approve"],
        expect={
            "approval_result": True,
            "final_status": {
                "notification_message": "[PrepareNotification] Document has been approved successfully!",
                "rejection_message": None,
            },
        },
        warnings=["config-assumed"],  # an echo node whose Prompt has {placeholders}
    ),
    Case(
        "setup",
        {"initial_scope": "a new website"},
        answers=["Ship by June", "2"],
        expect={"project_summary": {"team_config": "Setting up waterfall team for: Ship by June"}},
        cli=True,
        warnings=["config-assumed"],  # an echo node whose Prompt has {placeholders}
    ),
    Case(
        "content",
        {"draft_content": "teh draft"},
        answers=["the draft"],
        expect={"edited_content": "the draft"},
        files={"data/published/article.md": lambda t: t == "the draft"},
    ),
    Case(
        "chat",
        {"conversation_history": "Hi! How can I help?"},
        answers=[{"action": "respond", "data": {"message": "Tell me about pricing"}}],
        expect={"reply_text": "You said: Tell me about pricing"},
    ),
    Case(
        "batch",
        {"dataset_path": "s3://bucket/data.csv"},
        answers=[{"status": "complete", "rows": 120}],
        expect={"processing_status": {"status": "complete", "rows": 120}},
        cli=True,
        warnings=["config-assumed"],  # an echo node whose Prompt has {placeholders}
    ),
    Case(
        "external",
        {"approval_data": {"request": 7}},
        answers=[{"approved_by": "ops", "ok": True}],
        expect={"approval_decision": {"approved_by": "ops", "ok": True}},
        files={"data/approvals.json": lambda t: json.loads(t) == {"approved_by": "ops", "ok": True}},
        warnings=["config-assumed"],
    ),
    Case(
        "retry",
        {"scenario_data": "supplier late"},
        answers=["escalate", "Proceed"],
        still_paused_after=1,
        expect={"implementation_plan": "Implementing decision: proceed"},
        warnings=["config-assumed"],
    ),
    Case(
        "review_save",
        {"request": "refund #12"},
        answers=["reject"],
        success=True,  # the rejection takes Approve's Failure_Next: a path the workflow handles
        expect={"decision": "Rejected: refund #12"},
        files={"data/decisions.csv": lambda t: t == "request,decision\nrefund #12,Rejected: refund #12\n"},
    ),
]


def _check(case: Case, folder: Path, state: dict[str, Any], success: bool) -> None:
    for key, wanted in case.expect.items():
        if wanted is None:
            continue
        if callable(wanted):
            assert wanted(state.get(key)), (key, state.get(key))
        else:
            assert state.get(key) == wanted, (key, state.get(key))
    for name, ok in case.files.items():
        assert ok((folder / name).read_text(encoding="utf-8")), (name, (folder / name).read_text(encoding="utf-8"))
    assert success is case.success, state.get("errors")
    assert not list(folder.rglob("*.tmp")), "a temporary file was left behind"


def _run_api(case: Case, workflow: Path) -> tuple[dict[str, Any], bool]:
    from langgraph.types import Command

    app = agentmap.compile(workflow, checkpointer="memory", state_keys=tuple(case.state))
    config: Any = {"configurable": {"thread_id": case.folder}}
    result = app.invoke(dict(case.state), config)
    for i, answer in enumerate(case.answers):
        assert result.interrupts, f"the run did not pause before answer {i + 1}"
        result = app.invoke(Command(resume=answer), config)
        if case.still_paused_after == i + 1:
            (paused,) = result.interrupts
            assert "error" in paused.value and "answer one of" in paused.value["error"]
    assert not result.interrupts
    return dict(result.state), result.success


def _run_cli(case: Case, workflow: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], bool]:
    monkeypatch.chdir(workflow.parent)  # where an agentmap_config.yaml is found
    runner, app = CliRunner(), build_app()
    base = ["run", str(workflow), "--json", "--checkpoint", "runs.db", "--thread", "t1"]
    out = runner.invoke(app, [*base, "--state", json.dumps(case.state)])
    for answer in case.answers:
        assert out.exit_code == 0 and json.loads(out.stdout)["paused"] is True, out.output
        out = runner.invoke(app, [*base, "--resume", json.dumps(answer)])
    assert out.exit_code in (0, 1), out.output
    document = json.loads(out.stdout)
    assert "paused" not in document, document
    return document["state"], bool(document["success"])


@pytest.mark.parametrize("case", CASES, ids=[c.folder for c in CASES])
def test_an_old_style_workflow_runs_end_to_end(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / case.folder
    shutil.copytree(CORPUS / case.folder, folder)
    (workflow,) = folder.glob("*.csv")
    with monkeypatch.context() as inside:
        inside.chdir(folder)
        findings = agentmap.validate(workflow, **_settings(folder))
    codes = sorted(i.code for i in findings if i.code != "unset-input")  # inputs the initial state gives
    assert codes == sorted(case.warnings), [str(i) for i in findings]
    if case.cli:
        state, success = _run_cli(case, workflow, monkeypatch)
    else:
        state, success = _run_api(case, workflow)
    _check(case, folder, state, success)


def _settings(folder: Path) -> dict[str, Any]:
    from agentmap.config import load_settings

    return load_settings(cwd=folder).compile_options()


def test_the_corpus_holds_every_folder() -> None:
    assert sorted(c.folder for c in CASES) == sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


@pytest.mark.slow
def test_a_paused_human_node_is_answered_by_a_second_agentmap_process(tmp_path: Path) -> None:
    """The real command, three processes, one SQLite checkpoint file: pause, a refused answer, then a good one."""
    import forked

    folder = tmp_path / "review_save"
    shutil.copytree(CORPUS / "review_save", folder)

    def agentmap(*args: str) -> tuple[int, str, str]:
        done = forked.run("run", "review_save.csv", "--checkpoint", "runs.db", *args, cwd=folder, env=os.environ)
        assert "Traceback" not in done[2], done[2]
        return done

    def agentmap_run(*args: str) -> dict[str, Any]:
        code, out, err = agentmap(*args)
        assert code in (0, 1), err
        document: dict[str, Any] = json.loads(out)
        return document

    paused = agentmap_run("--thread", "t9", "--state", '{"request": "refund #3"}')
    assert paused["paused"] is True and paused["interrupts"][0]["interaction"] == "approval"
    code, _, err = agentmap("--thread", "t9", "--resume", '"maybe"')  # checked before resuming: still paused
    assert code == 2 and "neither yes nor no" in err
    done = agentmap_run("--thread", "t9", "--resume", '"approve"')
    assert done["success"] is True and done["state"]["approved"] is True
    log = (folder / "data" / "decisions.csv").read_text(encoding="utf-8")
    assert log == "request,decision\nrefund #3,\n"  # approved: no decision text was written by HandleRejection
