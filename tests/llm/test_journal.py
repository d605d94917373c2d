"""The call journal through the real command: a 3-call tool loop killed with SIGKILL at each call boundary, then
`agentmap resume`; a tool call in doubt answered done, retry and fail; a request changed since it was journaled;
`agentmap threads show ID --calls`."""

from __future__ import annotations

import csv
import json
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import forked
import pytest
from openai_stub import OpenAIStub, Reply, text, tool_calls
from timing import deadline, scaled, until

sys.path.insert(0, str(Path(__file__).parents[1] / "cli"))
from cli_helpers import agentmap_tty
from components import clean_env

pytestmark = pytest.mark.slow

TOOLS = '''
import os, time
from pathlib import Path


def charge_card(amount: int) -> str:
    """Charge the card."""
    Path(os.environ["EFFECTS"] + f".pid{amount}").write_text(str(os.getpid()))  # the process the test must see end
    with open(os.environ["EFFECTS"], "a") as handle:
        handle.write(f"charge {amount}\\n")
    while Path(os.environ["EFFECTS"] + f".hold{amount}").exists():  # the test kills the process here
        time.sleep(0.01)
    return f"charged {amount}"
'''
HEADER = [
    "GraphName",
    "Node",
    "AgentType",
    "Prompt",
    "Context",
    "Input_Fields",
    "Output_Field",
    "Success_Next",
    "Failure_Next",
    "Tool_Source",
    "Available_Tools",
]


class Loop:
    """The model of a 3-call tool loop: charge 1, charge 2, then answer; a request can be held (to kill there)."""

    def __init__(self, stub: OpenAIStub) -> None:
        self.stub = stub
        self.hold: int | None = None  # hold the request that carries this many tool results
        self.held = threading.Event()
        stub.script(*[self.answer] * 40)

    def answer(self, body: dict[str, Any]) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done == self.hold:
            self.hold = None
            self.held.set()
            self.stub._closing.wait(scaled(30))  # the client is killed meanwhile
        return text("paid twice") if done >= 2 else tool_calls(("charge_card", {"amount": done + 1}))

    def counts(self) -> Counter[int]:
        """How many requests carried 0, 1 and 2 tool results (each a distinct model call)."""
        return Counter(sum(1 for m in r["messages"] if m["role"] == "tool") for r in self.stub.requests)


@pytest.fixture
def loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[Loop]:
    with OpenAIStub() as server:
        yield Loop(server)


def _setup(folder: Path, stub: OpenAIStub, extra: dict[str, Any] | None = None) -> dict[str, str]:
    """The tool loop's workflow (`extra` added to its Context) and the environment to run it in."""
    (folder / "tools.py").write_text(TOOLS)
    context = {"model": "gpt-stub", "base_url": stub.base_url, "max_retries": 0, **(extra or {})}
    with (folder / "pay.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerow(
            ["g", "Pay", "openai", "Pay.", json.dumps(context), "q", "answer", "", "Oops", "tools.py", "charge_card"]
        )
        writer.writerow(["g", "Oops", "echo", "", "", "errors", "problem", "", "", "", ""])
    env = clean_env()
    return env | {"OPENAI_API_KEY": "sk-stub", "EFFECTS": str(folder / "effects.txt")}


def _effects(folder: Path) -> list[str]:
    path = folder / "effects.txt"
    return path.read_text().splitlines() if path.exists() else []


def _until(condition: Any, proc: forked.Forked, what: str, within: float = 30) -> None:
    give_up = deadline(within)
    while time.monotonic() < give_up:
        if condition():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


RUN = ("run", "pay.csv", "--thread", "t", "--state", '{"q": "pay"}', "--json")


def _kill_at(
    folder: Path,
    env: dict[str, str],
    loop: Loop,
    boundary: str,
    command: tuple[str, ...] = RUN,
    within: float = 30,
    start: Callable[..., Any] = forked.start,
) -> None:
    """Run `command` (the workflow, or a batch of it) and SIGKILL it inside `model1`..`model3` (its request held)
    or `tool1`, `tool2` (after the charge took effect, before the tool returned), waiting up to `within` seconds
    for it to get there. `start` starts the command (`forked.start`'s arguments; what it returns is killed)."""
    kind, number = boundary[:-1], int(boundary[-1])
    if kind == "model":
        loop.hold = number - 1
    else:
        Path(env["EFFECTS"] + f".hold{number}").touch()
    proc = start(*command, cwd=folder, env=env)
    if kind == "model":
        _until(loop.held.is_set, proc, f"model call {number} sent", within)
    else:
        _until(lambda: f"charge {number}" in _effects(folder), proc, f"charge {number} made", within)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=scaled(30))
    if kind == "tool":  # released only once the process in the tool ended (a batch's worker process ends after it)
        pid = int(Path(env["EFFECTS"] + f".pid{number}").read_text())
        until(lambda: not _running(pid), 30, f"the process in charge_card (pid {pid}) outlived the killed command")
    Path(env["EFFECTS"] + f".hold{number}").unlink(missing_ok=True)


def _running(pid: int) -> bool:
    """Whether process `pid` runs (not gone, not a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _pending_task(folder: Path, env: dict[str, str]) -> str:
    script = (
        "import os, agentmap\n"
        "app = agentmap.compile('pay.csv', checkpointer=agentmap.checkpointer(os.environ.get('AGENTMAP_CHECKPOINT')))\n"
        "print(app.graph.get_state({'configurable': {'thread_id': 't'}}).tasks[0].id)\n"
    )
    code, out, err = forked.python(script, cwd=folder, env=env)
    assert code == 0, err
    return out.strip()


def _resume(folder: Path, env: dict[str, str], *answer: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = forked.run("resume", "t", *answer, "--json", cwd=folder, env=env)
    return code, (json.loads(out) if out.strip() else {}), err


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres])])
def store(request: pytest.FixtureRequest) -> dict[str, str]:
    """The checkpoint: the default SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        return {}
    return {"AGENTMAP_CHECKPOINT": str(request.getfixturevalue("postgres_url"))}


@pytest.mark.matrix  # boundary x store: sampled unless AGENTMAP_TEST_FULL_MATRIX=1 (tests/conftest.py)
@pytest.mark.parametrize("boundary", ["model1", "tool1", "model2", "tool2", "model3"])
def test_a_kill_at_each_call_boundary_repeats_no_finished_call_and_no_effect(
    tmp_path: Path, loop: Loop, boundary: str, store: dict[str, str]
) -> None:
    env = _setup(tmp_path, loop.stub) | store
    _kill_at(tmp_path, env, loop, boundary)
    # the journal's task id is the one LangGraph saved for the pending task, so the rerun finds its calls
    code, out, err = forked.run("threads", "show", "t", "--calls", "--json", cwd=tmp_path, env=env)
    assert code == 0, err
    journaled = {c["task_id"] for c in json.loads(out)["calls"]}  # none before the first call finished
    assert journaled == (set() if boundary == "model1" else {_pending_task(tmp_path, env)})
    code, final, err = _resume(tmp_path, env)
    if boundary.startswith("tool"):  # the charge took effect but never reported back: a person says what happened
        assert code == 0 and final["status"] == "paused", (code, final, err)
        asked = final["interrupts"][0]
        assert "did `charge_card` with these arguments take effect?" in asked["question"]
        assert asked["arguments"] == {"amount": int(boundary[-1])}
        code, final, err = _resume(tmp_path, env, "done")
    assert code == 0 and final["status"] == "done", (code, final, err)
    assert final["state"]["answer"] == "paid twice"
    assert _effects(tmp_path) == ["charge 1", "charge 2"]  # 0 repeated tool effects
    repeated = {n: c for n, c in loop.counts().items() if c > 1}
    in_flight = {int(boundary[-1]) - 1} if boundary.startswith("model") else set()
    assert set(repeated) == in_flight and all(c == 2 for c in repeated.values()), loop.counts()


@pytest.mark.parametrize(
    ("answer", "effects", "status"),
    [
        ('{"done": "charged 1 (by hand)"}', ["charge 1", "charge 2"], "done"),
        ("retry", ["charge 1", "charge 1", "charge 2"], "done"),
        ("fail", ["charge 1", "charge 2"], "done"),
    ],
)
def test_a_call_in_doubt_is_answered_done_retry_or_fail(
    tmp_path: Path, loop: Loop, answer: str, effects: list[str], status: str
) -> None:
    env = _setup(tmp_path, loop.stub)
    _kill_at(tmp_path, env, loop, "tool1")
    code, paused, err = _resume(tmp_path, env)
    assert code == 0 and paused["status"] == "paused", (code, paused, err)
    code, _, err = _resume(tmp_path, env, "maybe")
    assert code != 0 and "done, retry or fail" in err
    given = ("--data", answer) if answer.startswith("{") else (answer,)
    code, final, err = _resume(tmp_path, env, *given)
    assert code == 0 and final["status"] == status, (code, final, err)
    assert _effects(tmp_path) == effects
    second = loop.stub.requests[1]["messages"][-1]
    if answer == "fail":  # the model hears that the call failed, and is not asked to call it again by us
        assert second["role"] == "tool" and "in_doubt" in second["content"]
    elif answer.startswith("{"):
        assert second["content"] == "charged 1 (by hand)"


def test_a_changed_request_is_called_again(tmp_path: Path, loop: Loop) -> None:
    env = _setup(tmp_path, loop.stub)
    _kill_at(tmp_path, env, loop, "model2")
    # the tool's description changes: the first model request is no longer the one journaled
    (tmp_path / "tools.py").write_text(TOOLS.replace("Charge the card.", "Charge the customer's card."))
    code, final, err = _resume(tmp_path, env)
    assert code == 0 and final["status"] == "done", (code, final, err)
    assert loop.counts()[0] == 2  # called again
    assert _effects(tmp_path) == ["charge 1", "charge 2"]  # the tool call, the same as journaled, is not


def test_threads_show_calls_lists_the_journal(tmp_path: Path, loop: Loop) -> None:
    env = _setup(tmp_path, loop.stub)
    code, out, err = forked.run(
        "run", "pay.csv", "--thread", "t", "--state", '{"q": "pay"}', "--json", cwd=tmp_path, env=env
    )
    assert code == 0, err
    code, out, err = forked.run("threads", "show", "t", "--calls", "--json", cwd=tmp_path, env=env)
    assert code == 0, err
    calls = json.loads(out)["calls"]
    assert [(c["node"], c["call_index"], c["kind"], c["name"], c["status"]) for c in calls] == [
        ("Pay", 0, "model", "gpt-stub", "finished"),
        ("Pay", 1, "tool", "charge_card", "finished"),
        ("Pay", 2, "model", "gpt-stub", "finished"),
        ("Pay", 3, "tool", "charge_card", "finished"),
        ("Pay", 4, "model", "gpt-stub", "finished"),
    ]
    assert all(c["duration_ms"] >= 0 for c in calls)


def test_threads_show_calls_marks_the_calls_a_resume_replayed(tmp_path: Path, loop: Loop) -> None:
    env = _setup(tmp_path, loop.stub)
    _kill_at(tmp_path, env, loop, "model2")  # model 1 and charge 1 journaled finished
    code, final, err = _resume(tmp_path, env)
    assert code == 0 and final["status"] == "done", (code, final, err)
    code, out, err = forked.run("threads", "show", "t", "--calls", "--json", cwd=tmp_path, env=env)
    assert code == 0, err
    calls = json.loads(out)["calls"]
    assert [(c["call_index"], c["replays"], c["cache_hit"]) for c in calls] == [
        (0, 1, False),
        (1, 1, False),
        (2, 0, False),
        (3, 0, False),
        (4, 0, False),
    ]
    shown = agentmap_tty("threads", "show", "t", "--calls", cwd=tmp_path, env=env | {"COLUMNS": "200"})
    assert shown.code == 0 and shown.out.count("finished (replayed)") == 2, shown.out


def test_an_idempotent_tool_cut_short_is_called_again_without_asking(tmp_path: Path, loop: Loop) -> None:
    env = _setup(tmp_path, loop.stub)
    marked = TOOLS.replace("def charge_card", "import agentmap\n\n\n@agentmap.tool(idempotent=True)\ndef charge_card")
    (tmp_path / "tools.py").write_text(marked)
    _kill_at(tmp_path, env, loop, "tool1")
    code, final, err = _resume(tmp_path, env)
    assert code == 0 and final["status"] == "done", (code, final, err)
    assert _effects(tmp_path) == ["charge 1", "charge 1", "charge 2"]
    assert set(loop.counts().values()) == {1}  # no model call repeated
    usage = final["usage"]  # the replayed call costs nothing new: only the two calls made now count
    assert (usage["replayed_calls"], usage["input_tokens"], usage["output_tokens"]) == (1, 20, 10), usage


def test_a_tool_that_timed_out_is_in_doubt_on_a_rerun_never_made_again_silently(tmp_path: Path, loop: Loop) -> None:
    env = _setup(tmp_path, loop.stub, {"tool_timeout": 0.3})
    Path(env["EFFECTS"] + ".hold1").touch()  # charge 1 takes effect, then runs past its time limit
    _kill_at(tmp_path, env, loop, "model2")  # the model was told charge 1 timed out; killed in that call
    Path(env["EFFECTS"] + ".hold1").unlink()
    assert "did not finish within 0.3 seconds" in loop.stub.requests[1]["messages"][-1]["content"]
    code, paused, err = _resume(tmp_path, env)
    assert code == 0 and paused["status"] == "paused", (code, paused, err)  # asked, not charged again
    assert paused["interrupts"][0]["arguments"] == {"amount": 1}
    code, final, err = _resume(tmp_path, env, "done")
    assert code == 0 and final["status"] == "done", (code, final, err)
    assert _effects(tmp_path) == ["charge 1", "charge 2"]


@pytest.mark.parametrize(("context", "paused"), [({}, True), ({"idempotent": True}, False)])
def test_a_tool_node_cut_short_asks_unless_its_context_says_idempotent(
    tmp_path: Path, context: dict[str, Any], paused: bool
) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    with (tmp_path / "charge.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["GraphName", "Node", "AgentType", "Context", "Input_Fields", "Output_Field", "Tool_Source"])
        writer.writerow(
            ["g", "Charge", "tool", json.dumps({"tool": "charge_card", **context}), "amount", "result", "tools.py"]
        )
    env = clean_env() | {"EFFECTS": str(tmp_path / "e")}
    Path(env["EFFECTS"] + ".hold1").touch()
    args = ("run", "charge.csv", "--thread", "t", "--state", '{"amount": 1}', "--json")
    proc = forked.start(*args, cwd=tmp_path, env=env)
    _until(lambda: (tmp_path / "e").exists() and "charge 1" in (tmp_path / "e").read_text(), proc, "charge 1 made")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=scaled(30))
    Path(env["EFFECTS"] + ".hold1").unlink()
    code, final, err = _resume(tmp_path, env)
    assert code == 0 and final["status"] == ("paused" if paused else "done"), (code, final, err)
    if paused:
        code, final, err = _resume(tmp_path, env, "--data", '{"done": "charged 1 (seen on the statement)"}')
        assert code == 0 and final["state"]["result"] == "charged 1 (seen on the statement)", (code, final, err)
    assert (tmp_path / "e").read_text().splitlines() == ["charge 1"] * (1 if paused else 2)


def test_a_tool_node_that_may_ask_is_never_fused(tmp_path: Path) -> None:
    import agentmap

    (tmp_path / "tools.py").write_text(TOOLS)
    rows = [
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge,Tool_Source\n",
        "g,A,echo,,x,a,T,\n",
        'g,T,tool,"{""tool"": ""charge_card""}",a,t,B,tools.py\n',
        "g,B,echo,,t,b,C,\n",
        "g,C,echo,,b,c,,\n",
    ]
    (tmp_path / "flow.csv").write_text("".join(rows))
    assert agentmap.compile(tmp_path / "flow.csv", fuse=True).fused == {"B": ["B", "C"]}
    idempotent = rows[2].replace('""}"', '"", ""idempotent"": true}"')
    (tmp_path / "flow.csv").write_text("".join([*rows[:2], idempotent, *rows[3:]]))
    assert agentmap.compile(tmp_path / "flow.csv", fuse=True).fused == {"A": ["A", "T", "B", "C"]}


def test_a_replayed_model_call_still_reaches_a_streaming_client_as_one_chunk(tmp_path: Path, loop: Loop) -> None:
    env = _setup(tmp_path, loop.stub)
    _kill_at(tmp_path, env, loop, "model2")
    script = (
        "import json, os, agentmap\n"
        "app = agentmap.compile('pay.csv', checkpointer=agentmap.checkpointer(os.environ.get('AGENTMAP_CHECKPOINT')))\n"
        "for message, meta in app.stream(None, {'configurable': {'thread_id': 't'}}, stream_mode='messages'):\n"
        "    calls = [c['name'] for c in getattr(message, 'tool_call_chunks', [])]\n"
        "    print(json.dumps([type(message).__name__, meta['langgraph_node'], message.id, message.text, calls]))\n"
    )
    code, out, err = forked.python(script, cwd=tmp_path, env=env)
    assert code == 0, err
    chunks = [json.loads(line) for line in out.splitlines()]
    assert [c[4] for c in chunks].count(["charge_card"]) == 2, chunks  # charge 1 (replayed) and charge 2 (called)
    replayed = chunks[0]  # the first call, from the journal: one chunk, not again as a whole message
    assert replayed[:2] == ["AIMessageChunk", "Pay"] and replayed[4] == ["charge_card"], chunks
    assert [c[2] for c in chunks].count(replayed[2]) == 1
    assert "".join(c[3] for c in chunks) == "paid twice"  # the calls made for real (charge 2, the answer) stream
    assert loop.counts()[0] == 1  # the replayed call was not sent again


@pytest.mark.parametrize("damage", ["response", "digest", "status", "thread", "step", "node", "task", "index"])
def test_a_damaged_journal_entry_is_reported_never_replayed_nor_called_again(
    tmp_path: Path, loop: Loop, damage: str
) -> None:
    import sqlite3

    env = _setup(tmp_path, loop.stub)
    _kill_at(tmp_path, env, loop, "tool2")  # model 1, charge 1 and model 2 journaled finished; charge 2 started
    sent = len(loop.stub.requests)
    change = {
        "response": "response = replace(response, 'charged 1', 'charged 9')",
        "digest": "digest = substr(digest, 2) || substr(digest, 1, 1)",
        "status": "status = 'finishee'",
        # a damaged key would find no entry: the tool would be charged again without the key under the checksum
        "thread": "thread_id = 'u'",
        "step": "step = step + 1",
        "node": "node = 'Paz'",
        "task": "task_id = substr(task_id, 2) || substr(task_id, 1, 1)",
        "index": "call_index = 7",
    }[damage]
    with sqlite3.connect(tmp_path / ".agentmap" / "runs.db") as db:
        done = db.execute(f"UPDATE agentmap_journal SET {change} WHERE kind = 'tool' AND status = 'finished'")
        assert done.rowcount == 1
    code, _, err = _resume(tmp_path, env)
    assert code == 2 and "error[corrupt-checkpoint]" in err and "call journal's entry for call 1" in err, err
    assert "it was not replayed" in err and "--from-checkpoint" in err
    assert _effects(tmp_path) == ["charge 1", "charge 2"] and len(loop.stub.requests) == sent  # nothing again


HELD_SAVES = """
import logging, os, sys, time
from pathlib import Path
import agentmap

logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
logging.getLogger("agentmap.journal").setLevel(logging.DEBUG)
saver = agentmap.checkpointer(os.environ.get("AGENTMAP_CHECKPOINT"))
put = saver.put


def held_put(*args, **kwargs):  # every save waits while the file `hold` exists
    while Path("hold").exists():
        time.sleep(0.005)
    return put(*args, **kwargs)


saver.put = held_put
app = agentmap.compile("charge.csv", checkpointer=saver)
app.invoke({"amount": 1}, {"configurable": {"thread_id": "t"}})
"""


def test_a_call_waits_for_its_steps_checkpoint_so_a_kill_before_the_save_never_charges_twice(
    tmp_path: Path, store: dict[str, str]
) -> None:
    # LangGraph saves a run's first checkpoint in the background and derives the node's task id from it. Were
    # the tool called before that save, a kill would lose the checkpoint, the rerun would get another task id,
    # the journal would miss, and the card would be charged again. Here every save is held and the process
    # killed while they wait: the node waits too, so nothing was charged, and the rerun charges once.
    (tmp_path / "tools.py").write_text(TOOLS)
    with (tmp_path / "charge.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["GraphName", "Node", "AgentType", "Context", "Input_Fields", "Output_Field", "Tool_Source"])
        writer.writerow(["g", "Charge", "tool", json.dumps({"tool": "charge_card"}), "amount", "result", "tools.py"])
    env = clean_env() | store
    env["EFFECTS"] = str(tmp_path / "effects.txt")
    (tmp_path / "hold").touch()
    proc = forked.start_python(HELD_SAVES, cwd=tmp_path, env=env)
    waiting = "waits for checkpoint"
    _until(lambda: _effects(tmp_path) or waiting in proc.printed()[1], proc, "the charge, or the node waiting")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=scaled(30))
    (tmp_path / "hold").unlink()
    args = ("run", "charge.csv", "--thread", "t", "--state", '{"amount": 1}', "--json")
    code, out, err = forked.run(*args, cwd=tmp_path, env=env)
    assert code == 0 and json.loads(out)["state"]["result"] == "charged 1", (code, out, err)
    assert _effects(tmp_path) == ["charge 1"]
