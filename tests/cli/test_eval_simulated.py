"""Simulated users in `agentmap eval run` (agentmap/interface/simulated_user.py) through the real command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import agentmap, write

from agentmap.interface.logs import read_log

BOOKING_AGENT = """
async def run_agent(prompt, chat_history=None, memory=None, config=None):
    state = {"booking": {"status": "confirmed" if "8 pm" in prompt else "open"}}
    if "book a table" in prompt:
        reply = "For how many people would you like to book?"
    elif "people" in prompt:
        reply = "At what time?"
    elif "8 pm" in prompt:
        reply = "Your table is confirmed."
    else:
        reply = "Sorry, I can only book tables. Can I help with a booking?"
    return {"content": reply, "state": state}
"""

GOAL = "I want to book a table. It is for 4 people. At 8 pm."
SIMULATED = (
    "scenario,persona,goal,max_turns,stop_when\n"
    f'phrase,a busy parent,{GOAL},5,"""confirmed"""\n'
    f'state,,{GOAL},5,"booking.status == ""confirmed"""\n'
    "open,,Book a table.,,\n"
    'never,,Tell me a joke.,3,"""ha ha"""\n'
)


def _run(tmp_path: Path, scenarios: str, *extra: str) -> dict[str, Any]:
    agent = write(tmp_path / "agent.py", BOOKING_AGENT)
    csv = write(tmp_path / "simulated.csv", scenarios)
    result = agentmap("eval", "run", csv, "--agent", agent, "--out", tmp_path / "logs", "--json", *extra)
    assert result.code == 0, result.text
    document: dict[str, Any] = json.loads(result.out)
    return document


def test_the_offline_user_pursues_its_goal_until_stop_when_or_max_turns(tmp_path: Path) -> None:
    ran = _run(tmp_path, SIMULATED)
    reasons = {r["scenario"]: r["stop_reason"] for r in ran["runs"]}
    assert reasons == {"phrase": "completed", "state": "completed", "open": "completed", "never": "max_turns"}
    logs = {r["scenario"]: read_log(r["log"]) for r in ran["runs"]}
    said = [t.text for t in logs["phrase"].turns if t.role == "user"]
    assert said == ["I want to book a table.", "It is for 4 people.", "At 8 pm."]  # the request, then the facts asked
    assert [t.text for t in logs["open"].turns if t.role == "user"] == ["Book a table."]
    never = [t.text for t in logs["never"].turns if t.role == "user"]
    assert never == ["Tell me a joke.", *["I still need this: Tell me a joke."] * 2]
    assert logs["never"].metadata.max_turns == 3

    scored = agentmap("eval", "score", tmp_path / "logs", "--json")
    assert scored.code == 1, scored.text
    findings = {r["scenario"]: r["findings"] for r in json.loads(scored.out)["runs"]}
    assert findings["phrase"] == findings["state"] == findings["open"] == []
    assert findings["never"] == [
        {
            "kind": "goal",
            "message": "the simulated user did not reach its goal: stopped at max_turns (3 user turns)",
            "turn": None,
        }
    ]


def test_max_turns_option_caps_the_simulated_conversation(tmp_path: Path) -> None:
    ran = _run(tmp_path, SIMULATED, "--max-turns", "2")
    reasons = {r["scenario"]: r["stop_reason"] for r in ran["runs"]}
    assert reasons["phrase"] == "max_turns" and reasons["open"] == "completed"


def test_k_trials_of_a_simulated_user_and_resume(tmp_path: Path) -> None:
    ran = _run(tmp_path, SIMULATED, "--k", "3", "--concurrency", "4")
    assert len(ran["runs"]) == 12 and len({r["log"] for r in ran["runs"]}) == 12
    again = _run(tmp_path, SIMULATED, "--k", "3")
    assert again["counts"] == {"skipped": 12}
    changed = _run(tmp_path, SIMULATED.replace("Tell me a joke.", "Tell me a pun."), "--k", "3")
    assert changed["counts"] == {"skipped": 9, "max_turns": 3}  # a changed goal is run again


def test_bad_simulated_user_cells_are_refused_at_load(tmp_path: Path) -> None:
    agent = write(tmp_path / "agent.py", BOOKING_AGENT)
    cases = [
        ("scenario,goal,stop_when\ns,Book.,booking.__class__\n", "bad-expression", "2:stop_when"),
        ("scenario,goal,max_turns\ns,Book.,many\n", "bad-scenarios", "2:max_turns"),
        ("scenario,user_message,persona\ns,hi,a pirate\n", "bad-scenarios", "2:persona"),
        ("scenario,user_message,goal\ns,hi,Book.\ns,again,\n", "bad-scenarios", "3:scenario"),
    ]
    for text, code, where in cases:
        csv = write(tmp_path / "bad.csv", text)
        result = agentmap("eval", "run", csv, "--agent", agent, "--out", tmp_path / "logs")
        assert result.code == 2, result.text
        assert f"error[{code}]: {csv}:{where}:" in result.text, result.text
    assert not (tmp_path / "logs").exists()


def test_an_unknown_user_model_stops_before_any_run(tmp_path: Path) -> None:
    agent = write(tmp_path / "agent.py", BOOKING_AGENT)
    csv = write(tmp_path / "s.csv", "scenario,goal\ns,Book a table.\n")
    result = agentmap("eval", "run", csv, "--agent", agent, "--out", tmp_path / "logs", "--user-model", "nope:x")
    assert result.code == 2 and "error[bad-config]" in result.text and "nope" in result.text
    assert not list((tmp_path / "logs").glob("*.log"))


def test_k_1_writes_what_a_run_without_k_writes(tmp_path: Path) -> None:
    csv = write(tmp_path / "s.csv", "scenario,turn,user_message\na,1,hello\nb,1,hi\nb,2,book a table\n")
    agent = write(tmp_path / "agent.py", BOOKING_AGENT)
    plain = agentmap("eval", "run", csv, "--agent", agent, "--out", tmp_path / "plain")
    once = agentmap("eval", "run", csv, "--agent", agent, "--out", tmp_path / "once", "--k", "1")
    assert plain.code == once.code == 0
    assert once.out.replace("once", "plain") == plain.out
    manifests = [json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("plain", "once")]
    assert manifests[0]["scenarios"] == manifests[1]["scenarios"] and "user" not in json.dumps(manifests[0])
    texts = [
        sorted(json.dumps([t.text for t in read_log(p).turns]) for p in (tmp_path / d).glob("*.log"))
        for d in ("plain", "once")
    ]
    assert texts[0] == texts[1]
