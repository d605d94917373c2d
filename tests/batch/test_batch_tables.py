"""Every input and output format of a batch: CSV, JSON Lines, Parquet, Excel."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from batch_helpers import shout_flow

import agentmap
from agentmap.batch.tables import read_rows
from agentmap.errors import ConfigError, WorkflowFileError

# The tables carry no `delay` column (the flow's Loud reads it, as None here): run with missing_inputs="warn", the
# batch says so once, which these tests of table formats do not look at.
pytestmark = pytest.mark.filterwarnings("ignore:.*the initial state has no 'delay':UserWarning")


def batch(*args: Any, **kwargs: Any) -> agentmap.BatchResult:
    return agentmap.batch(*args, missing_inputs="warn", **kwargs)


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
    result = batch(shout_flow(tmp_path), source, output=out, sheet="Sheet" if suffix == ".xlsx" else None)
    assert (result.successes, result.failures) == (2, 1)
    table = list(read_rows(out))
    assert [r["framed"] for r in table] == ["<A>", "<B>", "<None>"]  # Frame runs after the failed Loud too
    assert [str(r["n"]) for r in table] == ["1", "2", "3"]
    assert [str(r["success"]).lower() for r in table] == ["true", "true", "false"]
    assert "boom" in table[2]["error"] and table[2]["failed_nodes"] == "Loud"
    assert list(table[0])[-9:] == [
        *("success", "error", "failed_nodes", "duration_s"),
        *("tokens_in", "tokens_out", "tokens_cached", "cost", "row_id"),
    ]
    again = batch(shout_flow(tmp_path), source, output=out, sheet="Sheet" if suffix == ".xlsx" else None)
    assert again.skipped == 3  # a finished output of any format is read back to resume


def test_mistakes_in_tables(tmp_path: Path) -> None:
    flow = shout_flow(tmp_path)
    with pytest.raises(WorkflowFileError, match="does not exist"):
        batch(flow, tmp_path / "missing.csv")
    with pytest.raises(ConfigError, match="unsupported extension"):
        batch(flow, _write(tmp_path / "rows.csv", ROWS), output=tmp_path / "out.txt")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"word": "a"}\n{"word": \n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.jsonl:2: not valid JSON"):
        batch(flow, bad)
    with pytest.raises(ConfigError, match="has no sheet 'Nope'"):
        batch(flow, _write(tmp_path / "rows.xlsx", ROWS), sheet="Nope")


# Each table: (its text, where the mistake is reported, what the message says, the rows a lenient read runs)
BAD_CSV = {
    "short": ("word,n\na,1\nb\nc,3\n", "short.csv:3:", "1 cell but the header names 2", ["a", "b", "c"]),
    "long": ("word,n\na,1\nb,2,x\n", "long.csv:3:", "3 cells but the header names 2", ["a", "b"]),
    "open": ('word,n\na,"1\nb,2\nc,3\n', "open.csv:2:", "never closed", None),
    "late": ('word,n\na,"1\nb,2"\nc,3\n', "late.csv:2:", "still open on line 3", ["a", "c"]),
    "after": ('word,n\na,"1"x\nb,2\n', "after.csv:2:", "',' expected after", None),
}


@pytest.mark.parametrize("name", list(BAD_CSV))
def test_a_csv_row_that_does_not_fit_its_header_is_refused_with_its_line(tmp_path: Path, name: str) -> None:
    text, where, words, lenient = BAD_CSV[name]
    source = tmp_path / f"{name}.csv"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(words)) as caught:
        list(read_rows(source))
    assert str(caught.value).startswith(f"{tmp_path / where}") and caught.value.code == "bad-input"
    if lenient is None:  # not readable as rows at all: refused even when lenient
        with pytest.raises(ConfigError, match=re.escape(words)):
            list(read_rows(source, warn=print))
        return
    told: list[str] = []
    rows = list(read_rows(source, warn=told.append))
    assert [r["word"] for r in rows] == lenient and len(told) == 1 and words in told[0]


def test_a_multi_line_cell_is_a_cell(tmp_path: Path) -> None:
    source = tmp_path / "notes.csv"
    source.write_text('word,n\n"two\nlines, and a comma",1\nb,2\n', encoding="utf-8")
    assert [r["word"] for r in read_rows(source)] == ["two\nlines, and a comma", "b"]


def test_lenient_batch_warns_once_per_row_and_runs_it(tmp_path: Path) -> None:
    source = tmp_path / "rows.csv"
    source.write_text("word,n\na,1\nb\n", encoding="utf-8")
    flow = shout_flow(tmp_path)
    with pytest.raises(ConfigError, match=r"rows\.csv:3: the row has 1 cell"):
        batch(flow, source)
    told: list[str] = []
    result = batch(flow, source, output=tmp_path / "out.csv", lenient=True, on_warning=told.append)
    lenient = [m for m in told if "rows.csv:3" in m]  # the other warning: the table has no `delay` column
    assert result.successes == 2 and len(lenient) == 1  # the input is read three times, the warning given once
    assert [r["n"] for r in read_rows(tmp_path / "out.csv")] == ["1", ""]
    with pytest.warns(UserWarning, match="rows.csv:3"):
        batch(flow, source, lenient=True)


def test_an_excel_value_outside_the_header_is_refused(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.append(["word", "n"])
    book.active.append(["a", 1])
    book.active.append(["b", 2, "stray"])
    book.save(tmp_path / "rows.xlsx")
    with pytest.raises(ConfigError, match=r"rows.xlsx, row 3: cell C3 holds a value but column C has no header"):
        list(read_rows(tmp_path / "rows.xlsx"))
    told: list[str] = []
    assert [r["word"] for r in read_rows(tmp_path / "rows.xlsx", warn=told.append)] == ["a", "b"] and len(told) == 1


def test_an_output_that_is_not_a_batch_output_is_never_overwritten(tmp_path: Path) -> None:
    mine = tmp_path / "mine.csv"
    mine.write_text("name\nsomething precious\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not the output of a batch"):
        batch(shout_flow(tmp_path), [{"word": "a"}], output=mine)
    assert mine.read_text(encoding="utf-8") == "name\nsomething precious\n"


def test_lists_and_dicts_are_json_in_csv_cells(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    batch(shout_flow(tmp_path), [{"word": "a", "tags": ["x", "y"], "seen": True}], output=out)
    (row,) = read_rows(out)
    assert row["seen"] == "true"
    assert row["tags"] == '["x", "y"]' and row["loud"] == "A"
