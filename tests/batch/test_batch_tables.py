"""Every input and output format of a batch: CSV, JSON Lines, Parquet, Excel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batch_helpers import shout_flow

import agentmap
from agentmap.batch.tables import read_rows
from agentmap.errors import ConfigError, WorkflowFileError

ROWS = [{"word": "a", "n": 1}, {"word": "b", "n": 2}, {"word": "boom", "n": 3}]


def _write(path: Path, rows: list[dict[str, Any]], sheet: str = "Sheet") -> Path:
    kind = path.suffix
    if kind == ".csv":
        lines = ["word,n", *(f"{r['word']},{r['n']}" for r in rows)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif kind == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif kind == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        import openpyxl

        book = openpyxl.Workbook()
        book.active.title = "Other"
        book.active.append(["ignored"])
        data = book.create_sheet(sheet)
        data.append(["word", "n"])
        for r in rows:
            data.append([r["word"], r["n"]])
        book.save(path)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet", ".xlsx"])
def test_every_format_in_and_out(tmp_path: Path, suffix: str) -> None:
    pytest.importorskip({".parquet": "pyarrow", ".xlsx": "openpyxl"}.get(suffix, "json"))
    source = _write(tmp_path / f"rows{suffix}", ROWS)
    out = tmp_path / f"out{suffix}"
    result = agentmap.batch(shout_flow(tmp_path), source, output=out, sheet="Sheet" if suffix == ".xlsx" else None)
    assert (result.successes, result.failures) == (2, 1)
    table = list(read_rows(out))
    assert [r["framed"] for r in table] == ["<A>", "<B>", "<None>"]  # Frame runs after the failed Loud too
    assert [str(r["n"]) for r in table] == ["1", "2", "3"]
    assert [str(r["success"]).lower() for r in table] == ["true", "true", "false"]
    assert "boom" in table[2]["error"] and table[2]["failed_nodes"] == "Loud"
    assert list(table[0])[-5:] == ["success", "error", "failed_nodes", "duration_s", "row_id"]
    again = agentmap.batch(shout_flow(tmp_path), source, output=out, sheet="Sheet" if suffix == ".xlsx" else None)
    assert again.skipped == 3  # a finished output of any format is read back to resume


def test_mistakes_in_tables(tmp_path: Path) -> None:
    flow = shout_flow(tmp_path)
    with pytest.raises(WorkflowFileError, match="does not exist"):
        agentmap.batch(flow, tmp_path / "missing.csv")
    with pytest.raises(ConfigError, match="unsupported extension"):
        agentmap.batch(flow, _write(tmp_path / "rows.csv", ROWS), output=tmp_path / "out.txt")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"word": "a"}\n{"word": \n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.jsonl:2: not valid JSON"):
        agentmap.batch(flow, bad)
    with pytest.raises(ConfigError, match="has no sheet 'Nope'"):
        agentmap.batch(flow, _write(tmp_path / "rows.xlsx", ROWS), sheet="Nope")


def test_an_output_that_is_not_a_batch_output_is_never_overwritten(tmp_path: Path) -> None:
    mine = tmp_path / "mine.csv"
    mine.write_text("name\nsomething precious\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not the output of a batch"):
        agentmap.batch(shout_flow(tmp_path), [{"word": "a"}], output=mine)
    assert mine.read_text(encoding="utf-8") == "name\nsomething precious\n"


def test_lists_and_dicts_are_json_in_csv_cells(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    agentmap.batch(shout_flow(tmp_path), [{"word": "a", "tags": ["x", "y"], "seen": True}], output=out)
    (row,) = read_rows(out)
    assert row["seen"] == "true"
    assert row["tags"] == '["x", "y"]' and row["loud"] == "A"
