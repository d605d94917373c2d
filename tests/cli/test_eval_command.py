"""`agentmap eval run` and `agentmap eval score` (agentmap/cli/evaluation.py) through the real command."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import forked
import pytest
from cli_helpers import GRAPHS, ROOT, agentmap, agentmap_tty, write
from timing import deadline, scaled

from agentmap.interface.logs import read_log

SCENARIOS = (
    "scenario,turn,user_message,must_include,must_not_include\n"
    "secret_reverse,1,please reverse the text hello world,dlrow olleh,\n"
    "secret_chat,1,hello there,hello there,\n"
    "secret_chat,2,please title case the text big apple,Big Apple,\n"
    "secret_wrong,1,count the words in this,seven,\n"
)
"""Against graphs/llm_offline.csv (the offline model): the first two scenarios pass, the last does not."""

AGENT = """
import asyncio


async def run_agent(prompt, chat_history=None, memory=None, config=None):
    if "explode" in prompt:
        raise RuntimeError("kaboom")
    if "sleep" in prompt:
        await asyncio.sleep(30)
    return {"content": f"You said {prompt}", "response_time_secs": 0.0, "traces": []}
"""

WORKFLOW = str(GRAPHS / "llm_offline.csv")


@pytest.fixture
def scenarios(tmp_path: Path) -> Path:
    return write(tmp_path / "scenarios.csv", SCENARIOS)


def run_json(*args: str | Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = agentmap("eval", "run", *args, "--json", env=env)
    assert result.code == 0, result.text
    document: dict[str, Any] = json.loads(result.out)
    return document


def test_run_then_score_a_workflow(scenarios: Path, tmp_path: Path) -> None:
    out = tmp_path / "logs"
    ran = run_json(scenarios, "--workflow", WORKFLOW, "--out", out, "--concurrency", "2")
    assert ran["counts"] == {"single_turn": 2, "completed": 1}
    logs = sorted(out.glob("*.log"))
    assert len(logs) == 3 and not [p for p in logs if "secret" in p.name]  # neutral names
    chat = read_log(next(Path(r["log"]) for r in ran["runs"] if r["scenario"] == "secret_chat"))
    assert [t.text for t in chat.turns][-1] == "Done: title case returned Big Apple. (your request had 7 words)"

    report = tmp_path / "html" / "report.html"
    result = agentmap("eval", "score", out, "--json", "--report", report)
    assert result.code == 1, result.text  # secret_wrong fails
    scored = json.loads(result.out)
    assert (scored["passed"], scored["total"], scored["exit_code"]) == (2, 3, 1)
    verdicts = {r["scenario"]: r["passed"] for r in scored["runs"]}
    assert verdicts == {"secret_reverse": True, "secret_chat": True, "secret_wrong": False}
    page = report.read_text(encoding="utf-8")
    assert all(name in page for name in ("secret_reverse", "secret_chat", "secret_wrong"))
    assert "seven" in page  # the failed expectation is explained


def test_score_exits_0_when_every_run_passes_and_prints_a_table(scenarios: Path, tmp_path: Path) -> None:
    passing = write(tmp_path / "passing.csv", "\n".join(SCENARIOS.splitlines()[:-1]) + "\n")
    run_json(passing, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    result = agentmap("eval", "score", tmp_path / "logs")
    assert result.code == 0, result.text
    assert "secret_chat" in result.out
    assert "2 of 2 runs passed (every run passed)" in result.out


def test_score_writes_its_intervals_whole_when_the_output_is_not_a_terminal(scenarios: Path, tmp_path: Path) -> None:
    run_json(scenarios, "--workflow", WORKFLOW, "--out", tmp_path / "logs", "--runs", "3")
    result = agentmap("eval", "score", tmp_path / "logs")  # piped: no terminal, no width to fit
    assert result.code == 1, result.text
    assert "…" not in result.out
    (secret_wrong,) = [line for line in result.out.splitlines() if line.startswith("│ secret_wrong ")]
    assert "0.00 [0.00-0.56]" in secret_wrong and "0.00 [0.00-0.18]" in secret_wrong and "expectation 3" in secret_wrong


def test_expectations_file_replaces_the_manifest(scenarios: Path, tmp_path: Path) -> None:
    run_json(scenarios, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    fixed = write(tmp_path / "fixed.csv", SCENARIOS.replace(",seven,", ",1,"))
    result = agentmap("eval", "score", tmp_path / "logs", "--expectations", fixed, "--json")
    assert result.code == 0, result.text
    assert json.loads(result.out)["passed"] == 3


def test_resume_skips_complete_logs(scenarios: Path, tmp_path: Path) -> None:
    out = tmp_path / "logs"
    first = run_json(scenarios, "--workflow", WORKFLOW, "--out", out)
    again = run_json(scenarios, "--workflow", WORKFLOW, "--out", out)
    assert again["counts"] == {"skipped": 3}
    assert [r["log"] for r in again["runs"]] == [r["log"] for r in first["runs"]]

    redo = next(Path(r["log"]) for r in first["runs"] if r["scenario"] == "secret_chat")
    redo.write_text(redo.read_text(encoding="utf-8")[:60], encoding="utf-8")  # a run cut short
    resumed = run_json(scenarios, "--workflow", WORKFLOW, "--out", out)
    assert resumed["counts"] == {"skipped": 2, "completed": 1}
    assert read_log(redo).metadata.stop_reason == "completed"

    fresh = run_json(scenarios, "--workflow", WORKFLOW, "--out", out, "--no-resume")
    assert "skipped" not in fresh["counts"]


def test_human_summary_names_the_folder_and_the_next_step(scenarios: Path, tmp_path: Path) -> None:
    out = tmp_path / "logs"
    result = agentmap("eval", "run", scenarios, "--workflow", WORKFLOW, "--out", out)
    assert result.code == 0, result.text
    assert "3 runs of 3 scenarios: 1 completed; 2 single_turn" in result.out
    assert f"agentmap eval score {out}" in result.out


def test_active_agent_errors_timeouts_and_runs(tmp_path: Path) -> None:
    agent = write(tmp_path / "agent.py", AGENT)
    csv = write(tmp_path / "trouble.csv", "scenario,user_message\nok,hi\nboom,please explode\nslow,please sleep\n")
    ran = run_json(
        csv, "--out", tmp_path / "logs", "--timeout", "0.5", "--runs", "2", env={"ACTIVE_AGENT_PATH": str(agent)}
    )
    reasons = {(r["scenario"], r["run"]): r["stop_reason"] for r in ran["runs"]}
    assert reasons == {
        ("ok", 1): "single_turn",
        ("ok", 2): "single_turn",
        ("boom", 1): "agent_error",
        ("boom", 2): "agent_error",
        ("slow", 1): "timeout",
        ("slow", 2): "timeout",
    }
    result = agentmap("eval", "score", tmp_path / "logs", "--json")
    assert result.code == 1
    scored = json.loads(result.out)
    assert {s["name"]: s["pass_hat_k"]["2"] for s in scored["scenarios"]} == {"ok": 1.0, "boom": 0.0, "slow": 0.0}


def test_the_offline_judge_is_wired(scenarios: Path, tmp_path: Path) -> None:
    run_json(scenarios, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    rubric = write(tmp_path / "rubric.md", "- Be brief.\n")
    result = agentmap(
        "eval", "score", tmp_path / "logs", "--judge", "offline", "--rubric", rubric, "--judge-threshold", "4", "--json"
    )
    assert result.code == 1, result.text
    judged = [run["judge"] for run in json.loads(result.out)["runs"]]
    assert len(judged) == 3 and all(j["model"] == "offline" and j["threshold"] == 4 for j in judged)


def _coloured(text: str) -> bool:
    """Whether `text` sets a foreground colour (NO_COLOR still allows bold and italic)."""
    codes = {int(c) for params in re.findall(r"\x1b\[([0-9;]*)m", text) for c in params.split(";") if c}
    return bool(codes & {*range(30, 39), *range(90, 98)})


@pytest.mark.slow
@pytest.mark.parametrize("no_color", [True, False])
def test_score_table_in_a_terminal_honours_no_color(scenarios: Path, tmp_path: Path, no_color: bool) -> None:
    run_json(scenarios, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    result = agentmap_tty("eval", "score", tmp_path / "logs", env={"NO_COLOR": "1"} if no_color else {})
    assert result.code == 1
    assert "FAIL" in result.plain and "secret_wrong" in result.plain
    assert _coloured(result.out) is not no_color


BAD_SCENARIOS = "scenario,turn,user_message\nchat,1,hi\nchat,1,again\n"


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["eval", "run", "missing.csv", "--workflow", WORKFLOW], 3, ["scenarios file does not exist"]),
        (["eval", "run", "BAD", "--workflow", WORKFLOW], 2, ["BAD:3", "turn"]),
        (["eval", "run", "GOOD", "--workflow", WORKFLOW, "--concurrency", "0"], 2, ["--concurrency"]),
        (["eval", "run", "GOOD", "--workflow", WORKFLOW, "--concurrency", "many"], 2, ["--concurrency"]),
        (["eval", "run", "GOOD", "--workflow", WORKFLOW, "--timeout", "0"], 2, ["--timeout must be a positive"]),
        (["eval", "run", "GOOD", "--workflow", WORKFLOW, "--timeout", "nan"], 2, ["--timeout must be a positive"]),
        (["eval", "run", "GOOD", "--workflow", WORKFLOW, "--agent", "a.py"], 2, ["--agent or --workflow"]),
        (["eval", "run", "GOOD"], 2, ["no active agent", "ACTIVE_AGENT_PATH"]),
        (["eval", "run", "GOOD", "--workflow", "nowhere.csv"], 3, ["workflow does not exist"]),
        (["eval", "run", "GOOD", "--agent", "nowhere.py"], 3, ["--agent nowhere.py does not exist"]),
        (["eval", "score", "missing_logs"], 3, ["missing_logs", "logs folder does not exist"]),
        (["eval", "score", "EMPTY"], 3, ["no conversation logs"]),
        (["eval", "score", "EMPTY", "--rubric", "rubric.md"], 2, ["--rubric only applies", "--judge MODEL"]),
        (["eval", "score", "EMPTY", "--judge-threshold", "4"], 2, ["--judge-threshold only applies"]),
        (["eval", "score", "EMPTY", "--judge", "nope:model"], 3, ["no conversation logs"]),
    ],
)
def test_bad_input_is_one_paragraph_with_the_right_exit_code(
    tmp_path: Path, args: list[str], code: int, words: list[str]
) -> None:
    places = {
        "BAD": write(tmp_path / "bad.csv", BAD_SCENARIOS),
        "GOOD": write(tmp_path / "good.csv", SCENARIOS),
        "EMPTY": tmp_path / "empty",
    }
    places["EMPTY"].mkdir()
    result = agentmap(*(str(places.get(a, a)) for a in args))
    assert result.code == code, result.text
    for word in words:
        assert word.replace("BAD", str(places["BAD"])) in result.err
    assert "Traceback" not in result.text
    assert not list(tmp_path.glob("**/*.log"))  # nothing ran


def test_a_judge_that_cannot_be_built_stops_before_scoring(scenarios: Path, tmp_path: Path) -> None:
    run_json(scenarios, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    result = agentmap("eval", "score", tmp_path / "logs", "--judge", "nope:model")
    assert result.code == 2
    assert "unknown model provider 'nope'" in result.err and "Traceback" not in result.text


def test_errors_are_json_with_json(tmp_path: Path) -> None:
    result = agentmap("eval", "score", tmp_path / "nothing", "--json")
    assert result.code == 3
    assert json.loads(result.out)["error"]["code"] == "file-not-found"


def test_the_documented_example_runs_as_shown(tmp_path: Path) -> None:
    doc = (ROOT / "csv_specs" / "cli.md").read_text(encoding="utf-8")
    section = doc[doc.index("## `agentmap eval run SCENARIOS.csv`") :]
    block = re.search(r"```csv\n(.*?)```", section, re.S)
    assert block is not None
    csv = write(tmp_path / "scenarios.csv", block.group(1))
    ran = agentmap(
        "eval", "run", csv, "--workflow", "graphs/llm_offline.csv", "--out", tmp_path / "logs", "--concurrency", "8"
    )
    assert ran.code == 0, ran.text
    assert ran.out.splitlines()[0] in section
    scored = agentmap("eval", "score", tmp_path / "logs", "--report", tmp_path / "report.html")
    assert scored.code == 1
    assert "(wrong_count #1): turn 1: reply lacks 'seven'" in scored.out
    assert "2 of 3 runs passed (1 failed)" in scored.out and "2 of 3 runs passed (1 failed)" in section


CHECKS = (
    "scenario,turn,user_message,expected_state,expected_trajectory,trajectory_match\n"
    'state_ok,1,please reverse the text hello world,"word_count == 6 and len(chat_history) >= 2 and message",'
    "Count|Assistant|Report,\n"
    'tools_ok,1,please reverse the text hello world,,"reverse_text(text=""hello world"")",superset\n'
    "state_bad,1,count the words,word_count == 99,,\n"
    "path_bad,1,count the words,,Count|Report,exact\n"
)
"""Against graphs/llm_offline.csv: checks on the final state and on the nodes and tool calls of each run."""


def test_state_and_trajectory_checks_score_what_the_run_did(tmp_path: Path) -> None:
    scenarios = write(tmp_path / "checks.csv", CHECKS)
    out = tmp_path / "logs"
    run_json(scenarios, "--workflow", WORKFLOW, "--out", out)
    lines = (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()  # one run record per log
    assert sorted(json.loads(line)["log"] for line in lines) == sorted(p.name for p in out.glob("*.log"))
    result = agentmap("eval", "score", out, "--json")
    assert result.code == 1, result.text
    findings = {r["scenario"]: r["findings"] for r in json.loads(result.out)["runs"]}
    assert findings["state_ok"] == [] and findings["tools_ok"] == []
    assert findings["state_bad"] == [
        {"kind": "state", "message": "word_count == 99: false (word_count is 3)", "turn": None}
    ]
    [path] = findings["path_bad"]
    assert path["kind"] == "trajectory"
    assert path["message"] == "nodes are not exactly Count > Report (exact; the run's nodes: Count, Assistant, Report)"


@pytest.mark.parametrize(
    ("cell", "column", "why"),
    [
        ("booking.__class__", "expected_state", "names starting with __"),
        ("__import__('os').system('echo hi')", "expected_state", "the only call allowed is len"),
        ("[x for x in range(10**9)]", "expected_state", "a comprehension is not allowed"),
        ("9**9**9**9", "expected_state", "an exponent (**) is not allowed"),
        ("search(city=os.name)", "expected_trajectory", "must be a literal"),
    ],
)
def test_an_unsafe_cell_is_refused_at_load_with_its_location(tmp_path: Path, cell: str, column: str, why: str) -> None:
    quoted = '"' + cell.replace('"', '""') + '"'
    scenarios = write(tmp_path / "unsafe.csv", f"scenario,user_message,{column}\nok,hi,\nbad,hi,{quoted}\n")
    result = agentmap("eval", "run", scenarios, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    assert result.code == 2, result.text
    assert f"error[bad-expression]: {scenarios}:3:{column}:" in result.text and why in result.text
    assert not (tmp_path / "logs").exists()  # refused before anything ran


def test_a_bad_match_mode_is_refused_at_load(tmp_path: Path) -> None:
    scenarios = write(
        tmp_path / "mode.csv", "scenario,user_message,expected_trajectory,trajectory_match\ns,hi,A|B,roughly\n"
    )
    result = agentmap("eval", "run", scenarios, "--workflow", WORKFLOW, "--out", tmp_path / "logs")
    assert result.code == 2, result.text
    assert f"{scenarios}:2:trajectory_match: trajectory_match must be one of exact, in_order" in result.text


def _folder(tmp_path: Path, name: str, rows: str, runs: str = "2") -> Path:
    scenarios = write(tmp_path / f"{name}.csv", "scenario,user_message,must_include\n" + rows)
    run_json(scenarios, "--workflow", WORKFLOW, "--out", tmp_path / name, "--runs", runs)
    return tmp_path / name


REVERSE = "rev,please reverse the text hello world,{}\n"
COUNT = "count,count the words,{}\n"


def test_diff_of_identical_folders_exits_0(tmp_path: Path) -> None:
    base = _folder(tmp_path, "base", REVERSE.format("dlrow olleh") + COUNT.format("seven"))
    result = agentmap("eval", "diff", base, base)
    assert result.code == 0, result.text
    assert "rev: pass^2 1.00 -> 1.00; pass rate 1.00 -> 1.00, within BASE's 95% interval [0.34-1.00] (same)" in (
        result.out
    )
    assert "count: pass^2 0.00 -> 0.00; pass rate 0.00 -> 0.00, within" in result.out
    assert "no regression (exit 0)" in result.out


def test_diff_flags_a_regression_beyond_the_interval_and_writes_junit(tmp_path: Path) -> None:
    base = _folder(tmp_path, "base", REVERSE.format("dlrow olleh") + COUNT.format("seven"))
    new = _folder(tmp_path, "new", REVERSE.format("not in the reply") + COUNT.format("words"))
    junit = tmp_path / "ci" / "report.xml"
    result = agentmap("eval", "diff", base, new, "--junit", junit)
    assert result.code == 1, result.text
    assert "rev: pass^2 1.00 -> 0.00; pass rate 1.00 -> 0.00, below BASE's 95% interval [0.34-1.00]: regression" in (
        result.out
    )
    assert "count: pass^2 0.00 -> 1.00; pass rate 0.00 -> 1.00, above BASE's 95% interval [0.00-0.66] (better)" in (
        result.out
    )
    assert "worse: rev; better: count" in result.out
    page = junit.read_text(encoding="utf-8")
    assert '<testsuite name="agentmap eval diff" tests="3" failures="1">' in page
    assert '<testcase classname="agentmap.eval" name="rev"><failure message="pass^2 1.00 -&gt; 0.00; pass rate' in page

    backwards = agentmap("eval", "diff", new, base, "--json")
    assert backwards.code == 1  # count got worse the other way round
    document = json.loads(backwards.out)
    assert document["regressions"] == ["count"] and document["interval_method"] == "wilson^k"
    assert document["overall"]["status"] == "same" and not document["overall"]["regression"]
    statuses = {c["name"]: c["status"] for c in document["scenarios"]}
    assert statuses == {"rev": "better", "count": "worse"}


def test_diff_compares_at_the_fewest_runs_and_lists_added_scenarios(tmp_path: Path) -> None:
    base = _folder(tmp_path, "base", REVERSE.format("dlrow olleh"), runs="3")
    new = _folder(tmp_path, "new", REVERSE.format("dlrow olleh") + COUNT.format("words"), runs="1")
    result = agentmap("eval", "diff", base, new, "--json")
    assert result.code == 0, result.text
    changes = {c["name"]: c for c in json.loads(result.out)["scenarios"]}
    assert (changes["rev"]["k"], changes["rev"]["status"]) == (1, "same")
    assert changes["count"]["status"] == "added"


def test_diff_of_a_missing_folder_exits_3(tmp_path: Path) -> None:
    base = _folder(tmp_path, "base", REVERSE.format("dlrow olleh"), runs="1")
    result = agentmap("eval", "diff", base, tmp_path / "nowhere")
    assert result.code == 3, result.text
    assert "the logs folder does not exist" in result.text


SLOW_AGENT = """
import asyncio


async def run_agent(prompt, chat_history=None, memory=None, config=None):
    await asyncio.sleep(0.05)
    return f"You said {prompt}"
"""


@pytest.mark.slow
def test_a_killed_run_resumes_keeping_exactly_the_runs_marked_done(tmp_path: Path) -> None:
    agent = write(tmp_path / "agent.py", SLOW_AGENT)
    csv = write(tmp_path / "many.csv", "scenario,user_message\n" + "".join(f"s{i},hello {i}\n" for i in range(20)))
    out = tmp_path / "logs"
    env = {**os.environ, "ACTIVE_AGENT_PATH": str(agent)}
    proc = forked.start("eval", "run", csv, "--out", out, "--k", "4", "--concurrency", "2", cwd=tmp_path, env=env)
    give_up = deadline(60)
    while len(_done(out)) < 5:  # some runs done, most not
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < give_up, "eval run marked no run done"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=scaled(30))
    written = {name: (out / name).read_text(encoding="utf-8") for name in _done(out)}
    assert 5 <= len(written) < 80
    assert all(read_log(out / name).metadata.stop_reason == "single_turn" for name in written)  # none cut short

    resumed = run_json(csv, "--out", out, "--k", "4", "--concurrency", "2", env={"ACTIVE_AGENT_PATH": str(agent)})
    assert resumed["counts"] == {"skipped": len(written), "single_turn": 80 - len(written)}
    assert {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.log") if p.name in written} == written
    assert all(read_log(Path(r["log"])).metadata.stop_reason == "single_turn" for r in resumed["runs"])
    assert len(_done(out)) == 80


def _done(out: Path) -> list[str]:
    """The logs `runs.jsonl` marks done (its torn last line, if any, left out)."""
    try:
        lines = (out / "runs.jsonl").read_text(encoding="utf-8").split("\n")[:-1]
    except FileNotFoundError:
        return []
    return [json.loads(line)["log"] for line in lines]


def test_a_log_cut_short_or_not_marked_done_is_redone(scenarios: Path, tmp_path: Path) -> None:
    """The kill of an eval run between writing a log and its run record's line, or in the middle of either."""
    out = tmp_path / "logs"
    first = run_json(scenarios, "--workflow", WORKFLOW, "--out", out)
    records = out / "runs.jsonl"
    lines = records.read_text(encoding="utf-8").splitlines(keepends=True)
    by_log = {json.loads(line)["log"]: line for line in lines}
    cut, unmarked, kept = (Path(r["log"]) for r in first["runs"])
    cut.write_text(cut.read_text(encoding="utf-8")[:-8], encoding="utf-8")  # still a valid log, but cut short
    records.write_text(by_log[kept.name] + by_log[unmarked.name][:30], encoding="utf-8")  # torn last line
    resumed = run_json(scenarios, "--workflow", WORKFLOW, "--out", out)
    assert [r["skipped"] for r in resumed["runs"]] == [False, False, True]
    assert [read_log(p).metadata.stop_reason for p in (cut, unmarked)] == [r["stop_reason"] for r in first["runs"][:2]]
    assert cut.read_text(encoding="utf-8").endswith("\n") and sorted(_done(out)) == sorted(by_log)
    assert run_json(scenarios, "--workflow", WORKFLOW, "--out", out)["counts"] == {"skipped": 3}


def test_a_folder_with_a_run_record_beside_each_log_still_scores_and_resumes(tmp_path: Path) -> None:
    """Folders `eval run` wrote before `runs.jsonl`: a `<log stem>.run.json` beside each log (or none at all)."""
    scenarios = write(tmp_path / "checks.csv", CHECKS)
    out = tmp_path / "logs"
    run_json(scenarios, "--workflow", WORKFLOW, "--out", out)
    before = agentmap("eval", "score", out, "--json")
    records = out / "runs.jsonl"
    for line in records.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        (out / f"{Path(record.pop('log')).stem}.run.json").write_text(json.dumps(record), encoding="utf-8")
    records.unlink()
    assert agentmap("eval", "score", out, "--json").out == before.out
    for _ in range(2):  # the first resume marks the old logs done, the second finds them so
        assert run_json(scenarios, "--workflow", WORKFLOW, "--out", out)["counts"] == {"skipped": 4}
        assert agentmap("eval", "score", out, "--json").out == before.out
