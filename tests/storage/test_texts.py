"""`file_reader` and `file_writer` (agentmap/storage/texts.py)."""

from __future__ import annotations

from pathlib import Path

from storage_helpers import environment, run

from agentmap.storage import FileReaderAgent, FileWriterAgent
from agentmap.storage.texts import split_text


def test_writer_write_then_append_on_a_new_line(tmp_path: Path) -> None:
    done = run(FileWriterAgent, tmp_path, "reports/out.md", {"text": "# Title"}, mode="write")["output"]
    assert done["characters"] == 7 and done["created_new"] is True
    run(FileWriterAgent, tmp_path, "reports/out.md", {"text": "more"})
    run(FileWriterAgent, tmp_path, "reports/out.md", {"a": 1, "b": [2]})
    text = (tmp_path / "data" / "reports" / "out.md").read_text(encoding="utf-8")
    assert text == '# Title\nmore\n{\n  "a": 1,\n  "b": [\n    2\n  ]\n}'


def test_reader_text_chunks_and_structured(tmp_path: Path) -> None:
    run(FileWriterAgent, tmp_path, "notes.txt", {"data": "alpha beta gamma delta epsilon"}, mode="write")
    assert run(FileReaderAgent, tmp_path, "notes.txt", {})["output"] == "alpha beta gamma delta epsilon"
    chunks = run(FileReaderAgent, tmp_path, "notes.txt", {}, should_split=True, chunk_size=12, chunk_overlap=3)[
        "output"
    ]
    assert chunks == split_text("alpha beta gamma delta epsilon", 12, 3)
    assert all(len(c) <= 12 for c in chunks) and "".join(chunks).count("epsilon") >= 1
    structured = run(FileReaderAgent, tmp_path, "notes.txt", {}, format="structured")["output"]
    assert structured == {
        "content": "alpha beta gamma delta epsilon",
        "metadata": {"source": "notes.txt", "characters": 30},
    }


def test_split_text_keeps_words_whole_and_overlaps() -> None:
    assert split_text("aaaa bbbb cccc dddd", 10, 5) == ["aaaa bbbb ", "bbbb cccc ", "cccc dddd"]
    assert split_text("", 10, 2) == []
    assert split_text("x" * 25, 10, 0) == ["x" * 10, "x" * 10, "x" * 5]


def test_reader_refuses_binary_and_reports_encoding(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    failed = run(FileReaderAgent, tmp_path, "blob.bin", {})
    assert "is not utf-8 text" in failed["errors"][0]
    assert run(FileReaderAgent, tmp_path, "blob.bin", {}, encoding="latin-1")["last_action_success"] is True


def test_chunk_settings_are_checked_at_validation(tmp_path: Path) -> None:
    env = environment(tmp_path)
    assert FileReaderAgent.validate_config("notes.txt", {"chunk_size": 100, "chunk_overlap": 10}, env) == []
    assert FileReaderAgent.validate_config("notes.txt", {"chunk_size": "big"}, env) == [
        "Context chunk_size must be a whole number, not 'big'"
    ]
    (problem,) = FileReaderAgent.validate_config("notes.txt", {"chunk_size": 10, "chunk_overlap": 10}, env)
    assert "must be smaller than chunk_size" in problem
