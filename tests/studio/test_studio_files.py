"""What the studio reads, checks and writes, through its HTTP routes (no browser): files kept as they were written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from studio_helpers import studio_client

import agentmap
from agentmap.studio import StudioConfig

ROOT = Path(__file__).resolve().parents[2]

STYLES = {
    "bom_crlf.csv": "\ufeffGraphName,Node,AgentType,Edge\r\nG,A,echo,B\r\n# a comment, with a comma\r\nG,B,echo,\r\n",
    "no_final_newline.csv": "GraphName,Node,AgentType,Edge\nG,A,echo,B\n\nG,B,echo,",
    "quoted.csv": (
        '"GraphName","Node","AgentType","Prompt","Edge"\n"G","A","echo","two\nlines","B"\n"G","B","echo","",""\n'
    ),
    "semicolons.csv": "GraphName;Node;AgentType;Edge\nG;A;echo;B\nG;B;echo;\n",
}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    for name, text in STYLES.items():
        (tmp_path / name).write_bytes(text.encode("utf-8"))
        (tmp_path / name).chmod(0o644)
    (tmp_path / "cp1252.csv").write_bytes("GraphName,Node,AgentType,Prompt\nG,A,template,Café\n".encode("cp1252"))
    with studio_client(StudioConfig(target=tmp_path)) as test_client:
        yield test_client


def opened(client: TestClient, name: str) -> dict[str, Any]:
    response = client.get("/studio/api/open", params={"file": name})
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def save(client: TestClient, name: str, rows: list[dict[str, Any]], base: str, force: bool = False) -> Any:
    return client.post("/studio/api/save", json={"file": name, "rows": rows, "base": base, "force": force})


def test_a_folder_lists_its_workflow_files(client: TestClient, tmp_path: Path) -> None:
    assert client.get("/studio/api/files").json()["files"] == [
        "bom_crlf.csv",
        "cp1252.csv",
        "no_final_newline.csv",
        "quoted.csv",
        "semicolons.csv",
    ]
    for outside in ("../etc/passwd", "/etc/passwd", "../" + tmp_path.name + "/quoted.csv/..", "missing.csv"):
        refused = client.get("/studio/api/open", params={"file": outside})
        assert refused.status_code == 404 and refused.json()["code"] == "file-not-found", outside


@pytest.mark.parametrize("name", [*STYLES, "cp1252.csv"])
def test_saving_unchanged_rows_writes_the_file_byte_for_byte(client: TestClient, tmp_path: Path, name: str) -> None:
    before = (tmp_path / name).read_bytes()
    data = opened(client, name)
    assert save(client, name, data["rows"], data["version"]).status_code == 200
    assert (tmp_path / name).read_bytes() == before


def test_a_changed_cell_is_written_in_the_style_of_its_file(client: TestClient, tmp_path: Path) -> None:
    data = opened(client, "bom_crlf.csv")
    rows = data["rows"]
    rows[1]["cells"][3] = "C"  # A -> C
    rows.append({"id": None, "cells": ["G", "C", "echo", "B"]})
    assert save(client, "bom_crlf.csv", rows, data["version"]).status_code == 200
    assert (tmp_path / "bom_crlf.csv").read_bytes() == (
        "\ufeffGraphName,Node,AgentType,Edge\r\nG,A,echo,C\r\n# a comment, with a comma\r\nG,B,echo,\r\nG,C,echo,B\r\n"
    ).encode("utf-8")
    data = opened(client, "quoted.csv")
    data["rows"].append({"id": None, "cells": ["G", "C", "echo", 'say "hi"', ""]})
    data["rows"][2]["cells"][4] = "C"
    assert save(client, "quoted.csv", data["rows"], data["version"]).status_code == 200
    assert (
        (tmp_path / "quoted.csv")
        .read_text(encoding="utf-8")
        .endswith('"G","B","echo","","C"\n"G","C","echo","say ""hi""",""\n')
    )
    data = opened(client, "semicolons.csv")
    data["rows"][2]["cells"][2] = "template"
    assert save(client, "semicolons.csv", data["rows"], data["version"]).status_code == 200
    assert (tmp_path / "semicolons.csv").read_text(encoding="utf-8") == (
        "GraphName;Node;AgentType;Edge\nG;A;echo;B\nG;B;template;\n"
    )
    hidden = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert hidden == [".bom_crlf.csv.lock", ".quoted.csv.lock", ".semicolons.csv.lock"]  # no temporary left behind
    assert (tmp_path / "semicolons.csv").stat().st_mode & 0o777 == 0o644  # who may read it is kept


def test_a_file_changed_on_disk_is_not_overwritten_unless_asked(client: TestClient, tmp_path: Path) -> None:
    data = opened(client, "semicolons.csv")
    theirs = "GraphName;Node;AgentType;Edge\nG;A;echo;\n"
    (tmp_path / "semicolons.csv").write_text(theirs, encoding="utf-8")
    assert client.get("/studio/api/version", params={"file": "semicolons.csv"}).json()["version"] != data["version"]
    refused = save(client, "semicolons.csv", data["rows"], data["version"])
    assert refused.status_code == 409 and refused.json()["code"] == "file-changed"
    assert (tmp_path / "semicolons.csv").read_text(encoding="utf-8") == theirs
    assert save(client, "semicolons.csv", data["rows"], data["version"], force=True).status_code == 200
    assert (tmp_path / "semicolons.csv").read_text(encoding="utf-8") == STYLES["semicolons.csv"]


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "graphs").glob("*.csv")))
def test_findings_are_those_of_agentmap_validate(tmp_path: Path, name: str) -> None:
    flow = ROOT / "graphs" / name
    if name == "branching.csv":  # and a broken one
        flow = tmp_path / name
        flow.write_text(
            (ROOT / "graphs" / name).read_text(encoding="utf-8").replace("decision,Report,", "decision,Reportt,")
        )
    expected = [(i.row, i.column, i.code, i.message) for i in agentmap.validate(flow)]
    with studio_client(StudioConfig(target=flow)) as client:
        found = [(f["row"], f["column_name"], f["code"], f["message"]) for f in opened(client, name)["findings"]]
    assert found == expected
    assert name != "branching.csv" or ("unknown-target" in [code for _, _, code, _ in found])


def test_a_sheet_with_an_error_is_not_drawn_and_a_valid_one_is_drawn_as_export_draws_it(tmp_path: Path) -> None:
    from agentmap.observe.draw import draw_graph

    flow = tmp_path / "branching.csv"
    flow.write_bytes((ROOT / "graphs" / "branching.csv").read_bytes())
    with studio_client(StudioConfig(target=flow)) as client:
        rows = opened(client, "branching.csv")["rows"]
        drawn = client.post("/studio/api/draw", json={"file": "branching.csv", "rows": rows, "graph": "Approval"})
        assert drawn.json()["svg"] == draw_graph(agentmap.compile(flow))
        rows[2]["cells"][8] = "Nowhere"
        refused = client.post("/studio/api/draw", json={"file": "branching.csv", "rows": rows, "graph": "Approval"})
        assert refused.status_code == 422 and "Nowhere" in refused.json()["message"]


def test_an_api_key_is_asked_for_every_route_but_the_page(tmp_path: Path) -> None:
    flow = tmp_path / "branching.csv"
    flow.write_bytes((ROOT / "graphs" / "branching.csv").read_bytes())
    with studio_client(StudioConfig(target=flow, api_key="k")) as client:
        assert client.get("/").status_code == 200
        refused = client.get("/studio/api/files")
        assert refused.status_code == 401 and refused.json()["code"] == "api-key-required"
        assert client.get("/studio/api/files", headers={"X-Api-Key": "k"}).json()["files"] == ["branching.csv"]


def test_a_cell_a_spreadsheet_would_run_is_a_warning_on_its_cell_and_saved_as_typed(tmp_path: Path) -> None:
    flow = tmp_path / "flow.csv"
    flow.write_text("GraphName,Node,AgentType,Prompt\nG,A,echo,hello\n", encoding="utf-8")
    with studio_client(StudioConfig(target=flow)) as client:
        data = opened(client, "flow.csv")
        data["rows"][1]["cells"][3] = "=cmd|' /C calc'!A0"
        checked = client.post("/studio/api/check", json={"file": "flow.csv", "rows": data["rows"]}).json()
        found = [(f["code"], f["severity"], f["row"], f["column_name"]) for f in checked["findings"]]
        assert found == [("formula-like-cell", "warning", 2, "Prompt")] and checked["valid"] is True
        assert save(client, "flow.csv", data["rows"], data["version"]).status_code == 200
    assert flow.read_text(encoding="utf-8") == "GraphName,Node,AgentType,Prompt\nG,A,echo,=cmd|' /C calc'!A0\n"
    assert [(i.code, i.row, i.column) for i in agentmap.validate(flow)] == [("formula-like-cell", 2, "Prompt")]
