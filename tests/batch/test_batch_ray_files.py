"""The files a Ray batch ships to its workers: the workflow and what its rows name, on every sheet of a workbook."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmap.batch._ray import _workflow_files


def test_every_sheet_of_a_workbook_is_searched_for_the_files_its_rows_name(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.title = "First"
    book.active.append(["Node", "AgentType", "Prompt"])
    book.active.append(["A", "template", "hi"])
    second = book.create_sheet("Second")
    second.append(["Node", "AgentType", "Prompt"])
    second.append(["B", "template", "file:prompts/b.md"])
    book.save(tmp_path / "flows.xlsx")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "b.md").write_text("Hello {name}", encoding="utf-8")
    files: dict[str, bytes] = {}
    _workflow_files(files, tmp_path, tmp_path / "flows.xlsx", set())
    assert sorted(files) == ["flows.xlsx", "prompts/b.md"]
