"""The studio on small files that would exhaust the machine (csv_specs/security.md): it answers, within the same
bounds as `agentmap validate` (before: a 500 after minutes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from studio_helpers import studio_client
from workbooks import far_cell_workbook, hand_workbook, text_cell

from agentmap.spec import readers
from agentmap.studio import StudioConfig

MB = 1_000_000


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    pytest.importorskip("openpyxl")
    far_cell_workbook(tmp_path / "emptied.xlsx", '<c r="XFD1048576"/>')
    far_cell_workbook(tmp_path / "value.xlsx", text_cell("XFD1048576", "x"))
    hand_workbook(tmp_path / "zip.xlsx", "A1:A1", f'<row r="1">{text_cell("A1", "Node")}</row>', shared="x" * 50 * MB)
    with studio_client(StudioConfig(target=tmp_path)) as test_client:
        yield test_client


def test_a_sheet_with_a_cell_emptied_far_away_opens_as_its_rows_and_checks(client: TestClient) -> None:
    opened = client.get("/studio/api/open", params={"file": "emptied.xlsx[Flow]"})
    assert opened.status_code == 200, opened.text  # before: a grid of 17 billion cells, never answered
    rows = [r["cells"] for r in opened.json()["rows"]]
    assert rows == [["GraphName", "Node", "AgentType"], ["G", "A", "echo"]]
    checked = client.post("/studio/api/check", json={"file": "emptied.xlsx[Flow]", "rows": opened.json()["rows"]})
    assert checked.status_code == 200 and checked.json()["valid"] is True


def test_a_sheet_with_a_value_far_away_is_refused_in_a_moment(client: TestClient) -> None:
    opened = client.get("/studio/api/open", params={"file": "value.xlsx[Flow]"})
    assert opened.status_code == 422, opened.text
    assert (
        opened.json()["code"] == "file-too-big"
        and "[Flow]!XFD1048576: the sheet is refused" in opened.json()["message"]
    )


def test_a_workbook_that_unpacks_to_gigabytes_is_refused_not_listed_and_not_read(client: TestClient) -> None:
    assert "zip.xlsx[Sheet]" not in client.get("/studio/api/files").json()["files"]
    opened = client.get("/studio/api/open", params={"file": "zip.xlsx[Flow]"})
    assert opened.status_code == 422 and opened.json()["code"] == "file-too-big"


def test_checking_a_chain_of_graphs_reads_the_sheet_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = ["GraphName,Node,AgentType,Context"]
    rows += [f'G{i},call,graph,"{{""workflow"": ""::G{i + 1}""}}"' for i in range(59)] + ["G59,leaf,echo,"]
    (tmp_path / "chain.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    reads: list[Path] = []
    real = readers.read_tables

    def counted(file: Path) -> Any:
        reads.append(file)
        return real(file)

    monkeypatch.setattr("agentmap.spec.loader.read_tables", counted)  # every read of a workflow file
    with studio_client(StudioConfig(target=tmp_path)) as client:
        opened = client.get("/studio/api/open", params={"file": "chain.csv"}).json()
        reads.clear()
        checked = client.post("/studio/api/check", json={"file": "chain.csv", "rows": opened["rows"]})
    assert checked.status_code == 200 and checked.json()["valid"] is True
    assert len(reads) <= 2  # the sheet on screen, and once for the graphs its graph nodes call (before: 1,771)
