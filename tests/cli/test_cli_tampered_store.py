"""A tampered store is refused, never half-used: rows of a saved thread swapped, moved, renamed or deleted (the
way a store edited by hand, or restored partly from a backup, looks), then `agentmap resume` through the real
command, on SQLite and on PostgreSQL. Each case must stop with `corrupt-checkpoint` (exit 2) naming the thread,
run no node again and charge no card again. Before, none was: 32 resumed with exit 0 running finished nodes
again (10 of them charging the card again), 2 ran finished nodes again and then failed (checkpoint-not-saved),
and 30 were refused as `not-paused`, whose hint (resume without an answer) runs finished nodes again.

The workflow counts through `ticks` nodes, then `Pay` charges a card twice through the call journal (a custom
agent's `LocalToolExecutor`), then fans out to `Ask` (which pauses) and `Side`. A thread is either paused at
`Ask` (`Side` finished: its writes pending), or killed inside `Pay`'s second charge (in doubt: a resume asks).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import agentmap, agentmap_forked

pytestmark = pytest.mark.slow

AGENTS = '''\
import asyncio
import os

from agentmap import BaseAgent
from agentmap.agents.questions import check_answer, question
from agentmap.agents.tools import LocalToolExecutor


def _side(name):
    with open(os.environ["TICK_FILE"], "a", encoding="utf-8") as side:
        side.write(name + "\\n")


def charge_card(amount: int) -> str:
    """Charge the card."""
    with open(os.environ["EFFECTS"], "a", encoding="utf-8") as handle:
        handle.write(f"charge {amount}\\n")
    if amount == 2 and os.environ.get("PAY_KILL"):
        os.kill(os.getpid(), 9)  # the process dies once the card is charged, before the tool returns
    return f"charged {amount}"


class TickAgent(BaseAgent):
    def process(self, inputs):
        _side(self.name)
        return (inputs.get("count") or 0) + 1


class PayAgent(BaseAgent):
    def process(self, inputs):
        _side(self.name)
        tools = LocalToolExecutor([charge_card])
        for amount in (1, 2):
            result = asyncio.run(tools.execute("charge_card", {"amount": amount}, "user"))
            assert result.success, result
        return "paid"


class ApproveAgent(BaseAgent):
    def process(self, inputs):
        from langgraph.types import interrupt

        _side(self.name)
        asked = question(self.name, "human", "Publish?", interaction="approval")
        return check_answer(asked, interrupt(asked))
'''
HEADER = "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\n"


def _workflow(folder: Path, ticks: int) -> None:
    (folder / "custom_agents").mkdir(exist_ok=True)
    (folder / "custom_agents" / "tamper_agents.py").write_text(AGENTS, encoding="utf-8")
    rows = [f"Flow,N{i},tick,count,count,{f'N{i + 1}' if i < ticks else 'Pay'}\n" for i in range(1, ticks + 1)]
    rows += [
        "Flow,Pay,pay,count,paid,Ask|Side\n",
        "Flow,Ask,approve,count,decision,End\n",
        "Flow,Side,tick,count,side,End\n",
        "Flow,End,tick,count,count,\n",
    ]
    (folder / "flow.csv").write_text(HEADER + "".join(rows), encoding="utf-8")


class Store:
    """The checkpoint database, opened as a person editing it would: plain SQL, `?` placeholders."""

    def __init__(self, target: str, folder: Path) -> None:
        self.postgres = target.startswith("postgresql://")
        self.writes = "checkpoint_writes" if self.postgres else "writes"
        self.content = "checkpoint, metadata" if self.postgres else "type, checkpoint, metadata"
        if self.postgres:
            import psycopg

            self.conn: Any = psycopg.connect(target, autocommit=True)
        else:
            self.conn = sqlite3.connect(folder / target, isolation_level=None)

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.conn.execute(self._sql(sql), params).fetchall()]

    def run(self, sql: str, *params: Any) -> int:
        return int(self.conn.execute(self._sql(sql), params).rowcount)

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s").replace("{writes}", self.writes) if self.postgres else sql.format(writes="writes")

    def ids(self, thread: str) -> list[str]:
        """The thread's checkpoint ids, newest first."""
        found = "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY 1 DESC"
        return [r[0] for r in self.rows(found, thread)]

    def swap(self, first: tuple[str, str], second: tuple[str, str]) -> None:
        """Swap the contents of two checkpoint rows (thread, id), each row keeping its key."""
        read = f"SELECT {self.content} FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?"
        (a,) = self.rows(read, *first)
        (b,) = self.rows(read, *second)
        columns = ", ".join(f"{c} = ?" for c in self.content.split(", "))
        for where, values in ((first, b), (second, a)):
            values = tuple(json.dumps(v) if isinstance(v, dict) else v for v in values)
            assert self.run(
                f"UPDATE checkpoints SET {columns} WHERE thread_id = ? AND checkpoint_id = ?", *values, *where
            )

    def delete(self, thread: str, *ids: str) -> None:
        for checkpoint_id in ids:
            assert self.run("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?", thread, checkpoint_id)
            self.run("DELETE FROM {writes} WHERE thread_id = ? AND checkpoint_id = ?", thread, checkpoint_id)


def _swap_steps(store: Store) -> None:
    newest, before = store.ids("a")[:2]
    store.swap(("a", newest), ("a", before))


def _swap_threads(store: Store) -> None:
    store.swap(("a", store.ids("a")[0]), ("b", store.ids("b")[0]))


def _delete_newest(store: Store) -> None:
    store.delete("a", store.ids("a")[0])


def _delete_two_newest(store: Store) -> None:
    store.delete("a", *store.ids("a")[:2])


def _delete_middle(store: Store) -> None:
    ids = store.ids("a")
    store.delete("a", ids[len(ids) // 2])


def _rename_newest(store: Store) -> None:
    newest = store.ids("a")[0]
    renamed = newest[:-12] + uuid.uuid4().hex[:12]  # as a row restored under another id: its writes follow it
    assert store.run(
        "UPDATE checkpoints SET checkpoint_id = ? WHERE thread_id = 'a' AND checkpoint_id = ?", renamed, newest
    )
    store.run("UPDATE {writes} SET checkpoint_id = ? WHERE thread_id = 'a' AND checkpoint_id = ?", renamed, newest)


def _delete_writes(store: Store) -> None:
    assert store.run("DELETE FROM {writes} WHERE thread_id = 'a' AND checkpoint_id = ?", store.ids("a")[0])


def _delete_finished_charge(store: Store) -> None:
    gone = "DELETE FROM agentmap_journal WHERE thread_id = 'a' AND call_index = 0 AND status = 'finished'"
    assert store.run(gone) == 1


def _delete_started_charge(store: Store) -> None:
    assert store.run("DELETE FROM agentmap_journal WHERE thread_id = 'a' AND status = 'started'") == 1


TAMPER: dict[str, Callable[[Store], None]] = {
    "swap-steps": _swap_steps,
    "swap-threads": _swap_threads,
    "delete-newest": _delete_newest,
    "delete-two-newest": _delete_two_newest,
    "delete-middle": _delete_middle,
    "rename-newest": _rename_newest,
    "delete-writes": _delete_writes,  # a paused thread: Side's writes; a killed one: Pay's step's writes
    "delete-journal-entry": _delete_finished_charge,
}


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest) -> str:
    return "runs.db" if request.param == "sqlite" else str(request.getfixturevalue("postgres_url"))


def _env(folder: Path, thread: str, target: str) -> dict[str, str]:
    return {
        "TICK_FILE": str(folder / f"ticks-{thread}.txt"),
        "EFFECTS": str(folder / f"effects-{thread}.txt"),
        "AGENTMAP_CHECKPOINT": target,
    }


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _paused(folder: Path, target: str, thread: str, count: int) -> None:
    state = json.dumps({"count": count})
    done = agentmap(
        "run", "flow.csv", "--thread", thread, "--state", state, "--json", cwd=folder, env=_env(folder, thread, target)
    )
    assert done.code == 0 and json.loads(done.out)["status"] == "paused", done.text


def _killed(folder: Path, target: str, thread: str, count: int) -> None:
    state = json.dumps({"count": count})
    env = _env(folder, thread, target) | {"PAY_KILL": "1"}
    done = agentmap_forked("run", "flow.csv", "--thread", thread, "--state", state, cwd=folder, env=env)
    assert done.code == -9, done.text
    assert _lines(folder / f"effects-{thread}.txt") == ["charge 1", "charge 2"]


@contextlib.contextmanager
def _opened(target: str, folder: Path) -> Iterator[Store]:
    store = Store(target, folder)
    try:
        yield store
    finally:
        store.conn.close()


def _tampered_resume(
    folder: Path, target: str, stop: Callable[..., None], tamper: Callable[[Store], None], answer: tuple[str, ...]
) -> None:
    """Stop thread `a` (and `b`, for a swap between threads) with `stop`, `tamper` with the store, resume `a`."""
    stop(folder, target, "a", 0)
    if tamper is _swap_threads:
        stop(folder, target, "b", 100)
    ticks, effects = _lines(folder / "ticks-a.txt"), _lines(folder / "effects-a.txt")
    with _opened(target, folder) as store:
        tamper(store)
    done = agentmap("resume", "a", *answer, "--json", cwd=folder, env=_env(folder, "a", target))
    assert done.code == 2, (done.code, done.text, _lines(folder / "ticks-a.txt"), _lines(folder / "effects-a.txt"))
    assert "error[corrupt-checkpoint]" in done.err and "thread 'a'" in done.err, done.err
    assert "Traceback" not in done.text and "error[internal]" not in done.text
    assert _lines(folder / "ticks-a.txt") == ticks, "a node ran again"
    assert _lines(folder / "effects-a.txt") == effects, "a card was charged again"


@pytest.mark.parametrize("kind", list(TAMPER))
@pytest.mark.parametrize("ticks", [1, 3, 5])
def test_a_tampered_paused_thread_is_refused_and_nothing_runs_again(
    tmp_path: Path, target: str, ticks: int, kind: str
) -> None:
    _workflow(tmp_path, ticks)
    _tampered_resume(tmp_path, target, _paused, TAMPER[kind], ("yes",))


# killed inside Pay, no write is pending: instead, the entry of the charge in doubt goes (a resume would ask)
KILLED = {k: v for k, v in TAMPER.items() if k != "delete-writes"} | {"delete-in-doubt-entry": _delete_started_charge}


@pytest.mark.parametrize("kind", list(KILLED))
def test_a_tampered_killed_thread_is_refused_and_no_card_is_charged_again(
    tmp_path: Path, target: str, kind: str
) -> None:
    _workflow(tmp_path, 2)
    _tampered_resume(tmp_path, target, _killed, KILLED[kind], ())


# -- a damaged SQLite file: each a corrupt-checkpoint naming the thread and what to do, never error[internal] ----


def _page(number: int) -> Callable[[Path], None]:
    def overwrite(db: Path) -> None:
        data = bytearray(db.read_bytes())
        size = int.from_bytes(data[16:18], "big")
        data[size * number : size * (number + 1)] = bytes((i * 37 + 11) % 256 for i in range(size))
        db.write_bytes(bytes(data))

    return overwrite


def _truncated(db: Path) -> None:
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])


def _sql(statement: str) -> Callable[[Path], None]:
    def change(db: Path) -> None:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            assert conn.execute(statement).rowcount
            conn.commit()

    return change


DAMAGE = {  # the first six were error[internal] before
    "checkpoint-as-text": _sql("UPDATE checkpoints SET checkpoint = 'not bytes'"),
    "checkpoint-null": _sql("UPDATE checkpoints SET checkpoint = NULL"),
    "type-null": _sql("UPDATE checkpoints SET type = NULL"),
    "metadata-a-number": _sql("UPDATE checkpoints SET metadata = 5"),
    "write-as-text": _sql("UPDATE writes SET value = 'not bytes'"),
    "write-type-null": _sql("UPDATE writes SET type = NULL"),
    "page-overwritten": _page(2),
    "truncated": _truncated,
    "table-dropped": _sql("DROP TABLE checkpoints"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_checkpoint_file_is_corrupt_checkpoint_never_an_internal_error(tmp_path: Path, damage: str) -> None:
    import durable_graphs

    durable_graphs.approval(tmp_path)
    env = {"TICK_FILE": str(tmp_path / "side.txt")}
    done = agentmap("run", "review.csv", "--thread", "p", "--state", '{"count": 0}', cwd=tmp_path, env=env)
    assert done.code == 0, done.text
    db = tmp_path / ".agentmap" / "runs.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:  # every page in the file itself, none in its log
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    DAMAGE[damage](db)
    file_level = damage in ("page-overwritten", "truncated")
    for command in (("resume", "p", "yes"), ("threads", "show", "p")):
        done = agentmap(*command, cwd=tmp_path, env=env)
        assert done.code == 2 and "error[corrupt-checkpoint]" in done.err, (command, done.text)
        assert "Traceback" not in done.text and "error[internal]" not in done.text
        named = "runs.db is damaged" if file_level else "thread 'p'"
        assert named in done.err and "hint:" in done.err, done.err
        assert file_level or "--from-checkpoint" in done.err or "--restart" in done.err, done.err
    assert _lines(tmp_path / "side.txt") == ["Draft"], "a node ran again"
