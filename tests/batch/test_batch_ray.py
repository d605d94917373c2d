"""The same batches on Ray (the run's local Ray with 2 CPUs: `ray_session` in tests/conftest.py) as on threads and
processes."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from batch_helpers import shout_flow, words
from test_batch_executors import comparable
from test_batch_retry import retry_flow  # first: it puts the stub provider on sys.path and sets its key

from openai_stub import OpenAIStub, error, text  # isort: skip

import agentmap

pytestmark = [pytest.mark.ray, pytest.mark.slow]

GRAPHS = Path(__file__).resolve().parents[2] / "graphs"


def test_ray_matches_thread_and_process(ray_session: Any) -> None:
    """The example ships its functions/ folder (a func: router) to the actors."""
    rows = [{"ticket_id": f"T-{i}", "customer": "Ada", "amount": a} for i, a in enumerate((40, 250, "n/a", 12, 99))]
    example = GRAPHS / "batch_example.csv"
    threads = agentmap.batch(example, rows, id_column="ticket_id")
    processes = agentmap.batch(example, rows, id_column="ticket_id", executor="process", workers=2)
    on_ray = agentmap.batch(example, rows, id_column="ticket_id", executor="ray", chunk_size=2)
    assert comparable(on_ray) == comparable(threads) == comparable(processes)
    assert (on_ray.successes, on_ray.failures) == (4, 1)


def test_ray_output_and_resume_with_custom_agents(ray_session: Any, tmp_path: Path) -> None:
    """Custom agents travel too; results, failures and resume behave as with the local executors."""
    flow, out = shout_flow(tmp_path / "flow"), tmp_path / "out.csv"
    first = agentmap.batch(flow, words("a", "boom", "c"), output=out, executor="ray", workers=2, chunk_size=1)
    assert (first.successes, first.failures) == (2, 1)
    with out.open(encoding="utf-8", newline="") as handle:
        assert [r["framed"] for r in csv.DictReader(handle)] == ["<A>", "<None>", "<C>"]
    again = agentmap.batch(flow, words("a", "boom", "c", "d"), output=out, executor="ray", workers=2)
    assert (again.skipped, again.successes) == (3, 1)


def test_ray_workers_write_every_rows_spans(ray_session: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each Ray worker makes its own exporter from the shipped text and sends its spans with each chunk of rows."""
    import json

    monkeypatch.chdir(tmp_path)  # a relative trace file: Ray workers run in folders of their own, yet write here
    names = [{"name": n} for n in ("Ada", "Grace", "Alan", "Edsger", "Barbara")]
    result = agentmap.batch(
        GRAPHS / "hello_world.csv", names, executor="ray", workers=2, chunk_size=2, tracing="file:spans.jsonl"
    )
    assert result.success
    spans = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text(encoding="utf-8").splitlines()]
    (batch,) = [s for s in spans if s["name"] == "agentmap.batch HelloWorld"]
    runs = [s for s in spans if s["name"] == "agentmap.run HelloWorld"]
    assert sorted(r["attributes"]["agentmap.batch.row"] for r in runs) == [1, 2, 3, 4, 5]
    assert all(r["parentSpanId"] == batch["spanId"] for r in runs)


def test_ray_actors_honour_the_node_retry_policy(ray_session: Any, tmp_path: Path) -> None:
    """A 429 then an answer: the row succeeds on its second attempt; two 503s spend a two-attempt policy."""
    with OpenAIStub() as stub:
        stub.script(error(429, "slow down"), text("first"), error(503, "busy"), error(503, "busy"))
        flow = retry_flow(tmp_path, stub, {"max_attempts": 2, "initial_interval": 0.01})
        result = agentmap.batch(flow, [{"question": "a"}, {"question": "b"}], executor="ray", workers=1)
        assert [(r.success, r.outputs["answer"]) for r in result.rows] == [(True, "first"), (False, None)]
        assert "HTTP 503" in (result.rows[1].error or "") and len(stub.requests) == 4


def test_a_second_batch_sees_an_edited_custom_agent(ray_session: Any, tmp_path: Path) -> None:
    """Ray workers keep compiled workflows between batches; an edited file is a new workflow, not a stale one."""
    flow = shout_flow(tmp_path / "flow")
    assert [r.outputs["framed"] for r in agentmap.batch(flow, words("a", "b"), executor="ray").rows] == ["<A>", "<B>"]
    agent_file = tmp_path / "flow" / "custom_agents" / "shout.py"
    agent_file.write_text(agent_file.read_text().replace(".upper()", ".upper() + '!'"), encoding="utf-8")
    again = agentmap.batch(flow, words("a", "b"), executor="ray")
    assert [r.outputs["framed"] for r in again.rows] == ["<A!>", "<B!>"]


_DIE_ONCE = '''
import os
from pathlib import Path

from agentmap import BaseAgent


class DieOnceAgent(BaseAgent):
    """Upper-cases `word`; the word `die` kills its own process the first time (it leaves a marker file)."""

    def process(self, inputs):
        marker = Path(inputs["marker"])
        if inputs.get("word") == "die" and not marker.exists():
            marker.write_text("died", encoding="utf-8")
            os.kill(os.getpid(), 9)
        return str(inputs.get("word")).upper()
'''


def test_a_ray_worker_killed_mid_batch_loses_no_finished_row_and_runs_none_twice(
    ray_session: Any, tmp_path: Path
) -> None:
    (tmp_path / "custom_agents").mkdir()
    (tmp_path / "custom_agents" / "die_once.py").write_text(_DIE_ONCE, encoding="utf-8")
    flow = tmp_path / "flow.csv"
    flow.write_text("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Loud,die_once,word|marker,loud\n")
    marker, out = str(tmp_path / "died"), tmp_path / "out.csv"
    rows = [{"word": w, "marker": marker} for w in ("a", "b", "c", "die", "e", "f", "g", "h")]
    with pytest.raises(agentmap.NodeError) as stopped:
        agentmap.batch(flow, rows, output=out, executor="ray", workers=2, chunk_size=1)
    assert stopped.value.code == "worker-died" and "finished rows are kept" in (stopped.value.hint or "")
    journal = (tmp_path / "out.csv.partial").read_text(encoding="utf-8").splitlines()[1:]  # after its header
    kept = [json.loads(line)["row"] for line in journal]
    assert 4 not in kept and len(kept) == len(set(kept))  # finished rows only (row 4 died), each once
    again = agentmap.batch(flow, rows, output=out, executor="ray", workers=2, chunk_size=1)
    assert again.success and again.skipped == len(kept) and again.skipped + again.successes == len(rows)
    with out.open(encoding="utf-8", newline="") as handle:
        written = list(csv.DictReader(handle))
    assert [(r["word"], r["loud"]) for r in written] == [(w["word"], w["word"].upper()) for w in rows]


def test_a_ray_batch_leaves_no_copy_of_the_workflow_behind(ray_session: Any, tmp_path: Path) -> None:
    """Ray stops its workers without their exit hooks: the copy they ran from is removed by the batch itself."""
    (tmp_path / "custom_agents").mkdir()
    (tmp_path / "custom_agents" / "where.py").write_text(
        "from pathlib import Path\n\nfrom agentmap import BaseAgent\n\n\n"
        "class WhereAgent(BaseAgent):\n"
        "    def process(self, inputs):\n"
        "        return str(Path(__file__).parent.parent)\n",
        encoding="utf-8",
    )
    flow = tmp_path / "where.csv"
    flow.write_text(
        "GraphName,Node,AgentType,Input_Fields,Output_Field\nWhere,Ask,where,word,folder\n", encoding="utf-8"
    )
    result = agentmap.batch(flow, words("a", "b", "c"), executor="ray", workers=2, chunk_size=1)
    folders = {row.outputs["folder"] for row in result.rows}
    assert result.successes == 3 and len(folders) == 1, result.rows  # one copy per machine, shared by its workers
    copy = Path(folders.pop())
    assert copy != tmp_path and not copy.exists(), f"{copy} is still there"
