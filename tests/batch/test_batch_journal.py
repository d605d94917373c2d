"""The call journal under `agentmap batch --checkpoint`: a row killed inside its node's tool loop and run again by
the same command continues its thread, so no answered model call is sent again and no tool effect is repeated
(a tool call cut short is held in doubt: the row pauses instead)."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import forked
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from test_journal import Loop, _effects, _setup, _until

from openai_stub import OpenAIStub  # isort: skip

pytestmark = pytest.mark.slow

BATCH = ("batch", "pay.csv", "--input", "rows.csv", "--output", "out.csv", "--id-column", "id", "--checkpoint",
         "runs.db", "--workers", "1")  # fmt: skip


@pytest.fixture
def loop() -> Iterator[Loop]:
    with OpenAIStub() as server:
        yield Loop(server)


def _kill_batch_at(folder: Path, env: dict[str, str], loop: Loop, boundary: str, executor: str) -> None:
    """Run the batch and SIGKILL it inside `model2` (its request held) or `tool1` (after the charge)."""
    kind, number = boundary[:-1], int(boundary[-1])
    if kind == "model":
        loop.hold = number - 1
    else:
        Path(env["EFFECTS"] + f".hold{number}").touch()
    proc = forked.start(*BATCH, "--executor", executor, cwd=folder, env=env)
    if kind == "model":
        _until(loop.held.is_set, proc, f"model call {number} sent")
    else:
        _until(lambda: f"charge {number}" in _effects(folder), proc, f"charge {number} made")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    Path(env["EFFECTS"] + f".hold{number}").unlink(missing_ok=True)


@pytest.mark.parametrize("executor", ["process", "thread"])
def test_a_row_killed_after_a_model_call_continues_without_calling_it_again(
    tmp_path: Path, loop: Loop, executor: str
) -> None:
    env = _setup(tmp_path, loop.stub)
    (tmp_path / "rows.csv").write_text("id,q\nr1,pay\n")
    _kill_batch_at(tmp_path, env, loop, "model2", executor)  # model 1 and charge 1 journaled finished
    code, out, err = forked.run(*BATCH, "--executor", executor, cwd=tmp_path, env=env)
    assert code == 0, (out, err)
    assert "paid twice" in (tmp_path / "out.csv").read_text()
    assert _effects(tmp_path) == ["charge 1", "charge 2"]
    assert loop.counts() == {0: 1, 1: 2, 2: 1}, loop.counts()  # only the call in flight was sent again


def test_a_row_killed_inside_a_tool_call_holds_it_in_doubt(tmp_path: Path, loop: Loop) -> None:
    env = _setup(tmp_path, loop.stub)
    (tmp_path / "rows.csv").write_text("id,q\nr1,pay\n")
    _kill_batch_at(tmp_path, env, loop, "tool1", "process")
    code, out, err = forked.run(*BATCH, "--executor", "process", cwd=tmp_path, env=env)
    assert code == 1, (out, err)  # the row pauses: it asks whether the charge took effect
    assert "did `charge_card` with these arguments take effect?" in (tmp_path / "out.csv").read_text()
    assert "agentmap resume r1 ANSWER --checkpoint" in (tmp_path / "out.csv").read_text()
    assert _effects(tmp_path) == ["charge 1"]
    assert loop.counts() == {0: 1}, loop.counts()
    # run again with --redo-failed: the row asks again and charges nothing
    code, out, err = forked.run(*BATCH, "--executor", "process", "--redo-failed", cwd=tmp_path, env=env)
    assert code == 1 and _effects(tmp_path) == ["charge 1"], (out, err)
    code, out, err = forked.run("resume", "r1", "done", "--checkpoint", "runs.db", "--json", cwd=tmp_path, env=env)
    assert code == 0 and json.loads(out)["state"]["answer"] == "paid twice", (out, err)
    assert _effects(tmp_path) == ["charge 1", "charge 2"]
    assert loop.counts() == {0: 1, 1: 1, 2: 1}, loop.counts()


def test_a_row_whose_cells_changed_under_the_same_id_starts_over(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
    from cli_helpers import agentmap

    (tmp_path / "flow.csv").write_text(
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Prompt\n"
        "F,Greet,template,name,greeting,Ask,Hello {name}\n"
        "F,Ask,human,greeting,answer,,Go on?\n"
    )
    batch = ("batch", "flow.csv", "-i", "rows.csv", "-o", "out.csv", "--id-column", "id", "--checkpoint", "runs.db")
    (tmp_path / "rows.csv").write_text("id,name\nr1,Ada\n")
    assert agentmap(*batch, cwd=tmp_path).code == 1  # paused at Ask: the row's thread is unfinished
    assert "Hello Ada" in (tmp_path / "out.csv").read_text()
    (tmp_path / "rows.csv").write_text("id,name\nr1,Grace\n")  # the same id, another cell
    agentmap(*batch, "--redo-failed", cwd=tmp_path)
    out = (tmp_path / "out.csv").read_text()
    assert "Hello Grace" in out and "Hello Ada" not in out  # started over, not the earlier row's run continued
