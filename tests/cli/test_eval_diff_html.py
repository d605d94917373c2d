"""`agentmap eval diff --html`: both runs side by side, opened in a real headless chromium (a screenshot kept)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import GRAPHS, agentmap, write
from components import find_executable, require

WORKFLOW = str(GRAPHS / "llm_offline.csv")
HEADER = "scenario,user_message,must_include,expected_trajectory,trajectory_match\n"
ROWS = 'rev,please reverse the text hello world,{},"reverse_text(text=""hello world"")",superset\n'
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def _folder(tmp_path: Path, name: str, expected: str) -> Path:
    scenarios = write(tmp_path / f"{name}.csv", HEADER + ROWS.format(expected))
    ran = agentmap("eval", "run", scenarios, "--workflow", WORKFLOW, "--out", tmp_path / name, "--k", "2")
    assert ran.code == 0, ran.text
    return tmp_path / name


def _diff(tmp_path: Path) -> tuple[Path, str]:
    base = _folder(tmp_path, "base", "dlrow olleh")
    new = _folder(tmp_path, "new", "something else")
    page = tmp_path / "out" / "diff.html"
    result = agentmap("eval", "diff", base, new, "--html", page, "--json")
    assert result.code == 1, result.text  # NEW fails every trial: a regression
    assert json.loads(result.out)["html"] == str(page)
    return page, page.read_text(encoding="utf-8")


def test_the_html_diff_shows_both_runs_with_conversations_trajectories_and_checks(tmp_path: Path) -> None:
    _, text = _diff(tmp_path)
    assert "Regression in rev, all." in text
    assert text.count('class="trial"') == 4  # 2 trials of BASE, 2 of NEW
    assert "please reverse the text hello world" in text  # the conversation
    assert "reverse_text(text=&#x27;hello world&#x27;)" in text  # the trajectory
    assert "expectation: reply lacks &#x27;something else&#x27;" in text  # NEW's failed check
    assert "<script" not in text


def test_identical_folders_diff_to_no_regression_in_html(tmp_path: Path) -> None:
    base = _folder(tmp_path, "base", "dlrow olleh")
    result = agentmap("eval", "diff", base, base, "--html", tmp_path / "same.html")
    assert result.code == 0, result.text
    assert "No regression." in (tmp_path / "same.html").read_text(encoding="utf-8")


@pytest.mark.browser
@pytest.mark.slow
def test_the_html_diff_in_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = find_executable("chromium") or find_executable("chromium-browser")
    require(chromium is not None, "no chromium found: apt-get install chromium")
    page_file, _ = _diff(tmp_path)
    artefacts = Path(os.environ.get("AGENTMAP_TEST_ARTIFACTS") or tmp_path)
    artefacts.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(page_file.as_uri())
            page.get_by_role("heading", name="rev").wait_for()
            sides = page.locator(".pair .side")
            assert sides.count() == 2
            base_box, new_box = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
            assert base_box is not None and new_box is not None
            assert new_box["x"] >= base_box["x"] + base_box["width"]  # side by side, BASE on the left
            assert sides.nth(1).locator(".checks").first.is_visible()
            shot = artefacts / "eval_diff.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
