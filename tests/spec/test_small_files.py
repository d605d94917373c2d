"""No small file exhausts the machine (csv_specs/security.md): validation walks each subgraph once and grows with
the file, a workbook is read by its cells, not the size it declares, and YAML aliases are bounded.

The checks count the work (how often a file is read), compare the growth of a scaled-down case by a ratio with a
generous margin, or bound the memory a validation allocates (tracemalloc): none needs the machine to be idle.
`bench/small_files.py` measures the same files at 1 MB.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from workbooks import far_cell_workbook, hand_workbook, text_cell

import agentmap
from agentmap.spec import readers
from agentmap.spec.models import NodeSpec

MB = 1_000_000


def _chain(path: Path, graphs: int) -> Path:
    """The issue's file: graph i's one node calls graph i+1 of the same file; the last one echoes."""
    rows = ["GraphName,Node,AgentType,Context"]
    rows += [f'G{i},call,graph,"{{""workflow"": ""::G{i + 1}""}}"' for i in range(graphs - 1)]
    rows.append(f"G{graphs - 1},leaf,echo,")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _peak(run: Callable[[], Any]) -> int:
    """The bytes `run` allocated at its peak (what it keeps and what it drops)."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _fastest(run: Callable[[], Any], times: int = 3) -> float:
    """The least CPU time of `times` runs: the code's own work, not what a busy machine's other processes take."""
    best = float("inf")
    for _ in range(times):
        start = time.thread_time()
        run()
        best = min(best, time.thread_time() - start)
    return best


def test_a_chain_of_graphs_calling_each_other_is_read_once_not_once_per_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _chain(tmp_path / "chain.csv", 60)
    reads: list[Path] = []
    real = readers.read_tables

    def counted(file: Path) -> Any:
        reads.append(file)
        return real(file)

    monkeypatch.setattr("agentmap.spec.loader.read_tables", counted)  # what `read_workflow` reads files with
    assert agentmap.validate(path) == []
    assert len(reads) == 1  # before: 1,771 reads (each graph node walked the rest of the chain, re-reading the file)


def test_a_cycle_through_the_chain_is_still_found_at_each_graph_node_reaching_it(tmp_path: Path) -> None:
    path = _chain(tmp_path / "chain.csv", 30)
    text = path.read_text(encoding="utf-8").replace("G29,leaf,echo,", 'G29,back,graph,"{""workflow"": ""::G10""}"')
    path.write_text(text, encoding="utf-8")
    issues = agentmap.validate(path)
    assert {i.code for i in issues} == {"bad-config"}
    assert all("contains itself through graph nodes (a cycle)" in i.message for i in issues)
    assert len(issues) == 30  # every graph node reaches the loop G10 -> ... -> G29 -> G10


def _reversed_chain(path: Path, nodes: int) -> Path:
    """One graph: an entry row, then a chain written last to first, each node reading what the one before writes."""
    rows = ["GraphName,Node,AgentType,Input_Fields,Output_Field,Edge", "G,entry,echo,x,k0,n0"]
    rows += [f"G,n{i},echo,k{i},k{i + 1},{f'n{i + 1}' if i + 1 < nodes else ''}" for i in range(nodes - 1, -1, -1)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_what_each_node_may_read_is_found_in_time_that_grows_with_the_file(tmp_path: Path) -> None:
    small, large = _reversed_chain(tmp_path / "small.csv", 400), _reversed_chain(tmp_path / "large.csv", 1600)
    assert agentmap.validate(small) == [] and agentmap.validate(large) == []
    ratio = _fastest(lambda: agentmap.validate(large)) / _fastest(lambda: agentmap.validate(small))
    assert ratio < 12  # 4 times the rows: about 4 times the time (before: a pass over the graph per node, ~64 times)


def test_what_a_validation_read_is_freed_when_it_returns_not_at_a_later_garbage_collection(tmp_path: Path) -> None:
    rows = ["GraphName,Node,AgentType,Context"] + [f"G{i},FreedOnReturn,echo," for i in range(300)]
    path = tmp_path / "graphs.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    gc.collect()
    was = gc.isenabled()
    gc.disable()  # only what nothing refers to any more is freed
    try:
        assert agentmap.validate(path) == []
        # this file's nodes (other tests of the process may keep nodes of their own)
        kept = [o for o in gc.get_objects() if isinstance(o, NodeSpec) and o.name == "FreedOnReturn"]
    finally:
        if was:
            gc.enable()
    # before: 300 (the options of the validation and its custom agents overlay referred to each other, and the
    # options held the workflow: every graph of the file stayed until a full collection, which then walked them)
    assert len(kept) == 0


def test_the_collector_is_paused_while_a_file_is_validated_and_left_as_it_was(tmp_path: Path) -> None:
    rows = ["GraphName,Node,AgentType,Context"] + [f"G{i},n,echo," for i in range(50)]
    path = tmp_path / "graphs.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    seen: list[int] = []

    def collected(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    assert agentmap.validate(path) == []  # what validating imports is imported
    was, thresholds = gc.isenabled(), gc.get_threshold()
    gc.callbacks.append(collected)
    try:
        gc.enable()
        gc.collect()
        seen.clear()
        gc.set_threshold(1)  # on, the collector would run at each object made
        assert agentmap.validate(path) == []
        assert len(seen) < 10 and gc.isenabled()  # a few on the way in and out; before: thousands
        gc.disable()
        assert agentmap.validate(path) == [] and not gc.isenabled()  # left off when it was off
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(collected)
        if was:
            gc.enable()


def test_a_graph_of_many_fan_outs_is_checked_within_a_bound_and_says_so(tmp_path: Path) -> None:
    width = 200
    targets = "|".join(f"b{i}" for i in range(width))
    rows = ["GraphName,Node,AgentType,Output_Field,Edge", f"G,s0,echo,x,{targets}"]
    rows += [f"G,s{i},echo,x,{targets}" for i in range(1, 40)]
    rows += [f"G,b{i},echo,o{i},{f'b{i + 1}' if i + 1 < width else ''}" for i in range(width)]
    path = tmp_path / "fans.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    skipped = [i for i in agentmap.validate(path) if i.code == "check-skipped"]
    assert [(i.severity, i.column) for i in skipped] == [("warning", "Edge")]
    assert "200,000 nodes" in skipped[0].message


def test_a_long_unknown_target_list_names_a_few_nodes_not_every_node(tmp_path: Path) -> None:
    rows = ["GraphName,Node,AgentType,Edge"] + [f"G,n{i},echo,nope{i}" for i in range(3000)]
    path = tmp_path / "many.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    issues = [i for i in agentmap.validate(path) if i.code == "unknown-target"]
    assert len(issues) == 3000
    assert all(len(i.fix) < 300 for i in issues)  # before: each fix listed the 3,000 nodes (the file, 3,000 times)
    assert issues[0].fix.endswith("... and 2,988 more; leave the cell empty to end the graph")


_BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{x}: &{x} [" + ",".join([f"*{chr(ord(x) - 1)}"] * 9) + "]" for x in "bcdefghi"]
)


def test_a_yaml_workflow_of_nested_aliases_is_refused_at_the_alias(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = tmp_path / "bomb.yaml"
    path.write_text(_BOMB + "\ngraphs:\n  G:\n    - {Node: A, AgentType: echo, Prompt: *i}\n", encoding="utf-8")
    found: list[agentmap.Issue] = []
    assert _peak(lambda: found.extend(agentmap.validate(path))) < 20 * MB  # before: MemoryError (error[internal])
    [issue] = found
    assert issue.code == "not-text" and "more than 100,000 values" in issue.message and "line 6" in issue.message


def test_a_yaml_mapping_in_a_context_cell_and_a_config_file_are_bounded_too(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    flow = tmp_path / "flow.csv"
    cell = "{a: &a [x,x,x,x,x,x,x,x,x], " + ", ".join(f"k{i}: [*a,*a,*a,*a,*a,*a,*a,*a,*a]" for i in range(2000)) + "}"
    flow.write_text(f'GraphName,Node,AgentType,Context\nG,A,echo,"{cell}"\n', encoding="utf-8")
    [issue] = agentmap.validate(flow)
    assert (issue.code, issue.column) == ("bad-context", "Context") and "100,000 values" in issue.message
    config = tmp_path / "agentmap.yaml"
    config.write_text(_BOMB + "\n", encoding="utf-8")
    from agentmap.cli import main

    assert main(["validate", str(flow), "--config", str(config)]) == 2  # bad-config, not a MemoryError


def test_deeply_nested_yaml_is_refused_with_its_line(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = tmp_path / "deep.yaml"
    path.write_text("- Node: A\n  GraphName: G\n  Prompt: " + "[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    [issue] = agentmap.validate(path)  # before: RecursionError, a traceback
    assert issue.code == "not-text" and "nest more than 100 deep" in issue.message and "line 3" in issue.message


@pytest.mark.parametrize(
    ("far", "codes"),
    [
        ('<c r="XFD1048576"/>', []),  # a cell emptied far away: the cell stays in the file
        (text_cell("XFD1048576", "x"), ["missing-graph-name"]),  # a value there: a row without a graph
    ],
    ids=["emptied", "value"],
)
def test_a_workbook_is_read_by_its_cells_not_the_size_it_declares(tmp_path: Path, far: str, codes: list[str]) -> None:
    pytest.importorskip("openpyxl")
    path = far_cell_workbook(tmp_path / "far.xlsx", far)
    found: list[agentmap.Issue] = []
    assert _peak(lambda: found.extend(agentmap.validate(path))) < 50 * MB  # before: MemoryError, error[internal]
    assert [i.code for i in found] == codes
    assert [i.cell for i in found] == (["A1048576"] if codes else [])


def test_a_workbook_of_too_many_cells_is_refused_where_reading_stopped(tmp_path: Path) -> None:
    pytest.importorskip("openpyxl")
    rows = "".join(
        f'<row r="{r}">' + "".join(text_cell(f"{c}{r}", "x") for c in "ABCDEFGHIJ") + "</row>" for r in range(1, 10_002)
    )
    path = hand_workbook(tmp_path / "cells.xlsx", "A1:J10001", rows)
    [issue] = agentmap.validate(path)
    assert issue.code == "file-too-big"
    assert issue.message.startswith(f"{path}[Flow]!10001:10001: the workbook is refused here: it holds more than")


def test_a_workbook_that_unpacks_to_gigabytes_is_refused_before_it_is_read(tmp_path: Path) -> None:
    pytest.importorskip("openpyxl")
    path = hand_workbook(
        tmp_path / "zip.xlsx", "A1:A1", f'<row r="1">{text_cell("A1", "Node")}</row>', shared="x" * 50 * MB
    )
    assert path.stat().st_size < MB
    found: list[agentmap.Issue] = []
    assert _peak(lambda: found.extend(agentmap.validate(path))) < 20 * MB
    [issue] = found
    assert issue.code == "file-too-big" and "xl/sharedStrings.xml" in issue.message


def test_a_csv_cell_longer_than_csv_reads_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    path.write_text("GraphName,Node,AgentType,Prompt\nG,A,echo,hi\nG,B,echo," + "x" * 200_000 + "\n", encoding="utf-8")
    [issue] = agentmap.validate(path)
    assert issue.code == "file-too-big" and issue.message.startswith(f"{path}:3: ")
