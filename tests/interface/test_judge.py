"""LLM-as-judge rubric scoring: a real `ChatOpenAI` against the local OpenAI-compatible stub, and the offline model."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agentmap.errors import ConfigError
from agentmap.interface.eval_runner import run_eval
from agentmap.interface.evaluate import score_logs
from agentmap.interface.judge import DEFAULT_RUBRIC, load_rubric, make_llm_judge, parse_verdict
from agentmap.interface.report import render_table, report_html, report_json
from agentmap.interface.scores import EvalReport, JudgeScore
from agentmap.llm.offline import OfflineChatModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from openai_stub import OpenAIStub, Reply, chat_model, error, text

SCENARIOS = (
    "scenario,turn,user_message,must_include,rubric\n"
    "capital,1,What is the capital of France?,Paris,Names Paris and nothing else.\n"
    "chat,1,Hi,,\n"
    "chat,2,Tell me about Paris,Paris,Mentions that Paris is the capital.\n"
)
REPLIES = {
    "What is the capital of France?": "The capital of France is Paris.",
    "Hi": "Hello!",
    "Tell me about Paris": "Paris is the capital of France.",
}
VERDICT = '{"score": 5, "pass": true, "reasons": ["Answers directly."]}'


async def agent(prompt: str, **_: Any) -> str:
    return REPLIES[prompt]


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


@pytest.fixture
async def logs(tmp_path: Path) -> Path:
    scenarios = tmp_path / "scenarios.csv"
    scenarios.write_text(SCENARIOS, encoding="utf-8")
    await run_eval(scenarios, agent, tmp_path / "logs", progress=False)
    return tmp_path / "logs"


def _by_scenario(verdicts: dict[str, str]) -> Any:
    """A stub reply chosen by what the judged conversation contains (logs are scored in file-name order)."""

    def reply(body: dict[str, Any]) -> Reply:
        conversation = body["messages"][1]["content"]
        return text(next(v for key, v in verdicts.items() if key in conversation))

    return reply


def _table(report: EvalReport) -> list[list[str]]:
    """The terminal table's header and rows, as lists of cell texts."""
    buffer = io.StringIO()
    render_table(report, Console(file=buffer, width=200))
    lines = [line for line in buffer.getvalue().splitlines() if line.startswith(("┃", "│"))]
    return [[cell.strip() for cell in line.strip("┃│").replace("┃", "│").split("│")] for line in lines]


def _system(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


async def test_without_a_judge_the_report_is_unchanged(logs: Path) -> None:
    report = score_logs(logs)
    assert all(run.judge is None for run in report.runs)
    data = json.loads(report_json(report))
    assert all("judge" not in run for run in data["runs"])
    assert "<th>judge</th>" not in report_html(report)
    assert _table(report)[0] == ["scenario", "runs", "passed", "pass^1"]


async def test_verdicts_in_prose_and_fences_are_read_and_reported(logs: Path, stub: OpenAIStub) -> None:
    stub.script(
        *[
            _by_scenario(
                {
                    "capital of France?": f"Here is my verdict:\n```json\n{VERDICT}\n```\nThanks.",
                    "Tell me about Paris": 'Verdict: {"score": "4/5", "pass": "yes", "reasons": "Fine."} done',
                }
            )
        ]
        * 2
    )
    report = score_logs(logs, judge=make_llm_judge(chat_model(stub)))
    scores = {run.scenario: run.judge for run in report.runs}
    assert scores["capital"] == JudgeScore("gpt-stub", 5, True, 3, ("Answers directly.",))
    assert scores["chat"] == JudgeScore("gpt-stub", 4, True, 3, ("Fine.",))
    assert report.passed == 2 and stub.remaining == 0
    data = json.loads(report_json(report))
    assert sorted(run["judge"]["score"] for run in data["runs"]) == [4, 5]
    page = report_html(report)
    assert "<th>judge</th>" in page and "5/5" in page and "Answers directly." in page
    header, *rows = _table(report)
    assert header[-1] == "judge"
    assert {row[0]: row[-1] for row in rows} == {"capital": "5.00", "chat": "4.00", "all": "4.50"}


async def test_the_judge_sees_only_the_conversation_and_the_rubrics(logs: Path, stub: OpenAIStub) -> None:
    stub.script(text(VERDICT), text(VERDICT))
    score_logs(logs, judge=make_llm_judge(chat_model(stub)))
    assert all(request["temperature"] == 0.0 for request in stub.requests)
    for request in stub.requests:
        sent = json.dumps(request["messages"])
        assert "Run metadata" not in sent and "session_id" not in sent and "stop_reason" not in sent
        assert DEFAULT_RUBRIC.splitlines()[0] in _system(request)
    capital = next(r for r in stub.requests if "capital of France?" in r["messages"][1]["content"])
    assert "The capital of France is Paris." in capital["messages"][1]["content"]
    assert "Names Paris and nothing else." in _system(capital)
    chat = next(r for r in stub.requests if "Tell me about Paris" in r["messages"][1]["content"])
    assert "For the reply to user turn 2: Mentions that Paris is the capital." in _system(chat)
    assert "Names Paris" not in _system(chat)


@pytest.mark.parametrize(("threshold", "passes"), [(3, True), (4, False)])
async def test_the_threshold_decides(logs: Path, stub: OpenAIStub, threshold: int, passes: bool) -> None:
    stub.script(text('{"score": 3, "pass": true, "reasons": ["Terse."]}'), text(VERDICT))
    report = score_logs(logs, judge=make_llm_judge(chat_model(stub), threshold=threshold))
    low = next(run for run in report.runs if run.judge is not None and run.judge.score == 3)
    assert low.passed is passes
    if not passes:
        [finding] = low.findings
        assert finding.kind == "judge"
        assert finding.message == "the judge (gpt-stub) scored 3/5, pass needs 4: Terse."


async def test_a_judge_that_says_fail_fails_the_run_whatever_the_score(logs: Path, stub: OpenAIStub) -> None:
    stub.script(text('{"score": 5, "pass": false, "reasons": ["Leaks a secret."]}'), text(VERDICT))
    report = score_logs(logs, judge=make_llm_judge(chat_model(stub)))
    assert report.passed == 1
    failed = next(run for run in report.runs if not run.passed)
    assert "Leaks a secret." in failed.findings[0].message


async def test_a_reply_without_a_verdict_is_asked_again_then_becomes_a_finding(logs: Path, stub: OpenAIStub) -> None:
    stub.script(*[_by_scenario({"capital of France?": "Looks good to me!", "Tell me about Paris": "Great."})] * 3)
    stub.script(text(VERDICT))  # the second conversation judged gets a verdict when asked again
    judge = make_llm_judge(chat_model(stub), parse_retries=1)
    report = score_logs(logs, judge=judge)
    first, second = stub.requests[0], stub.requests[1]
    assert second["messages"][:2] == first["messages"][:2]
    assert "not the JSON verdict" in second["messages"][-1]["content"]
    assert report.passed == 1
    failed = next(run for run in report.runs if not run.passed)
    assert failed.judge is not None and failed.judge.score is None
    [finding] = failed.findings
    assert finding.kind == "judge" and "gave no verdict" in finding.message and "no JSON object" in finding.message


@pytest.mark.parametrize(("reply", "code"), [(error(500, "boom"), "llm-error"), (error(429), "llm-rate-limit")])
async def test_a_failed_call_is_a_judge_finding_not_a_crash(
    logs: Path, stub: OpenAIStub, reply: Reply, code: str
) -> None:
    stub.script(reply, reply)
    report = score_logs(logs, judge=make_llm_judge(chat_model(stub)))
    assert report.passed == 0 and len(report.runs) == 2
    for run in report.runs:
        [finding] = run.findings
        assert finding.kind == "judge" and f"gave no verdict: {code}:" in finding.message


async def test_a_rubric_file_replaces_the_default(logs: Path, stub: OpenAIStub, tmp_path: Path) -> None:
    rubric = tmp_path / "rubric.md"
    rubric.write_text("\ufeff- Replies in English.\n", encoding="utf-8")
    stub.script(text(VERDICT), text(VERDICT))
    score_logs(logs, judge=make_llm_judge(chat_model(stub), rubric=load_rubric(rubric)))
    assert all("- Replies in English." in _system(r) for r in stub.requests)
    assert not any(DEFAULT_RUBRIC.splitlines()[0] in _system(r) for r in stub.requests)


def test_rubric_file_mistakes_say_what_to_change(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the rubric file"):
        load_rubric(tmp_path / "missing.md")
    (tmp_path / "empty.md").write_text("  \n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is empty"):
        load_rubric(tmp_path / "empty.md")


async def test_a_provider_model_name_is_resolved_like_a_node_model(
    logs: Path, stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    stub.script(text(VERDICT), text(VERDICT))
    settings = {"llm": {"base_url": stub.base_url, "max_retries": 0}}
    report = score_logs(logs, judge=make_llm_judge("openai:gpt-judge", settings=settings))
    assert [r["model"] for r in stub.requests] == ["gpt-judge", "gpt-judge"]
    assert {run.judge.model for run in report.runs if run.judge} == {"openai:gpt-judge"}


def test_bad_judge_settings_stop_before_scoring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_llm_judge("openai:gpt-4o-mini")
    with pytest.raises(ConfigError, match="did you mean 'openai'"):
        make_llm_judge("opnai:gpt-4o-mini")
    for threshold in (0, 6, True):
        with pytest.raises(ConfigError, match="threshold must be a whole number from 1 to 5"):
            make_llm_judge("offline", threshold=threshold)
    with pytest.raises(ConfigError, match="rubric is empty"):
        make_llm_judge("offline", rubric=" ")


async def test_logs_without_a_manifest_are_judged_with_the_default_rubric(logs: Path, stub: OpenAIStub) -> None:
    (logs / "manifest.json").unlink()
    stub.script(text(VERDICT), text(VERDICT))
    report = score_logs(logs, judge=make_llm_judge(chat_model(stub)))
    assert [run.judge is not None for run in report.runs] == [True, True]
    assert not any("Names Paris" in _system(r) for r in stub.requests)


def test_a_conversation_without_replies_is_not_sent_to_the_judge(tmp_path: Path, stub: OpenAIStub) -> None:
    (tmp_path / "a.log").write_text(
        "Run metadata:\n- session_id: s\n- mode: m\n- scenario: x\n- max_turns: 1\n- stop_reason: single_turn\n\n"
        "Conversation:\n\n - user [2025-01-01 12:00:00]:\n  Hello?\n",
        encoding="utf-8",
    )
    report = score_logs(tmp_path, judge=make_llm_judge(chat_model(stub)))
    [run] = report.runs
    assert run.judge is None and [f.kind for f in run.findings] == ["contract"]
    assert stub.requests == []


async def test_offline_smoke_the_stand_in_gives_no_verdict_and_nothing_crashes(logs: Path) -> None:
    report = score_logs(logs, judge=make_llm_judge("offline"))
    assert len(report.runs) == 2 and report.passed == 0
    for run in report.runs:
        assert run.judge is not None and run.judge.model == "offline" and run.judge.error is not None
        assert [f.kind for f in run.findings] == ["judge"]


async def test_offline_model_with_a_scripted_verdict_is_repeatable(logs: Path) -> None:
    scripted = OfflineChatModel(responses={"<conversation>": f"Sure. {VERDICT}"})
    first = report_json(score_logs(logs, judge=make_llm_judge(scripted, threshold=5)))
    second = report_json(score_logs(logs, judge=make_llm_judge(scripted, threshold=5)))
    assert first == second
    assert json.loads(first)["passed"] == 2


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        (VERDICT, (5, True, ("Answers directly.",))),
        ('```\n{"score": 2.0, "passed": false, "reason": "Wrong city."}\n```', (2, False, ("Wrong city.",))),
        ('I think {this} is fine. {"score": "3", "reasoning": ["a", " "]} ok', (3, None, ("a",))),
        ('{"verdict": {"score": 1, "pass": "no"}}', (1, False, ())),
    ],
)
def test_parse_verdict_reads_what_models_write(reply: str, verdict: tuple[int, bool | None, tuple[str, ...]]) -> None:
    assert parse_verdict(reply) == verdict


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("Looks great, 5 out of 5!", "no JSON object with a score"),
        ('{"pass": true}', "no JSON object with a score"),
        ('{"score": 6}', "from 1 to 5, got 6"),
        ('{"score": 3.5}', "from 1 to 5, got 3.5"),
        ('{"score": true}', "from 1 to 5, got True"),
    ],
)
def test_parse_verdict_rejects_what_is_not_a_verdict(reply: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_verdict(reply)
