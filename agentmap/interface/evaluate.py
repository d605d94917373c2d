"""`agentmap eval score`: score conversation logs against the contract and the scenarios' expectations.

The evaluator is log-only (csv_specs/evaluation.md): it reads the `Conversation:` section of each log and nothing else.
Which scenario (and so which expectations) a log belongs to comes from the manifest the runner wrote beside
the logs, never from the log's metadata. A run passes when its conversation keeps the contract and every
expectation holds; with several runs per scenario the report gives pass^k, the chance that k runs all pass.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentmap.contracts.conversation import Turn
from agentmap.errors import AgentMapError, ErrorCode, Location
from agentmap.interface import detect
from agentmap.interface.checks import Step, check_state, match_trajectory, parse_trajectory
from agentmap.interface.logs import LogFormatError, parse_conversation_texts
from agentmap.interface.manifest import read_manifest
from agentmap.interface.run_record import RunRecords
from agentmap.interface.scenarios import Scenario, ScenarioTurn, load_scenarios
from agentmap.interface.scores import EvalReport, Finding, Judge, JudgeScore, RunScore, summarize

__all__ = ["score_logs", "score_turns"]


def score_turns(turns: Sequence[Turn], scenario: Scenario | None = None) -> RunScore:
    """Score one conversation: the contract, then the scenario's expectations when there is a scenario.

    Args:
        turns: The conversation.
        scenario: The scenario the conversation ran, for its expectations.

    Returns:
        A score with `log` left empty.
    """
    return _score_pairs([(turn.role, turn.text) for turn in turns], scenario)


def _score_pairs(turns: Sequence[tuple[str, str]], scenario: Scenario | None) -> RunScore:
    score = RunScore(log="")
    findings = score.findings
    replies = _contract(turns, findings)
    score.user_turns = len(replies)
    for reply in replies:
        if reply is not None:
            score.refusals += detect.is_refusal(reply)
            score.clarifications += detect.clarification(reply) == "bounded"
    if scenario is not None:
        for step in scenario.turns:
            _expect(step, replies[step.turn - 1] if step.turn <= len(replies) else None, findings)
    score.passed = not findings
    return score


def score_logs(
    logs_dir: str | os.PathLike[str],
    *,
    expectations: str | os.PathLike[str] | None = None,
    judge: Judge | None = None,
) -> EvalReport:
    """Score every `*.log` in `logs_dir`.

    Args:
        logs_dir: The folder `eval run` wrote (logs and `manifest.json`).
        expectations: A scenarios CSV whose expectations replace the ones recorded in the manifest.
        judge: An optional extra check per run (see `agentmap.interface.judge`); off by default.

    Returns:
        The report; render it with `agentmap.interface.report`.

    Raises:
        AgentMapError: When `logs_dir` is not a folder, or the manifest or scenarios file is invalid.
    """
    folder = Path(logs_dir)
    if not folder.is_dir():
        raise AgentMapError(
            f"logs folder not found: {folder}",
            code=ErrorCode.FILE_NOT_FOUND,
            location=Location(file=str(folder)),
            hint="Pass the folder `agentmap eval run --out DIR` wrote.",
        )
    report = EvalReport(logs_dir=str(folder))
    manifest = read_manifest(folder)
    scenarios: Mapping[str, Scenario] = manifest.scenarios if manifest is not None else {}
    if expectations is not None:
        scenarios = {s.name: s for s in load_scenarios(expectations)}
    entries = manifest.by_log() if manifest is not None else {}
    if manifest is None:
        report.warnings.append(
            "no manifest.json beside the logs: only the contract is checked (expectations need the manifest "
            "`agentmap eval run` writes; log metadata is never used for scoring)"
        )
    missing: set[str] = set()
    records = RunRecords(folder)
    names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".log") and e.is_file())
    for name in names:
        path = os.path.join(folder, name)
        entry = entries.get(name)
        scenario = scenarios.get(entry.scenario) if entry is not None else None
        if entry is not None and scenario is None:
            missing.add(entry.scenario)
        report.runs.append(
            _score_file(path, entry.scenario if entry else None, entry.run if entry else None, scenario, judge, records)
        )
    if missing:
        report.warnings.append(
            f"no expectations for scenario(s) {', '.join(sorted(missing))}: only the contract is checked for them"
        )
    summarize(report, [e.scenario for e in manifest.runs] if manifest is not None else [])
    return report


def _score_file(
    path: str,
    scenario_name: str | None,
    run: int | None,
    scenario: Scenario | None,
    judge: Judge | None,
    records: RunRecords,
) -> RunScore:
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8-sig") as handle:
            turns = parse_conversation_texts(handle.read(), source=name)
    except (LogFormatError, UnicodeDecodeError) as exc:
        message = str(exc).split("\n", 1)[0]
        return RunScore(log=name, scenario=scenario_name, run=run, findings=[Finding("format", message)])
    score = _score_pairs(turns, scenario)
    if scenario is not None and (scenario.expected_state or scenario.expected_trajectory or scenario.user):
        score.findings += _run_checks(scenario, records, name)
        score.passed = not score.findings
    if judge is not None:
        verdict = judge(scenario, turns)
        if isinstance(verdict, JudgeScore):
            score.judge, verdict = verdict, verdict.findings()
        score.findings += verdict
        score.passed = not score.findings
    score.log, score.scenario, score.run = name, scenario_name, run
    return score


def _run_checks(scenario: Scenario, records: RunRecords, log: str) -> list[Finding]:
    """The `state` and `trajectory` findings of a run, from its run record."""
    record = records.get(log)
    if record is None:
        return [
            Finding(
                "state" if scenario.expected_state else "trajectory" if scenario.expected_trajectory else "goal",
                f"no run record of this log ({records.where()}): run the scenarios with `agentmap eval run` "
                "to check the final state and the trajectory",
            )
        ]
    findings: list[Finding] = []
    state = record.get("state")
    for condition in scenario.expected_state:
        if not isinstance(state, dict):
            findings.append(Finding("state", f"{condition}: the agent returned no final state (`state`)"))
            continue
        problem = check_state(condition, state)
        if problem is not None:
            findings.append(Finding("state", problem))
    if scenario.expected_trajectory:
        steps = [Step(str(n)) for n in record.get("nodes") or ()]
        steps += [
            Step(str(c.get("tool")), tool=True, args=tuple((c.get("args") or {}).items()))
            for c in record.get("tool_calls") or ()
            if isinstance(c, dict)
        ]
        problem = match_trajectory(parse_trajectory(scenario.expected_trajectory), steps, scenario.trajectory_match)
        if problem is not None:
            findings.append(Finding("trajectory", problem))
    goal = record.get("goal")
    if scenario.user is not None and isinstance(goal, dict) and not goal.get("reached"):
        why = {
            "max_turns": f"stopped at max_turns ({goal.get('max_turns')} user turns)",
            "user_exit": "the user was done before stop_when held",
        }.get(str(goal.get("stop_reason")))
        if why is not None:
            findings.append(Finding("goal", f"the simulated user did not reach its goal: {why}"))
    return findings


def _contract(turns: Sequence[tuple[str, str]], findings: list[Finding]) -> list[str | None]:
    """Check csv_specs/evaluation.md's conversation contract; return the reply to each user turn (None if missing)."""
    replies: list[str | None] = []
    if not turns:
        findings.append(Finding("contract", "the conversation is empty"))
        return replies
    if turns[0][0] != "user":
        findings.append(
            Finding("contract", f"the conversation must start with a user message, not a {turns[0][0]!r} turn")
        )
    expect_user = True
    for role, text in turns:
        if role not in ("user", "assistant"):
            findings.append(
                Finding("contract", f"unknown role {role!r}: only user and assistant may speak", len(replies) or None)
            )
            continue
        if role == "user":
            if not expect_user:
                findings.append(Finding("contract", "two user messages in a row: the first got no reply", len(replies)))
            replies.append(None)
            expect_user = False
            continue
        if expect_user:
            findings.append(
                Finding(
                    "contract",
                    "more than one assistant reply to one user message"
                    if replies
                    else "an assistant reply with no user message before it",
                    len(replies) or None,
                )
            )
            continue
        expect_user = True
        replies[-1] = text
        _check_reply(text, len(replies), findings)
    if replies and replies[-1] is None:
        findings.append(Finding("contract", "the last user message got no reply", len(replies)))
    return replies


def _check_reply(text: str, number: int, findings: list[Finding]) -> None:
    if not text.strip():
        findings.append(Finding("contract", "the reply is empty", number))
    elif detect.runner_error(text):
        findings.append(Finding("contract", f"the agent gave no reply: {text.splitlines()[0]}", number))
    elif detect.has_json_framing(text):
        findings.append(Finding("contract", "the reply is wrapped in JSON instead of plain text", number))
    elif detect.has_tool_trace(text):
        findings.append(Finding("contract", "the reply shows tool calls or traces", number))


def _expect(step: ScenarioTurn, reply: str | None, findings: list[Finding]) -> None:
    checks = (
        step.must_include
        or step.must_not_include
        or step.expect_refusal is not None
        or step.expect_clarification is not None
    )
    if not checks:
        return
    if reply is None:
        findings.append(Finding("expectation", "the conversation has no reply to this turn", step.turn))
        return
    folded = reply.casefold()
    missing = [term for term in step.must_include if term.casefold() not in folded]
    if missing:
        findings.append(Finding("expectation", f"reply lacks {', '.join(map(repr, missing))}", step.turn))
    present = [term for term in step.must_not_include if term.casefold() in folded]
    if present:
        findings.append(Finding("expectation", f"reply contains {', '.join(map(repr, present))}", step.turn))
    if step.expect_refusal is not None and detect.is_refusal(reply) != step.expect_refusal:
        findings.append(
            Finding(
                "expectation",
                "expected a refusal" if step.expect_refusal else "the reply refuses, but an answer was expected",
                step.turn,
            )
        )
    if step.expect_clarification is not None:
        kind = detect.clarification(reply)
        if step.expect_clarification and kind != "bounded":
            findings.append(
                Finding(
                    "expectation",
                    "expected a bounded clarifying question"
                    if kind is None
                    else "the clarification asks too much (over "
                    f"{detect.MAX_CLARIFYING_QUESTIONS} questions or "
                    f"{detect.MAX_CLARIFICATION_WORDS} words)",
                    step.turn,
                )
            )
        elif not step.expect_clarification and kind is not None:
            findings.append(
                Finding("expectation", "the reply asks a clarifying question, but an answer was expected", step.turn)
            )
