"""The call journal under `agentmap batch --checkpoint`: a row killed inside its node's tool loop and run again by
the same command continues its thread, so no answered model call is sent again and no tool effect is repeated
(a tool call cut short is held in doubt: the row pauses instead)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import forked
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from test_journal import Loop, _effects, _kill_at, _setup

from openai_stub import OpenAIStub  # isort: skip

pytestmark = pytest.mark.slow

BATCH = ("batch", "pay.csv", "--input", "rows.csv", "--output", "out.csv", "--id-column", "id", "--workers", "1")


def checkpoint(store: str, request: pytest.FixtureRequest) -> tuple[str, str]:
    """The `--checkpoint` option of a batch: a SQLite file, or a PostgreSQL database (the `postgres_url` fixture)."""
    return "--checkpoint", "runs.db" if store == "sqlite" else str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def loop() -> Iterator[Loop]:
    with OpenAIStub() as server:
        yield Loop(server)


@pytest.mark.matrix  # executor x store: sampled unless AGENTMAP_TEST_FULL_MATRIX=1 (tests/conftest.py)
@pytest.mark.parametrize(
    ("executor", "store"),
    [
        ("process", "sqlite"),
        ("thread", "sqlite"),
        ("async", "sqlite"),
        pytest.param("process", "postgres", marks=pytest.mark.postgres),
        pytest.param("async", "postgres", marks=pytest.mark.postgres),
    ],
)
def test_a_row_killed_after_a_model_call_continues_without_calling_it_again(
    tmp_path: Path, loop: Loop, executor: str, store: str, request: pytest.FixtureRequest
) -> None:
    batch = (*BATCH, *checkpoint(store, request), "--executor", executor)
    killed_in_second_call_then_continued(tmp_path, loop, batch)


def killed_in_second_call_then_continued(
    folder: Path,
    loop: Loop,
    batch: tuple[str, ...],
    within: float = 30,
    start: Callable[..., Any] = forked.start,
    killed: Callable[[], None] = lambda: None,
    rerun: Callable[..., tuple[int, str, str]] = forked.run,
) -> None:
    """Kill `batch` inside its row's second model call, run it again: the row finishes, no finished call repeated.
    `within`: seconds the batch may take to reach that call (and the second run to finish, four times that);
    `start` starts the first run (see `_kill_at`), `killed` is called once it was killed, `rerun` runs the second
    (`forked.run`'s arguments)."""
    env = _setup(folder, loop.stub)
    (folder / "rows.csv").write_text("id,q\nr1,pay\n")
    _kill_at(folder, env, loop, "model2", batch, within, start)  # model 1 and charge 1 journaled finished
    killed()
    first = _seen(folder, loop)
    code, _, err = rerun(*batch, cwd=folder, env=env, timeout=4 * within)
    try:
        assert code == 0 and "Traceback" not in err, err
        assert "paid twice" in (folder / "out.csv").read_text()
        assert _effects(folder) == ["charge 1", "charge 2"]
        assert loop.counts() == {0: 1, 1: 2, 2: 1}  # only the call in flight was sent again
    except AssertionError as failed:  # say what happened: the row's thread and journal, read only now
        story = f"after the kill: {first}\nafter the second run (exit {code}): {_seen(folder, loop)}"
        raise AssertionError(f"{failed}\n{story}\n{_thread(folder, env, batch)}") from None


def _seen(folder: Path, loop: Loop) -> str:
    """The effects, the requests the model got and the Ray workers still running."""
    ray = subprocess.run(["ps", "-eo", "pid,etimes,stat,args"], capture_output=True, text=True).stdout.splitlines()
    workers = [line.strip()[:100] for line in ray if "ray::" in line]
    return f"effects {_effects(folder)}, requests by tool results {dict(loop.counts())}, Ray workers {workers}"


def _thread(folder: Path, env: dict[str, str], batch: tuple[str, ...]) -> str:
    """The row's thread (its checkpoints and its call journal), as `agentmap threads show` lists them."""
    store = batch[batch.index("--checkpoint") + 1]
    shown = []
    for extra in ((), ("--calls",)):
        show = ("threads", "show", "r1", "--checkpoint", store, "--json", *extra)
        code, out, err = forked.run(*show, cwd=folder, env=env)
        shown.append(out if code == 0 else f"exit {code}: {err}")
    return f"thread {shown[0]}\ncalls {shown[1]}"


def test_a_row_killed_inside_a_tool_call_holds_it_in_doubt(tmp_path: Path, loop: Loop) -> None:
    env = _setup(tmp_path, loop.stub)
    (tmp_path / "rows.csv").write_text("id,q\nr1,pay\n")
    batch = (*BATCH, "--checkpoint", "runs.db", "--executor", "process")
    _kill_at(tmp_path, env, loop, "tool1", batch)
    code, out, err = forked.run(*batch, cwd=tmp_path, env=env)
    assert code == 1, (out, err)  # the row pauses: it asks whether the charge took effect
    assert "did `charge_card` with these arguments take effect?" in (tmp_path / "out.csv").read_text()
    assert "agentmap resume r1 ANSWER --checkpoint" in (tmp_path / "out.csv").read_text()
    assert _effects(tmp_path) == ["charge 1"]
    assert loop.counts() == {0: 1}, loop.counts()
    # run again with --redo-failed: the row asks again and charges nothing
    code, out, err = forked.run(*batch, "--redo-failed", cwd=tmp_path, env=env)
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


DECLINES = """
import os


def charge_card(amount: int) -> str:
    \"\"\"Charge the card; amount 2 is declined after the charge was made.\"\"\"
    with open(os.environ["EFFECTS"], "a") as handle:
        handle.write(f"charge {amount}\\n")
    if amount == 2:
        raise ValueError("declined")
    return f"charged {amount}"
"""


def test_a_finished_row_the_output_never_recorded_takes_its_threads_result_without_a_call(
    tmp_path: Path, charge: Path
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
    from cli_helpers import agentmap

    (tmp_path / "tools.py").write_text(DECLINES)
    flow = charge
    (tmp_path / "rows.csv").write_text("id,amount\nr1,1\nr2,2\n")
    batch = ("batch", "charge.csv", "-i", "rows.csv", "-o", "out.csv", "--id-column", "id", "--checkpoint", "runs.db")
    assert agentmap(*batch, cwd=tmp_path).code == 1  # r2 failed
    assert sorted(_effects(tmp_path)) == ["charge 1", "charge 2"]  # the rows run side by side
    (tmp_path / "out.csv").unlink()  # the rows finished, but the batch was stopped before it recorded them
    assert agentmap(*batch, cwd=tmp_path).code == 1
    assert sorted(_effects(tmp_path)) == ["charge 1", "charge 2"]  # each row took its thread's result: no charge
    rows = {r["row_id"]: r for r in csv.DictReader((tmp_path / "out.csv").open())}
    assert (rows["r1"]["success"], rows["r1"]["result"]) == ("true", "charged 1")
    assert rows["r2"]["success"] == "false" and "declined" in rows["r2"]["error"]
    assert agentmap(*batch, "--redo-failed", cwd=tmp_path).code == 1  # asked for: the failed r2 starts over
    assert sorted(_effects(tmp_path)) == ["charge 1", "charge 2", "charge 2"]
    flow.write_text(flow.read_text().replace('""charge_card""}', '""charge_card"", ""tool_timeout"": 20}'))
    (tmp_path / "out.csv").unlink()  # another version of the workflow: its rows run anew
    assert agentmap(*batch, cwd=tmp_path).code == 1
    assert sorted(_effects(tmp_path)) == ["charge 1", "charge 1", "charge 2", "charge 2", "charge 2"]


def test_a_sqlite_checkpoint_is_refused_with_ray_on_another_machine(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
    from cli_helpers import agentmap

    (tmp_path / "flow.csv").write_text("GraphName,Node,AgentType,Prompt\nF,Greet,template,Hello\n")
    (tmp_path / "rows.csv").write_text("id\nr1\n")
    batch = ("batch", "flow.csv", "-i", "rows.csv", "-o", "out.csv", "--checkpoint", "runs.db", "--executor", "ray")
    result = agentmap(*batch, "--ray-address", "ray://10.1.2.3:10001", cwd=tmp_path)
    assert result.code == 2, result.text
    assert "use a postgresql:// checkpoint" in result.text and "runs.db" in result.text
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "runs.db").exists()


@pytest.mark.postgres
def test_a_row_paused_in_postgres_names_the_resume_command_without_the_password(
    tmp_path: Path, postgres_url: str
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
    from cli_helpers import agentmap

    (tmp_path / "flow.csv").write_text(
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Prompt\n"
        "F,Greet,template,name,greeting,Ask,Hello {name}\n"
        "F,Ask,human,greeting,answer,,Go on?\n"
    )
    (tmp_path / "rows.csv").write_text("id,name\nr1,Ada\n")
    url = postgres_url.replace("@", ":s3cret@", 1)  # the test server trusts its user: any password does
    batch = ("batch", "flow.csv", "-i", "rows.csv", "-o", "out.csv", "--id-column", "id", "--checkpoint", url)
    assert agentmap(*batch, "--executor", "process", cwd=tmp_path).code == 1  # paused at Ask
    out = (tmp_path / "out.csv").read_text()
    assert "agentmap resume r1 ANSWER --checkpoint postgresql://" in out and ":***@" in out
    assert "s3cret" not in out
    resumed = agentmap("resume", "r1", "yes", "--checkpoint", url, "--json", cwd=tmp_path)
    assert resumed.code == 0 and json.loads(resumed.out)["state"]["answer"] == "yes", resumed.text
