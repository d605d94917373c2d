"""`csv_reader` and `csv_writer` (agentmap/storage/tables.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from storage_helpers import environment, run

from agentmap.storage import CSVReaderAgent, CSVWriterAgent


@pytest.fixture
def people(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "people.csv"
    path.write_text("id,name,city\n1,Ada,London\n2,Bo,Paris\n3,Cy,London\n", encoding="utf-8")
    return path


def test_reader_formats(tmp_path: Path, people: Path) -> None:
    rows = [
        {"id": "1", "name": "Ada", "city": "London"},
        {"id": "2", "name": "Bo", "city": "Paris"},
        {"id": "3", "name": "Cy", "city": "London"},
    ]
    assert run(CSVReaderAgent, tmp_path, "people.csv", {})["output"] == rows
    assert run(CSVReaderAgent, tmp_path, "people", {}, format="list")["output"] == rows
    assert run(CSVReaderAgent, tmp_path, "people", {}, format="dict")["output"] == dict(enumerate(rows))
    keyed = run(CSVReaderAgent, tmp_path, "people", {}, format="dict", id_field="name")["output"]
    assert list(keyed) == ["Ada", "Bo", "Cy"]


def test_reader_query_and_document_id(tmp_path: Path, people: Path) -> None:
    londoners = run(CSVReaderAgent, tmp_path, "people", {"query": {"city": "London"}})["output"]
    assert [r["name"] for r in londoners] == ["Ada", "Cy"]
    assert run(CSVReaderAgent, tmp_path, "people", {"document_id": 2})["output"]["name"] == "Bo"
    missing = run(CSVReaderAgent, tmp_path, "people", {"id": "9"})
    assert missing["last_action_success"] is False and "no row with id='9'" in missing["errors"][0]


def test_reader_of_a_missing_file_fails_unless_a_default_is_set(tmp_path: Path) -> None:
    failed = run(CSVReaderAgent, tmp_path, "nothing.csv", {})
    assert failed["last_action_success"] is False
    assert "'nothing.csv' does not exist" in failed["errors"][0] and "default" in failed["errors"][0]
    assert run(CSVReaderAgent, tmp_path, "nothing.csv", {}, default=[])["output"] == []


def test_an_input_named_collection_picks_the_file(tmp_path: Path, people: Path) -> None:
    assert len(run(CSVReaderAgent, tmp_path, "", {"collection": "people"})["output"]) == 3
    escaped = run(CSVReaderAgent, tmp_path, "", {"collection": "../people.csv"})
    assert escaped["last_action_success"] is False and "outside the allowed folders" in escaped["errors"][0]


def test_writer_appends_rows_and_keeps_every_earlier_row(tmp_path: Path, people: Path) -> None:
    done = run(CSVWriterAgent, tmp_path, "people", {"id": "4", "name": "Di", "email": "di@x"})["output"]
    assert done == {
        "success": True,
        "mode": "append",
        "collection": "people",
        "file_path": str(people),
        "rows_written": 1,
        "created_new": False,
    }
    text = people.read_text(encoding="utf-8")
    assert text == "id,name,city,email\n1,Ada,London,\n2,Bo,Paris,\n3,Cy,London,\n4,Di,,di@x\n"
    assert not list(people.parent.glob("*.tmp"))


def test_writer_write_mode_replaces_and_update_mode_merges_by_id(tmp_path: Path, people: Path) -> None:
    rows = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]
    run(CSVWriterAgent, tmp_path, "stock.csv", {"data": rows}, mode="write")
    stock = tmp_path / "data" / "stock.csv"
    assert stock.read_text(encoding="utf-8") == "sku,qty\nA,1\nB,2\n"
    update = {"data": [{"sku": "B", "qty": 5}, {"sku": "C", "qty": 7}]}
    done = run(CSVWriterAgent, tmp_path, "stock.csv", update, mode="update", id_field="sku")["output"]
    assert (done["rows_updated"], done["rows_added"]) == (1, 1)
    assert stock.read_text(encoding="utf-8") == "sku,qty\nA,1\nB,5\nC,7\n"
    bad = run(CSVWriterAgent, tmp_path, "stock.csv", {"data": [{"qty": 1}]}, mode="update", id_field="sku")
    assert "needs the id column 'sku'" in bad["errors"][0]
    assert stock.read_text(encoding="utf-8") == "sku,qty\nA,1\nB,5\nC,7\n"  # a failed write changes nothing


def test_writer_takes_the_dict_format_of_the_reader_and_refuses_text(tmp_path: Path, people: Path) -> None:
    rows = run(CSVReaderAgent, tmp_path, "people", {}, format="dict")["output"]
    run(CSVWriterAgent, tmp_path, "copy", {"data": rows}, mode="write")
    assert (tmp_path / "data" / "copy.csv").read_text(encoding="utf-8") == people.read_text(encoding="utf-8")
    refused = run(CSVWriterAgent, tmp_path, "copy", {"data": "just text"})
    assert refused["last_action_success"] is False and "csv_writer writes rows" in refused["errors"][0]
    empty = run(CSVWriterAgent, tmp_path, "copy", {})
    assert "no data to write" in empty["errors"][0]


def test_a_bad_mode_input_fails_the_node(tmp_path: Path) -> None:
    failed = run(CSVWriterAgent, tmp_path, "x", {"a": 1, "mode": "overwrite"})
    assert "unknown mode 'overwrite'" in failed["errors"][0]


def test_validation_checks_the_file_and_the_keys(tmp_path: Path) -> None:
    env = environment(tmp_path)
    assert CSVReaderAgent.validate_config("people.csv", {"format": "records"}, env) == []
    problems = CSVWriterAgent.validate_config("../x.csv", {"mode": "upsert", "encoding": "klingon"}, env)
    assert problems[0] == "Context mode 'upsert' is not one of append, write, update"
    assert "'klingon' is not a known text encoding" in problems[1]
    assert isinstance(problems[2], tuple)
    column, message = problems[2]
    assert column == "Prompt" and "outside the storage folders" in message and "default_directory" in message
    problem = CSVReaderAgent.validate_config("", {"collection": "/tmp/x.csv"}, env)[0]
    assert isinstance(problem, tuple)
    column, message = problem
    assert column == "Context"
    assert CSVReaderAgent.validate_config("", {}, env)[0][0] == "Prompt"
    assert CSVReaderAgent.validate_config("", {"input_fields": ["collection"]}, env) == []


def test_the_dataframe_format_needs_pandas_only_when_asked(tmp_path: Path, people: Path) -> None:
    try:
        import pandas
    except ImportError:
        (problem,) = CSVReaderAgent.validate_config("people", {"format": "dataframe"}, environment(tmp_path))
        assert "needs pandas" in problem
    else:
        frame = run(CSVReaderAgent, tmp_path, "people", {}, format="dataframe")["output"]
        assert isinstance(frame, pandas.DataFrame) and list(frame["name"]) == ["Ada", "Bo", "Cy"]


def test_an_append_keeps_earlier_text_as_it_was_or_rewrites_when_it_must(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    log = tmp_path / "data" / "log.csv"
    log.write_text('a,b\r\n"x, y",2\r\n', encoding="utf-8", newline="")
    run(CSVWriterAgent, tmp_path, "log", {"a": "3", "b": None})
    assert log.read_bytes() == b'a,b\r\n"x, y",2\r\n3,\n'  # earlier lines untouched, not re-parsed
    log.write_text("a,b\n1,2", encoding="utf-8")  # no final newline: parsed and rewritten
    run(CSVWriterAgent, tmp_path, "log", {"a": "3", "c": "new"})
    assert log.read_text(encoding="utf-8") == "a,b,c\n1,2,\n3,,new\n"


def test_a_row_with_more_cells_than_the_header_fails_instead_of_losing_cells(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    broken = tmp_path / "data" / "broken.csv"
    broken.write_text("a,b\n1,2\n3,4,5\n", encoding="utf-8")
    failed = run(CSVReaderAgent, tmp_path, "broken", {})
    assert "line 3 has more cells than the header (2)" in failed["errors"][0]
    refused = run(CSVWriterAgent, tmp_path, "broken", {"a": "6", "z": "new column"})
    assert refused["last_action_success"] is False
    assert broken.read_text(encoding="utf-8") == "a,b\n1,2\n3,4,5\n"
