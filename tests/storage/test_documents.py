"""`json_reader` and `json_writer` (agentmap/storage/documents.py)."""

from __future__ import annotations

import json
from pathlib import Path

from storage_helpers import run

from agentmap.storage import JSONReaderAgent, JSONWriterAgent


def _doc(tmp_path: Path, name: str = "doc.json") -> object:
    return json.loads((tmp_path / "data" / name).read_text(encoding="utf-8"))


def test_append_builds_a_list_and_merges_objects(tmp_path: Path) -> None:
    first = run(JSONWriterAgent, tmp_path, "doc", {"event": {"n": 1}})["output"]
    assert first["created_new"] is True and first["mode"] == "append"
    run(JSONWriterAgent, tmp_path, "doc", {"event": {"n": 2}})
    run(JSONWriterAgent, tmp_path, "doc", {"data": [{"n": 3}, {"n": 4}]})
    assert _doc(tmp_path) == [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]
    run(JSONWriterAgent, tmp_path, "cfg", {"data": {"a": 1}}, mode="write")
    run(JSONWriterAgent, tmp_path, "cfg", {"data": {"b": 2}})
    assert _doc(tmp_path, "cfg.json") == {"a": 1, "b": 2}
    refused = run(JSONWriterAgent, tmp_path, "cfg", {"data": "text"})
    assert "cannot append a str to a JSON dict" in refused["errors"][0]


def test_documents_by_id_write_update_and_read(tmp_path: Path) -> None:
    users = [{"user_id": "u1", "name": "Ada"}, {"user_id": "u2", "name": "Bo"}]
    run(JSONWriterAgent, tmp_path, "users", {"data": users}, mode="write")
    run(
        JSONWriterAgent,
        tmp_path,
        "users",
        {"data": {"city": "Oslo"}, "document_id": "u2"},
        mode="update",
        id_field="user_id",
    )
    run(
        JSONWriterAgent,
        tmp_path,
        "users",
        {"data": {"name": "Cy"}, "document_id": "u3"},
        mode="write",
        id_field="user_id",
    )
    assert _doc(tmp_path, "users.json") == [
        {"user_id": "u1", "name": "Ada"},
        {"user_id": "u2", "name": "Bo", "city": "Oslo"},
        {"name": "Cy", "user_id": "u3"},
    ]
    read = run(JSONReaderAgent, tmp_path, "users", {"document_id": "u2"}, id_field="user_id")["output"]
    assert read == {"user_id": "u2", "name": "Bo", "city": "Oslo"}
    keyed = run(JSONReaderAgent, tmp_path, "users", {}, format="dict", id_field="user_id")["output"]
    assert list(keyed) == ["u1", "u2", "u3"]
    missing = run(JSONWriterAgent, tmp_path, "users", {"data": {}, "document_id": "u9"}, mode="update")
    assert "no document with id='u9' to update" in missing["errors"][0]


def test_reader_path_records_and_bad_json(tmp_path: Path) -> None:
    run(JSONWriterAgent, tmp_path, "cfg", {"data": {"a": {"b": [10, 20]}, "c": 3}}, mode="write")
    assert run(JSONReaderAgent, tmp_path, "cfg", {}, path="a.b.1")["output"] == 20
    assert run(JSONReaderAgent, tmp_path, "cfg", {"path": "c"})["output"] == 3
    assert run(JSONReaderAgent, tmp_path, "cfg", {}, format="records")["output"] == [{"b": [10, 20]}, 3]
    (tmp_path / "data" / "broken.json").write_text('{"a": ', encoding="utf-8")
    failed = run(JSONReaderAgent, tmp_path, "broken", {})
    assert "is not valid JSON" in failed["errors"][0] and "line 1" in failed["errors"][0]


def test_update_needs_an_existing_file_and_unserialisable_data_is_refused(tmp_path: Path) -> None:
    assert "needs an existing file" in run(JSONWriterAgent, tmp_path, "new", {"data": {}}, mode="update")["errors"][0]
    refused = run(JSONWriterAgent, tmp_path, "new", {"data": {"when": object()}})
    assert "cannot be written as JSON" in refused["errors"][0]
    assert not (tmp_path / "data" / "new.json").exists()
