"""The run viewer in a real headless chromium (Debian's package, driven by Playwright): draw, run, answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_helpers import GRAPHS, make_project, serving
from timing import scaled

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _open(browser: Any, url: str, graph: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    outside: list[str] = []
    page.on("request", lambda r: None if r.url.startswith((url, "data:")) else outside.append(r.url))
    page.goto(f"{url}/?graph={graph}")
    page.wait_for_selector("#diagram svg g.node")
    return page, outside


def test_viewer_runs_parallel_and_lights_every_node(tmp_path: Path, browser: Any) -> None:
    with serving(GRAPHS / "parallel.csv", checkpoint="memory") as url:
        page, outside = _open(browser, url, "Briefing")
        page.fill("#fields input[name=city]", "Lisbon")
        page.click("#run-button")
        page.wait_for_function("document.body.dataset.runStatus === 'succeeded'", timeout=scaled(20_000))
        rows = page.eval_on_selector_all(
            "#summary tbody tr", "rows => rows.map(r => [r.cells[0].textContent, r.dataset.status])"
        )
        assert sorted(rows) == sorted([[n, "succeeded"] for n in ("Start", "Weather", "News", "Agenda", "Join")])
        lit = page.eval_on_selector_all("#diagram g.node.am-succeeded", "gs => gs.length")
        assert lit == 5
        fill = page.eval_on_selector("#diagram g.node.am-succeeded > rect", "r => getComputedStyle(r).fill")
        assert fill == "rgb(200, 240, 201)"  # drawn green, not just classed
        assert "Morning briefing for Lisbon" in page.inner_text("#final")
        page.screenshot(path=str(tmp_path / "viewer.png"), full_page=True)
        assert (tmp_path / "viewer.png").stat().st_size > 10_000
        assert outside == []  # Mermaid comes from the package: nothing is fetched from the network
        page.close()


def test_viewer_shows_a_failed_node_in_red(tmp_path: Path, browser: Any) -> None:
    flow = tmp_path / "fail.csv"
    flow.write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        "Fails,Start,template,go {x},x,y,Boom\n"
        "Fails,Boom,failure,the disk is full,y,z,\n",
        encoding="utf-8",
    )
    with serving(flow, checkpoint="memory") as url:
        page, _ = _open(browser, url, "Fails")
        page.fill("#fields input[name=x]", "1")
        page.click("#run-button")
        page.wait_for_function("document.body.dataset.runStatus === 'failed'", timeout=scaled(20_000))
        failed = page.eval_on_selector("#summary tbody tr[data-status=failed]", "r => r.innerText")
        assert "Boom" in failed and "the disk is full" in failed
        fill = page.eval_on_selector("#diagram g.node.am-failed > rect", "r => getComputedStyle(r).fill")
        assert fill == "rgb(249, 201, 197)"
        page.close()


def _paused_as(browser: Any, url: str, field: str, credential: str, refused: str) -> Any:
    """A viewer page of `url`, refused (its status naming `refused`) until `field` holds `credential`, then run on
    `review.csv` (topic owls) until it pauses."""
    page = browser.new_page()
    page.goto(url + "/")
    page.wait_for_function("document.body.dataset.runStatus === 'error'")  # the list needs the credential
    assert refused in page.inner_text("#status")
    page.fill(field, credential)
    page.dispatch_event(field, "change")
    page.wait_for_selector("#diagram svg g.node")
    page.fill("#fields input[name=topic]", "owls")
    page.click("#run-button")
    page.wait_for_function("document.body.dataset.runStatus === 'paused'", timeout=scaled(20_000))
    return page


def _answer(page: Any, answer: str, status: str) -> None:
    """Send `answer` to the paused run and wait until the page's run status is `status`."""
    page.fill("#answer", answer)
    page.click("#answer-button")
    page.wait_for_function(f"document.body.dataset.runStatus === '{status}'", timeout=scaled(20_000))


def test_viewer_answers_a_paused_node(tmp_path: Path, browser: Any) -> None:
    folder = make_project(tmp_path / "p")
    database = str(tmp_path / "runs.db")
    with serving(folder / "review.csv", checkpoint=database, api_key="k") as url:
        page = _paused_as(browser, url, "#api-key", "k", refused="API key")
        page.screenshot(path=str(tmp_path / "paused.png"), full_page=True)
        assert page.inner_text("#question-text") == "Publish this draft?"
        assert "Draft about owls" in page.inner_text("#final")
        assert page.eval_on_selector_all("#diagram g.node.am-paused", "gs => gs.length") == 1
        _answer(page, "maybe", "error")
        assert "approval" in page.inner_text("#status")  # the refused answer says what fits
        _answer(page, "approve", "succeeded")
        assert '"approved": true' in page.inner_text("#final")
        page.close()


def test_viewer_runs_as_the_user_its_authorization_field_names(tmp_path: Path, browser: Any) -> None:
    pytest.importorskip("langgraph_sdk")
    import httpx
    from auth_helpers import token_users

    folder = make_project(tmp_path / "p")
    tokens = {"ada-token": "ada", "bo-token": "bo"}
    (folder / "auth.py").write_text(token_users(tokens, refusal="unknown token", graphs_open=True), encoding="utf-8")
    with serving(folder / "review.csv", checkpoint=str(tmp_path / "runs.db"), auth=f"{folder}/auth.py:auth") as url:
        page = _paused_as(browser, url, "#authorization", "Bearer ada-token", refused="unknown token")
        _answer(page, "approve", "succeeded")
        page.close()

        def threads(token: str) -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = httpx.post(
                f"{url}/threads/search", json={}, headers={"Authorization": f"Bearer {token}"}
            ).json()
            return found

        assert [t["metadata"]["owner"] for t in threads("ada-token")] == ["ada"]  # the viewer's run was ada's
        assert threads("bo-token") == []
