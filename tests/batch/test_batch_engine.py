"""`agentmap.batch`: results in input order, failing rows, resume from the .partial file, --redo-failed."""

from __future__ import annotations

import csv
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from batch_helpers import record_every_row, shout_flow, words
from timing import scaled, until

import agentmap
from agentmap.batch import BatchResult, RowResult, parse_rate
from agentmap.batch.resume import partial_path
from agentmap.errors import ConfigError, WorkflowValidationError


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_rows_come_back_in_input_order_with_outputs_and_result_columns(tmp_path: Path) -> None:
    flow = shout_flow(tmp_path)
    rows = [{"word": w, "delay": d} for w, d in (("a", 0.08), ("b", 0.06), ("c", 0.04), ("d", 0.02), ("e", 0))]
    seen: list[str] = []
    out = tmp_path / "out.csv"
    result = agentmap.batch(flow, rows, output=out, concurrency=5, on_result=lambda r: seen.append(r.inputs["word"]))
    assert isinstance(result, BatchResult) and result.success
    assert [r.outputs["framed"] for r in result.rows] == ["<A>", "<B>", "<C>", "<D>", "<E>"]
    assert sorted(seen) == ["a", "b", "c", "d", "e"]
    table = _read_csv(out)
    assert list(table[0]) == [
        "word",
        "delay",
        "loud",
        "framed",
        "success",
        "error",
        "failed_nodes",
        "duration_s",
        "tokens_in",
        "tokens_out",
        "tokens_cached",
        "cost",
        "row_id",
    ]
    assert [r["framed"] for r in table] == ["<A>", "<B>", "<C>", "<D>", "<E>"]
    assert all(r["success"] == "true" and r["error"] == "" for r in table)
    assert not partial_path(out).exists()


def test_a_failing_row_does_not_stop_the_batch(tmp_path: Path) -> None:
    result = agentmap.batch(shout_flow(tmp_path), words("x", "boom", "y"), concurrency=2)
    assert (result.successes, result.failures) == (2, 1)
    failed = result.rows[1]
    assert not failed.success and failed.failed_nodes == ("Loud",)
    assert "the word was boom" in (failed.error or "") and "\n" not in (failed.error or "")
    assert [r.row for r in result.failed_rows] == [2]


def test_to_frame_and_dataframe_input(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"word": ["p", "q"], "delay": [0, 0]})
    result = agentmap.batch(shout_flow(tmp_path), frame, executor="async")
    table = result.to_frame()
    assert list(table["framed"]) == ["<P>", "<Q>"] and list(table["success"]) == [True, True]


def test_rerun_skips_done_rows_and_redo_failed_reruns_only_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "runs.log"
    monkeypatch.setenv("BATCH_RUN_LOG", str(log))
    flow, out = shout_flow(tmp_path), tmp_path / "out.jsonl"
    first = agentmap.batch(flow, words("a", "boom", "c"), output=out)
    assert (first.successes, first.failures) == (2, 1)
    again = agentmap.batch(flow, words("a", "boom", "c"), output=out)
    assert (again.skipped, again.successes + again.failures) == (3, 0)
    redo = agentmap.batch(flow, words("a", "boom", "c"), output=out, redo_failed=True)
    assert (redo.skipped, redo.failures) == (2, 1)
    assert sorted(log.read_text().split()) == ["a", "boom", "boom", "c"]  # boom twice: run, then redone
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["word"] for line in lines] == ["a", "boom", "c"]  # once each, in input order


def test_resume_from_a_partial_file_cut_by_a_kill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record_every_row(monkeypatch)
    log = tmp_path / "runs.log"
    flow, out = shout_flow(tmp_path), tmp_path / "out.csv"
    rows = words("a", "b", "c", "d")

    def stop(result: RowResult) -> None:
        if result.row == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        agentmap.batch(flow, rows, output=out, concurrency=1, on_result=stop)
    partial = partial_path(out)
    with partial.open("a", encoding="utf-8") as handle:
        handle.write('{"row": 3, "row_id": "3-')  # a line cut in half, as kill -9 may leave it
    monkeypatch.setenv("BATCH_RUN_LOG", str(log))
    result = agentmap.batch(flow, rows, output=out, concurrency=1)
    assert (result.skipped, result.successes) == (2, 2)
    assert log.read_text().split() == ["c", "d"]
    assert [r["framed"] for r in _read_csv(out)] == ["<A>", "<B>", "<C>", "<D>"]


def test_ctrl_c_keeps_finished_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record_every_row(monkeypatch)
    flow, out = shout_flow(tmp_path), tmp_path / "out.csv"

    def stop(result: RowResult) -> None:
        if result.row == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as caught:
        agentmap.batch(flow, words("a", "b", "c"), output=out, concurrency=1, on_result=stop)
    assert caught.value.result.successes == 2  # type: ignore[attr-defined]
    assert not out.exists() and partial_path(out).is_file()
    result = agentmap.batch(flow, words("a", "b", "c"), output=out)
    assert (result.skipped, result.successes) == (2, 1)


_GATE = """
import os
import time

from agentmap import BaseAgent


class GateAgent(BaseAgent):
    \"\"\"Returns `word`; a row with a `gate` file waits (a minute at most) until that file exists.\"\"\"

    def process(self, inputs):
        deadline = time.monotonic() + 60
        while inputs.get("gate") and not os.path.exists(inputs["gate"]) and time.monotonic() < deadline:
            time.sleep(0.01)
        return inputs.get("word")
"""


def test_rows_finished_are_written_within_the_window_while_a_slow_row_runs(tmp_path: Path) -> None:
    (tmp_path / "custom_agents").mkdir()
    (tmp_path / "custom_agents" / "gate.py").write_text(_GATE, encoding="utf-8")
    flow = tmp_path / "gate.csv"
    flow.write_text("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Gate,gate,word|gate,said\n")
    out, go = tmp_path / "out.csv", tmp_path / "go"
    rows = [{"word": "a", "gate": ""}, {"word": "b", "gate": ""}, {"word": "slow", "gate": str(go)}]
    reported: list[str] = []
    run = threading.Thread(
        target=lambda: agentmap.batch(flow, rows, output=out, concurrency=3, on_result=lambda r: reported.append(r.id))
    )
    run.start()
    try:  # a and b finish at once; no later row comes to write b's block while the slow row waits
        lines = until(lambda: _lines(partial_path(out)) >= 3 and _lines(partial_path(out)), 10, "b was never written")
        assert lines == 3 and run.is_alive()  # the header, a and b: written by time alone
    finally:
        go.touch()
        run.join(timeout=scaled(60))
    assert len(reported) == 3 and [r["said"] for r in _read_csv(out)] == ["a", "b", "slow"]


def _lines(path: Path) -> int:
    """The whole lines of a file (0 if it does not exist yet)."""
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_input_mistakes_name_file_and_row(tmp_path: Path) -> None:
    flow = shout_flow(tmp_path)
    with pytest.raises(ConfigError, match=r"row 2: id 'x' in column 'id' is already the id of row 1"):
        agentmap.batch(flow, [{"id": "x", "word": "a"}, {"id": "x", "word": "b"}], id_column="id")
    with pytest.raises(ConfigError, match="'success'"):
        agentmap.batch(flow, [{"word": "a", "success": "yes"}])
    with pytest.raises(ConfigError, match=r"row 1, column 'word': the cell is not valid JSON"):
        agentmap.batch(flow, [{"word": "{oops"}], json_cells=True)
    with pytest.raises(ConfigError, match="unknown executor"):
        agentmap.batch(flow, [], executor="gpu")  # type: ignore[arg-type]  # an untyped caller's text
    bad = tmp_path / "bad.csv"
    bad.write_text("GraphName,Node,AgentType\nG,A,nosuchtype\n", encoding="utf-8")
    with pytest.raises(WorkflowValidationError):
        agentmap.batch(bad, [{"x": 1}])


def test_json_cells_and_renames(tmp_path: Path) -> None:
    result = agentmap.batch(
        shout_flow(tmp_path), [{"text": '["a"]', "delay": "0"}], rename={"text": "word"}, json_cells=True
    )
    assert result.rows[0].outputs["loud"] == "['A']"


def test_checkpoint_makes_each_row_a_thread(tmp_path: Path) -> None:
    flow, db = shout_flow(tmp_path), tmp_path / "runs.db"
    rows = [{"id": f"t-{n}", **row} for n, row in enumerate(words("a", "b"), start=1)]
    agentmap.batch(flow, rows, id_column="id", checkpoint=db)
    app = agentmap.compile(flow, checkpointer=str(db))
    state = app.graph.get_state({"configurable": {"thread_id": "t-2"}})
    assert state.values["framed"] == "<B>"


def test_parse_rate() -> None:
    assert parse_rate("5/s") == 5 and parse_rate("300/min") == 5 and parse_rate("7200/h") == 2 and parse_rate(2) == 2
    for bad in ("fast", "0/s", "-1"):
        with pytest.raises(ConfigError):
            parse_rate(bad)


def test_a_table_lacking_an_input_column_is_refused_and_a_row_lacking_a_key_fails(tmp_path: Path) -> None:
    """The runtime's check of the initial state (the one `run` and `serve` make): the table's columns before any
    row runs, and a row of its own (JSON Lines rows need not share their keys) when it runs."""
    flow = shout_flow(tmp_path)
    ran: list[object] = []
    with pytest.raises(ConfigError) as info:
        agentmap.batch(flow, [{"wrod": w, "delay": 0} for w in ("a", "b")], on_result=ran.append)
    assert info.value.code == "missing-state" and ran == []
    assert "the rows: the initial state has no 'word', read by node 'Loud'" in info.value.message
    assert "did you mean 'word'?" in info.value.message
    rows = [{"word": "a", "delay": 0}, {"delay": 0}]
    result = agentmap.batch(flow, rows)
    assert result.successes == 1 and result.failures == 1
    failed = next(r for r in result.rows if not r.success)
    assert failed.error is not None and "the initial state has no 'word'" in failed.error


def test_a_table_lacking_an_input_column_warns_once_for_the_whole_batch(tmp_path: Path) -> None:
    """With missing_inputs="warn", the check is said once per batch and the rows run."""
    flow = shout_flow(tmp_path)
    told: list[str] = []
    rows = [{"wrod": w} for w in ("a", "b", "c")]
    result = agentmap.batch(flow, rows, on_warning=told.append, missing_inputs="warn")
    assert result.successes == 3
    assert len(told) == 1, told
    assert (
        "the initial state has no 'word', read by node 'Loud' (the state has 'wrod': did you mean 'word'?)" in (told[0])
    )
    assert "no 'delay'" in told[0] and "fix: pass 'word', 'delay' in a column of the input" in told[0]
    told.clear()
    agentmap.batch(flow, words("a", "b"), on_warning=told.append, missing_inputs="warn")
    assert told == []


@pytest.mark.parametrize("keyword", ["interupt_before", "state_keys", "checkpointer"])
def test_a_compile_keyword_batch_does_not_take_is_refused_by_name(tmp_path: Path, keyword: str) -> None:
    with pytest.raises(TypeError, match=rf"^batch\(\) got an unexpected keyword argument '{keyword}'$"):
        options: dict[str, Any] = {keyword: ["Loud"]}
        agentmap.batch(shout_flow(tmp_path), words("x"), **options)


def test_compile_keywords_reach_every_row_typed(tmp_path: Path) -> None:
    result = agentmap.batch(shout_flow(tmp_path), words("x", "y"), interrupt_before=["Frame"], fuse=False)
    assert result.success and [r.outputs.get("framed") for r in result.rows] == [None, None]  # paused before Frame


def test_a_row_whose_router_raised_names_the_node_in_failed_nodes(tmp_path: Path) -> None:
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "pick.py").write_text(
        "def pick(state, success, failure):\n    return {'boom': 1}[state['word']]\n", encoding="utf-8"
    )
    flow = tmp_path / "route.csv"
    flow.write_text(
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\n"
        "R,Check,echo,word,checked,func:pick\n"
        "R,Done,echo,checked,done,\n",
        encoding="utf-8",
    )
    result = agentmap.batch(flow, [{"word": "boom"}, {"word": "calm"}], output=tmp_path / "out.csv")
    failed = next(r for r in result.rows if r.row == 2)
    assert failed.error is not None and "router func:pick of node 'Check' raised KeyError" in failed.error
    assert failed.failed_nodes == ("Check",)  # before: empty
    with (tmp_path / "out.csv").open(encoding="utf-8") as table:
        rows = list(csv.DictReader(table))
    assert rows[1]["failed_nodes"] == "Check"
