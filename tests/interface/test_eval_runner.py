"""`eval run`: one valid log per run, every stop reason, concurrency and resume."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from timing import deadline, scaled

from agentmap.contracts.conversation import StopReason
from agentmap.errors import ConfigError
from agentmap.interface.agent import agent_for
from agentmap.interface.eval_runner import run_eval
from agentmap.interface.evaluate import score_logs
from agentmap.interface.history import parse_chat_history
from agentmap.interface.logs import read_log
from agentmap.interface.manifest import read_manifest
from agentmap.interface.run_record import RunRecords
from agentmap.interface.scenarios import Scenario, ScenarioTurn

SCENARIOS = (
    "scenario,turn,user_message\n"
    "secret_greeting,1,Hello there\n"
    "secret_trip,1,Plan a trip\n"
    "secret_trip,2,Make it cheaper\n"
    "secret_trip,3,Thanks\n"
    "secret_boom,1,please explode\n"
    "secret_slow,1,please sleep\n"
    "secret_blank,1,\n"
    "secret_quiet,1,say nothing\n"
)


async def scripted_agent(
    prompt: str, chat_history: str | None = None, memory: str | None = None, config: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Answers with the prompt and how many earlier messages it was given; misbehaves on request."""
    if "explode" in prompt:
        raise RuntimeError("kaboom\nsecond line of the traceback")
    if "sleep" in prompt:
        await asyncio.sleep(5)
    if "nothing" in prompt:
        return {"content": "   ", "response_time_secs": 0.0, "traces": []}
    seen = len(parse_chat_history(chat_history))
    return {"content": f"You said: {prompt} (after {seen} messages)", "response_time_secs": 0.0, "traces": []}


@pytest.fixture
def scenarios_csv(tmp_path: Path) -> Path:
    path = tmp_path / "scenarios.csv"
    path.write_text(SCENARIOS, encoding="utf-8")
    return path


def _logs(summary: Any) -> dict[str, Any]:
    return {o.scenario: read_log(o.log) for o in summary.outcomes}


async def test_every_run_gets_a_valid_log_with_its_stop_reason(scenarios_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "logs"
    summary = await run_eval(scenarios_csv, scripted_agent, out, timeout=0.2, progress=False)
    logs = _logs(summary)
    reasons = {name: log.metadata.stop_reason for name, log in logs.items()}
    assert reasons == {
        "secret_greeting": StopReason.SINGLE_TURN,
        "secret_trip": StopReason.COMPLETED,
        "secret_boom": StopReason.AGENT_ERROR,
        "secret_slow": StopReason.TIMEOUT,
        "secret_blank": StopReason.MISSING_INPUT,
        "secret_quiet": StopReason.AGENT_ERROR,
    }
    trip = logs["secret_trip"].turns
    assert [t.role for t in trip] == ["user", "assistant"] * 3
    assert trip[5].text == "You said: Thanks (after 4 messages)"  # history was passed back each turn
    boom = logs["secret_boom"].turns[-1]
    assert boom.role == "assistant" and boom.text == "Error: the agent failed (RuntimeError: kaboom)."
    assert "0.2 seconds" in logs["secret_slow"].turns[-1].text
    blank = logs["secret_blank"].turns  # the empty message is logged, so the turns still alternate
    assert [(t.role, t.text) for t in blank] == [
        ("user", ""),
        ("assistant", "Error: there is no user message for turn 1."),
    ]
    scored = {r.scenario: r.findings for r in score_logs(out).runs}
    assert [f.message for f in scored["secret_blank"]] == [
        "the agent gave no reply: Error: there is no user message for turn 1."
    ]
    assert "empty reply" in logs["secret_quiet"].turns[-1].text
    for path in out.iterdir():  # neutral names: nothing reveals a scenario
        assert "secret" not in path.name
    manifest = read_manifest(out)
    assert manifest is not None
    assert {e.scenario for e in manifest.runs} == set(logs)
    assert set(manifest.scenarios) == set(logs)


async def test_max_turns_cuts_a_long_scenario(scenarios_csv: Path, tmp_path: Path) -> None:
    summary = await run_eval(scenarios_csv, scripted_agent, tmp_path / "logs", max_turns=2, timeout=0.2, progress=False)
    trip = _logs(summary)["secret_trip"]
    assert trip.metadata.stop_reason == StopReason.MAX_TURNS
    assert trip.metadata.max_turns == 2
    assert sum(t.role == "user" for t in trip.turns) == 2


async def test_runs_go_concurrently_up_to_the_limit(tmp_path: Path) -> None:
    active = peak = 0

    async def busy(prompt: str, **_: Any) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return "ok " + prompt

    scenarios = [Scenario(name=f"s{i}", turns=(ScenarioTurn(turn=1, message=f"m{i}"),)) for i in range(12)]
    summary = await run_eval(scenarios, busy, tmp_path / "a", concurrency=4, progress=False)
    assert peak == 4
    assert len(summary.outcomes) == 12
    peak = 0
    await run_eval(scenarios, busy, tmp_path / "b", concurrency=1, progress=False)
    assert peak == 1


async def test_resume_skips_complete_logs_and_redoes_broken_or_changed_ones(
    scenarios_csv: Path, tmp_path: Path
) -> None:
    out = tmp_path / "logs"
    first = await run_eval(scenarios_csv, scripted_agent, out, timeout=0.2, runs=2, progress=False)
    assert len(first.outcomes) == 12
    calls: list[str] = []

    async def counting(prompt: str, **kwargs: Any) -> Any:
        calls.append(prompt)
        return await scripted_agent(prompt, **kwargs)

    again = await run_eval(scenarios_csv, counting, out, timeout=0.2, runs=2, progress=False)
    assert sorted(calls) == sorted(["please explode", "please sleep", "say nothing"] * 2)  # failures retried
    assert {o.scenario for o in again.outcomes if not o.skipped} == {"secret_boom", "secret_slow", "secret_quiet"}
    assert [o.log for o in again.outcomes] == [o.log for o in first.outcomes]
    calls.clear()

    greeting = next(o for o in first.outcomes if o.scenario == "secret_greeting" and o.run == 2)
    greeting.log.write_text(greeting.log.read_text(encoding="utf-8")[:40], encoding="utf-8")  # truncated
    scenarios_csv.write_text(SCENARIOS.replace("Plan a trip", "Plan a holiday"), encoding="utf-8")
    third = await run_eval(scenarios_csv, counting, out, timeout=0.2, runs=2, progress=False)
    failing = ["please explode", "please sleep", "say nothing"]
    assert sorted(calls) == sorted(["Hello there"] + ["Plan a holiday", "Make it cheaper", "Thanks", *failing] * 2)
    assert read_log(greeting.log).metadata.stop_reason == StopReason.SINGLE_TURN
    assert len({o.log for o in third.outcomes}) == 12
    assert len(list(out.glob("*.log"))) == 12  # redone runs reuse their file


async def test_resume_retries_a_run_that_failed_and_keeps_it_once_it_succeeds(tmp_path: Path) -> None:
    attempts: list[str] = []

    async def flaky(prompt: str, **_: Any) -> str:
        attempts.append(prompt)
        if len(attempts) == 1:
            raise ConnectionError("the provider is down")
        if len(attempts) == 2:
            await asyncio.sleep(5)
        return "fine"

    scenarios = [Scenario(name="s", turns=(ScenarioTurn(turn=1, message="hi"),))]
    reasons = []
    for _ in range(4):
        summary = await run_eval(scenarios, flaky, tmp_path, timeout=0.2, progress=False)
        reasons.append((summary.outcomes[0].stop_reason, summary.outcomes[0].skipped))
    assert reasons == [
        (StopReason.AGENT_ERROR, False),
        (StopReason.TIMEOUT, False),
        (StopReason.SINGLE_TURN, False),
        (StopReason.SINGLE_TURN, True),
    ]
    assert len(attempts) == 3
    assert len(list(tmp_path.glob("*.log"))) == 1


async def test_resume_keeps_a_missing_input_run(tmp_path: Path) -> None:
    calls: list[str] = []

    async def agent(prompt: str, **_: Any) -> str:
        calls.append(prompt)
        return "ok"

    scenarios = [Scenario(name="s", turns=(ScenarioTurn(turn=1, message="hi"), ScenarioTurn(turn=2, message="")))]
    await run_eval(scenarios, agent, tmp_path, progress=False)
    again = await run_eval(scenarios, agent, tmp_path, progress=False)
    assert calls == ["hi"]  # the scenario has no message to send: running it again cannot help
    assert again.outcomes[0].skipped and again.outcomes[0].stop_reason == StopReason.MISSING_INPUT


async def test_sync_agents_and_plain_string_replies_work(tmp_path: Path) -> None:
    def sync_agent(
        prompt: str, chat_history: str | None = None, memory: str | None = None, config: dict[str, Any] | None = None
    ) -> str:
        time.sleep(0.01)
        return f"{prompt} / {memory} / {config}"

    scenarios = [Scenario(name="x", turns=(ScenarioTurn(turn=1, message="hi"),))]
    summary = await run_eval(scenarios, sync_agent, tmp_path, memory="likes tea", config={"k": 1}, progress=False)
    log = read_log(summary.outcomes[0].log)
    assert log.turns[1].text == "hi / likes tea / {'k': 1}"
    assert json.loads((tmp_path / "manifest.json").read_text())["runs"][0]["scenario"] == "x"


@pytest.mark.parametrize("kwargs", [{"concurrency": 0}, {"max_turns": 0}, {"timeout": 0}, {"runs": 0}])
async def test_bad_limits_are_config_errors(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="must be"):
        await run_eval([], scripted_agent, tmp_path, **kwargs)


WAITING_TOOLS = '''
import time
from pathlib import Path

HERE = Path(__file__).parent


def hold(text: str) -> str:
    """Wait until the file `release` appears beside this one."""
    deadline = time.monotonic() + 30
    while not (HERE / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return "held"


def mark(text: str) -> str:
    """Leave the file `marked` beside this one."""
    (HERE / "marked").write_text(text, encoding="utf-8")
    return "marked"
'''

WAITING_WORKFLOW = (
    "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next,Failure_Next,"
    "Tool_Source,Available_Tools\n"
    'Hold,Hold,tool,,"{""tool"": ""hold""}",request:text,held,Mark,,tools.py,\n'
    'Hold,Mark,tool,,"{""tool"": ""mark""}",held:text,reply,,,tools.py,\n'
)


def _waiting_workflow(folder: Path) -> Path:
    (folder / "tools.py").write_text(WAITING_TOOLS, encoding="utf-8")
    path = folder / "waiting.csv"
    path.write_text(WAITING_WORKFLOW, encoding="utf-8")
    return path


async def test_a_timed_out_workflow_run_stops_after_the_step_it_was_in(tmp_path: Path) -> None:
    agent = agent_for(_waiting_workflow(tmp_path))
    scenarios = [Scenario(name="slow", turns=(ScenarioTurn(turn=1, message="hello"),))]
    summary = await run_eval(scenarios, agent, tmp_path / "logs", timeout=0.3, progress=False)
    assert summary.outcomes[0].stop_reason == StopReason.TIMEOUT
    (tmp_path / "release").touch()  # the step still running ends; the workflow goes no further
    give_up = deadline(30)
    while any(t.name.startswith("eval-run") for t in threading.enumerate()) and time.monotonic() < give_up:
        await asyncio.sleep(0.01)
    assert not any(t.name.startswith("eval-run") for t in threading.enumerate())
    assert not (tmp_path / "marked").exists()


async def test_a_cancelled_workflow_eval_without_timeout_stops_its_runs_after_their_step(tmp_path: Path) -> None:
    """With no timeout, a workflow agent's runs go on worker threads that take the next run; cancelling the eval
    (Ctrl-C) still ends each run in flight after its step."""
    agent = agent_for(_waiting_workflow(tmp_path))
    scenarios = [Scenario(name="slow", turns=(ScenarioTurn(turn=1, message="hello"),))]
    task = asyncio.ensure_future(run_eval(scenarios, agent, tmp_path / "logs", progress=False))
    give_up = deadline(30)
    while not any(t.name.startswith("eval-run") for t in threading.enumerate()) and time.monotonic() < give_up:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (tmp_path / "release").touch()
    while any(t.name.startswith("eval-run") for t in threading.enumerate()) and time.monotonic() < give_up:
        await asyncio.sleep(0.01)
    assert not any(t.name.startswith("eval-run") for t in threading.enumerate())
    assert not (tmp_path / "marked").exists()


async def test_workflow_runs_on_worker_threads_log_as_runs_on_the_event_loop(tmp_path: Path) -> None:
    """The same scripted scenarios through a workflow agent: without a timeout (worker threads take the runs) and
    with one (each run handed from the event loop) give the same turns, stop reasons and run records."""
    agent = agent_for("graphs/llm_offline.csv")
    scenarios = [
        Scenario(name="one", turns=(ScenarioTurn(turn=1, message="please reverse the text hello"),)),
        Scenario(
            name="three",
            turns=(
                ScenarioTurn(turn=1, message="count the words of this text"),
                ScenarioTurn(turn=2, message=""),
                ScenarioTurn(turn=3, message="never sent"),
            ),
        ),
        Scenario(
            name="two",
            turns=(ScenarioTurn(turn=1, message="hello"), ScenarioTurn(turn=2, message="title case this please")),
        ),
    ]

    def seen(summary: Any) -> list[Any]:
        runs, records = [], RunRecords(summary.out_dir)
        for outcome in summary.outcomes:
            log = read_log(outcome.log)
            record = records.get(outcome.log.name)
            runs.append((outcome.scenario, outcome.run, outcome.stop_reason, [t.text for t in log.turns], record))
        return runs

    threaded = await run_eval(scenarios, agent, tmp_path / "threads", runs=2, concurrency=3, progress=False)
    looped = await run_eval(
        scenarios, agent, tmp_path / "loop", runs=2, concurrency=3, timeout=scaled(60), progress=False
    )
    assert seen(threaded) == seen(looped)
    assert [o.stop_reason for o in threaded.outcomes][::2] == ["single_turn", "missing_input", "completed"]


async def test_a_run_redone_counts_as_done_only_once_it_ends_again(tmp_path: Path) -> None:
    """A run redone (`resume=False`, or a failure retried) loses its done mark until its new log is written: a
    kill in the middle of it leaves it to be redone, never an old mark beside a log cut short."""
    marked: list[bool | None] = []
    scenarios = [Scenario(name="s", turns=(ScenarioTurn(turn=1, message="hi"),))]
    first = await run_eval(scenarios, lambda prompt, **_: "ok", tmp_path, progress=False)
    log = first.outcomes[0].log.name

    def agent(prompt: str, **_: Any) -> str:
        marked.append(RunRecords(tmp_path).done(log))
        return "ok again"

    assert RunRecords(tmp_path).done(log)
    again = await run_eval(scenarios, agent, tmp_path, resume=False, progress=False)
    assert marked == [False] and not again.outcomes[0].skipped
    assert RunRecords(tmp_path).done(log) and read_log(again.outcomes[0].log).turns[-1].text == "ok again"


@pytest.mark.parametrize("timeout", [None, 60.0], ids=["worker-threads", "event-loop"])
async def test_a_log_that_cannot_be_written_stops_the_eval_run_and_no_run_after_it_is_marked_done(
    tmp_path: Path, timeout: float | None
) -> None:
    """Logs are written by one writer thread: a log that cannot be written (here a folder holds its name) ends the
    eval run with that error, and no run after it is written or marked done."""
    agent = agent_for("graphs/llm_offline.csv")
    scenarios = [Scenario(name=f"s{i}", turns=(ScenarioTurn(turn=1, message=f"hello {i}"),)) for i in range(40)]
    first = await run_eval(scenarios[:1], agent, tmp_path, progress=False)
    blocked = first.outcomes[0].log
    blocked.unlink()
    blocked.mkdir()  # the first run's log cannot be written
    with pytest.raises(ConfigError, match=rf"cannot write the log of scenario 's0' to .*{blocked.name}") as caught:
        await run_eval(scenarios, agent, tmp_path, concurrency=1, timeout=timeout, resume=False, progress=False)
    assert caught.value.code == "cannot-write"
    assert RunRecords(tmp_path).lines == {}  # the first run's log failed: no run after it was written or marked
