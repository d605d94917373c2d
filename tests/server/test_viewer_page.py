"""The run viewer's page without scripts (a screenshot, a browser that blocks them): the graphs, the selected one
drawn as SVG and its form's fields are in the HTML the server sends. In process (no socket)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_helpers import GRAPHS

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from agentmap.server import ServeConfig, create_app


@pytest.fixture(scope="module")
def viewer() -> Iterator[TestClient]:
    targets = (str(GRAPHS / "hello_world.csv"), str(GRAPHS / "parallel.csv"))
    with TestClient(create_app(ServeConfig(targets=targets, checkpoint="memory"))) as client:
        yield client


def test_the_page_holds_the_first_graph_drawn_and_its_form(viewer: TestClient) -> None:
    page = viewer.get("/").text
    assert '<h2 id="graph-title">HelloWorld</h2>' in page
    drawing = page.split('<div id="diagram"', 1)[1].split("</div>", 1)[0]
    assert "<svg" in drawing and 'data-node="Greet"' in drawing and 'data-node="Finish"' in drawing
    fields = page.split('<div id="fields">', 1)[1].split("</div>", 1)[0]
    assert '<input name="name">' in fields and "<span>name</span>" in fields
    assert '<a href="/?graph=Briefing"' in page  # the other graph, reachable without scripts
    assert "mermaid" not in page  # nothing left for a script to draw


def test_the_address_names_the_graph_drawn(viewer: TestClient) -> None:
    page = viewer.get("/", params={"graph": "Briefing"}).text
    assert '<h2 id="graph-title">Briefing</h2>' in page
    assert 'data-node="Weather"' in page and '<input name="city">' in page
    assert '<a href="/?graph=Briefing" data-graph="Briefing" aria-current="true">' in page
    assert 'data-node="Weather"' in viewer.get("/assistants/Briefing/svg").text


def test_a_server_with_users_draws_no_workflow_for_anyone(tmp_path: Path) -> None:
    pytest.importorskip("langgraph_sdk")
    (tmp_path / "auth.py").write_text(
        "from langgraph_sdk import Auth\nauth = Auth()\n\n\n@auth.authenticate\nasync def who(authorization):\n"
        "    assert authorization == 'Bearer t0ken'\n    return 'ada'\n",
        encoding="utf-8",
    )
    config = ServeConfig(
        targets=(str(GRAPHS / "hello_world.csv"),), checkpoint="memory", auth=f"{tmp_path}/auth.py:auth"
    )
    with TestClient(create_app(config)) as client:
        page = client.get("/")
        assert page.status_code == 200 and "Choose a workflow" in page.text  # the page is public
        assert "HelloWorld" not in page.text and "<svg" not in page.text  # the workflows are not
        assert client.get("/assistants/HelloWorld/svg").status_code == 401
        drawn = client.get("/assistants/HelloWorld/svg", headers={"Authorization": "Bearer t0ken"})
        assert drawn.status_code == 200 and "<svg" in drawn.text
