"""The studio in a real headless chromium (Debian's package, driven by Playwright), found by ARIA roles only.

One browser for the module; each test opens its own file in a fresh page of it. Screenshots at 1400x900 go to
`$AGENTMAP_TEST_ARTIFACTS` (default: the test's temporary folder).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from components import chromium
from durable_graphs import PURCHASE_A
from timing import scaled

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ARGS = (
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(ARGS) as launched:
        yield launched


@contextmanager
def studio_page(
    browser: Any,
    target: Path,
    file: str | None = None,
    *,
    config: Any = None,
    url: str | None = None,
    init_script: str | None = None,
) -> Iterator[Any]:
    """A page of the studio of `target` (or of `config`, already served at `url`), opened at the address
    `agentmap studio` prints: the file, and the token at the end (`init_script` runs before the page's own)."""
    from agentmap.studio import StudioConfig, background

    if config is None or url is None:
        checkpoint = str((target if target.is_dir() else target.parent) / "studio.db")
        config = StudioConfig(target=target, checkpoint=checkpoint)
        with (
            background(config) as url,
            studio_page(browser, target, file, config=config, url=url, init_script=init_script) as page,
        ):
            yield page
        return
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    if init_script:
        page.add_init_script(init_script)
    page.goto(url + f"?file={file or target.name}&token={config.token}")
    page.get_by_role("grid").wait_for()
    page.wait_for_function("Number(document.body.dataset.checks) >= 1")
    try:
        yield page
    finally:
        page.close()


def artefacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("AGENTMAP_TEST_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def cell(page: Any, row: int, column: int) -> Any:
    return page.get_by_role("gridcell").and_(page.locator(f"[aria-rowindex='{row}'][aria-colindex='{column}']"))


def checks(page: Any) -> int:
    return int(page.evaluate("Number(document.body.dataset.checks)"))


def wait_checked(page: Any, before: int) -> None:
    page.wait_for_function(f"Number(document.body.dataset.checks) > {before}", timeout=scaled(10_000))


def edit(page: Any, target: Any, text: str) -> None:
    """Select a cell, Enter to edit, replace its text, Enter to keep it; wait until the server checked it."""
    before = checks(page)
    target.click()
    page.keyboard.press("Enter")
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"Number(document.body.dataset.checks) > {before} && !document.querySelector('td.editing')",
        timeout=scaled(10_000),
    )
    settle(page)


def settle(page: Any) -> None:
    """Wait until no check is on its way (one sent while typing may still be)."""
    page.wait_for_function("!S.checking && !S.pending", timeout=scaled(10_000))


def test_a_misspelled_node_is_marked_on_its_cell_and_clears_when_fixed(browser: Any, tmp_path: Path) -> None:
    flow = tmp_path / "branching.csv"
    shutil.copy(ROOT / "graphs" / "branching.csv", flow)
    with studio_page(browser, flow) as page:
        grid = page.get_by_role("grid")
        assert grid.get_attribute("aria-rowcount") == "5"
        headers = page.get_by_role("columnheader").all_inner_texts()
        assert headers[:3] == ["GraphName", "Node", "AgentType"] and headers[8] == "Edge"
        edge = cell(page, 3, 9)  # row 3 of the file (Approve), column 9 (Edge)
        assert edge.inner_text() == "Report"

        edit(page, edge, "Reportt")
        assert edge.get_attribute("aria-invalid") == "true"
        described = page.locator("#" + (edge.get_attribute("aria-describedby") or "").split()[0])
        assert "unknown-target" in described.inner_text() and "did you mean 'Report'" in described.inner_text()
        assert "Fix: use one of" in described.inner_text()
        assert described.get_by_role("link").inner_text() == "csv_specs/errors.md#unknown-target"
        findings = page.get_by_role("list", name="Findings")
        assert findings.get_attribute("aria-live") == "polite"
        page.screenshot(path=str(artefacts(tmp_path) / "studio-findings.png"))

        cell(page, 2, 2).click()  # elsewhere; clicking the finding selects its cell again
        findings.get_by_role("button", name="Row 3, Edge: error unknown-target").click()
        assert edge.get_attribute("aria-selected") == "true"
        assert page.evaluate("document.activeElement.getAttribute('aria-colindex')") == "9"

        edit(page, edge, "Report")
        assert edge.get_attribute("aria-invalid") is None
        assert not findings.get_by_role("button", name="error").count()

        # Escape cancels an edit: the value and the findings are as before
        before = checks(page)
        page.keyboard.press("Enter")
        page.keyboard.type("Nowhere")
        page.keyboard.press("Escape")
        wait_checked(page, before)
        settle(page)
        assert edge.inner_text() == "Report" and edge.get_attribute("aria-invalid") is None
        assert flow.read_bytes() == (ROOT / "graphs" / "branching.csv").read_bytes()  # nothing saved

        # arrows move the selection; clicking a node of the picture selects its row
        cell(page, 2, 2).click()
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowRight")
        assert cell(page, 3, 3).get_attribute("aria-selected") == "true"
        assert page.evaluate("document.activeElement.innerText") == "template"
        picture = page.get_by_role("img", name="The graph Approval drawn")
        picture.locator("g.node[data-node='Reject']").click()
        assert cell(page, 4, 2).get_attribute("aria-selected") == "true"

        # the Context editor names the keys of the row's agent type, from the published JSON Schema
        cell(page, 2, 6).click()
        page.keyboard.press("Enter")
        editor = page.get_by_role("textbox", name="Context, row 2")
        help_id = (editor.get_attribute("aria-describedby") or "").split()[0]
        page.locator("#" + help_id).wait_for()
        assert "Context keys of branching: field (string)" in page.locator("#" + help_id).inner_text()
        assert "success_values (array)" in page.locator("#" + help_id).inner_text()
        assert "retry (integer | object)" in page.locator("#" + help_id).inner_text()  # a key every type takes
        # and checks the Context being typed against that schema
        page.keyboard.press("Control+A")
        page.keyboard.type('{"field": 3, "default_result": "no", "colour": "red", "timeout_seconds": 0}')
        check_id = (editor.get_attribute("aria-describedby") or "").split()[1]
        said = page.locator("#" + check_id)
        said.wait_for()
        assert said.get_attribute("role") == "status"
        assert "field must be string" in said.inner_text() and "default_result must be boolean" in said.inner_text()
        assert "colour is not a Context key of this type" in said.inner_text()
        assert "timeout_seconds must be more than 0" in said.inner_text()
        page.keyboard.press("Escape")
        assert cell(page, 2, 6).inner_text() == '{"field": "approved"}'


CRAFTED = (
    "\ufeff# Review flow, kept by hand\r\n"
    "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\r\n"
    '"Review","Draft","template","Draft about {topic}, short","topic","draft","Done"\r\n'
    "# the last step\r\n"
    "Review,Done,echo,,draft,result,\r\n"
)


def test_the_address_can_name_the_graph_shown_first(browser: Any, tmp_path: Path) -> None:
    shutil.copy(ROOT / "graphs" / "subgraph.csv", tmp_path / "subgraph.csv")
    with studio_page(browser, tmp_path, file="subgraph.csv&graph=Frame") as page:  # agentmap studio subgraph.csv::Frame
        page.get_by_role("tab", name="Frame", selected=True).wait_for()
        assert page.get_by_role("tab", name="All rows").get_attribute("aria-selected") == "false"


def test_the_page_keeps_the_token_of_its_address_and_without_it_says_where_to_find_it(
    browser: Any, tmp_path: Path
) -> None:
    from agentmap.studio import StudioConfig, background

    shutil.copy(ROOT / "graphs" / "branching.csv", tmp_path / "branching.csv")
    config = StudioConfig(target=tmp_path / "branching.csv", checkpoint=str(tmp_path / "studio.db"))
    with background(config) as url:
        stranger = browser.new_page()  # a page of its own, opened without the printed address
        stranger.goto(url + "?file=branching.csv")
        stranger.wait_for_function("document.body.dataset.state === 'error'")
        said = stranger.get_by_role("status").filter(has_text="needs the studio's token")
        assert "open the address agentmap studio printed" in said.inner_text()
        assert stranger.get_by_role("gridcell").count() == 0
        stranger.close()
        with studio_page(browser, tmp_path / "branching.csv", config=config, url=url) as page:
            assert "token" not in page.url and "file=branching.csv" in page.url  # out of the address bar
            page.reload()  # kept for this address
            page.wait_for_function("Number(document.body.dataset.checks) >= 1")
            assert cell(page, 3, 9).inner_text() == "Report"


def test_adding_a_row_and_saving_keeps_comments_quoting_bom_and_line_endings(browser: Any, tmp_path: Path) -> None:
    flow = tmp_path / "review.csv"
    flow.write_bytes(CRAFTED.encode("utf-8"))
    with studio_page(browser, flow) as page:
        assert cell(page, 1, 1).count() == 1 and "Review flow" in cell(page, 1, 1).inner_text()
        cell(page, 5, 2).click()  # Done
        page.keyboard.press("Alt+Insert")
        new_node = cell(page, 6, 2)
        assert new_node.get_attribute("aria-selected") == "true"
        assert cell(page, 6, 1).inner_text() == "Review"  # the graph of the tab
        edit(page, new_node, "Publish")
        edit(page, cell(page, 6, 3), "echo")
        edit(page, cell(page, 6, 5), "result")
        edit(page, cell(page, 6, 6), "published")
        edit(page, cell(page, 5, 7), "Publish")
        edit(page, cell(page, 3, 4), 'Draft about {topic}, "short"')
        assert page.get_by_role("list", name="Findings").get_by_role("button", name="error").count() == 0
        page.keyboard.press("Control+s")
        page.wait_for_function("document.body.dataset.state === 'saved'", timeout=scaled(10_000))
    expected = (
        "\ufeff# Review flow, kept by hand\r\n"
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\r\n"
        '"Review","Draft","template","Draft about {topic}, ""short""","topic","draft","Done"\r\n'
        "# the last step\r\n"
        "Review,Done,echo,,draft,result,Publish\r\n"
        "Review,Publish,echo,,result,published,\r\n"
    )
    assert flow.read_bytes() == expected.encode("utf-8")
    hidden = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert hidden == [f".{flow.name}.lock"]  # the saves' lock file; the atomic write left no temporary


def test_a_column_a_finding_asks_for_is_added_and_saved(browser: Any, tmp_path: Path) -> None:
    flow = tmp_path / "calls.csv"
    flow.write_text("GraphName,Node,AgentType\nMain,Call,graph\nInner,Hello,echo\n", encoding="utf-8")
    with studio_page(browser, flow) as page:
        findings = page.get_by_role("list", name="Findings")
        assert "add a Context column to the file" in findings.inner_text()
        before = checks(page)
        page.get_by_role("combobox", name="Add column").select_option("Context")
        wait_checked(page, before)
        settle(page)
        headers = page.get_by_role("grid").get_by_role("columnheader").all_inner_texts()
        assert headers == ["GraphName", "Node", "AgentType", "Context"]
        assert "Context" not in page.get_by_role("combobox", name="Add column").inner_text()  # added once
        page.get_by_role("tab", name="All rows").click()
        edit(page, cell(page, 2, 4), '{"workflow": "::Inner"}')
        assert findings.get_by_role("button", name="error").count() == 0, findings.inner_text()
        page.keyboard.press("Control+s")
        page.wait_for_function("document.body.dataset.state === 'saved'", timeout=scaled(10_000))
    assert flow.read_text(encoding="utf-8") == (
        'GraphName,Node,AgentType,Context\nMain,Call,graph,"{""workflow"": ""::Inner""}"\nInner,Hello,echo,\n'
    )


def test_a_file_changed_on_disk_is_offered_for_reload_and_never_overwritten(browser: Any, tmp_path: Path) -> None:
    flow = tmp_path / "branching.csv"
    shutil.copy(ROOT / "graphs" / "branching.csv", flow)
    shutil.copy(ROOT / "graphs" / "subgraph.csv", tmp_path / "subgraph.csv")
    with studio_page(browser, tmp_path, file="branching.csv") as page:
        edit(page, cell(page, 2, 5), "mine")
        theirs = flow.read_text(encoding="utf-8").replace("Runs when Check failed", "Changed elsewhere")
        flow.write_text(theirs, encoding="utf-8")
        alert = page.get_by_role("alert")
        alert.wait_for(timeout=scaled(10_000))
        assert "changed on disk" in alert.inner_text()
        alert.get_by_role("button", name="Keep editing").click()
        page.get_by_role("button", name="Save").click()
        page.wait_for_function("document.body.dataset.state === 'conflict'", timeout=scaled(10_000))
        assert flow.read_text(encoding="utf-8") == theirs  # never silently overwritten
        assert alert.get_by_role("button", name="Overwrite with my sheet").is_visible()
        alert.get_by_role("button", name="Reload from disk").click()
        page.wait_for_function("document.body.dataset.state === 'ready'", timeout=scaled(10_000))
        assert cell(page, 4, 5).inner_text() == "Changed elsewhere"
        assert cell(page, 2, 5).inner_text() != "mine"

        # a file of several graphs: a tab per graph, and one for all rows
        page.get_by_role("combobox", name="Workflow file").select_option("subgraph.csv")
        page.wait_for_function("document.body.dataset.state === 'ready' && S.file === 'subgraph.csv'")
        tabs = page.get_by_role("tablist", name="Graphs").get_by_role("tab")
        assert tabs.all_inner_texts() == ["All rows", "Main", "Frame"]
        assert len(page.get_by_role("grid").get_by_role("row").all()) == 5  # the header and 4 rows
        tabs.get_by_text("Frame").click()
        assert tabs.get_by_text("Frame").get_attribute("aria-selected") == "true"
        rows = page.get_by_role("grid").get_by_role("row")
        assert [r.get_attribute("aria-rowindex") for r in rows.all()] == ["1", "5"]
        page.get_by_role("button", name="Add row").click()
        assert cell(page, 6, 1).inner_text() == "Frame"


HUMAN = (
    "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next\n"
    "Publish,Draft,template,Draft about {topic},,topic,draft,Review\n"
    'Publish,Review,human,Publish this draft? {draft},"{""interaction_type"": ""approval""}",draft,approved,Done\n'
    "Publish,Done,template,Approved: {approved},,approved,message,\n"
)


def test_a_run_lights_its_nodes_in_order_and_a_paused_node_takes_its_answer(browser: Any, tmp_path: Path) -> None:
    flow = tmp_path / "branching.csv"
    shutil.copy(ROOT / "graphs" / "branching.csv", flow)
    (tmp_path / "publish.csv").write_text(HUMAN, encoding="utf-8")
    with studio_page(browser, tmp_path, file="branching.csv") as page:
        page.wait_for_function("document.body.dataset.runReady === 'Approval'", timeout=scaled(20_000))
        form = page.get_by_role("form", name="Initial state")
        form.get_by_role("textbox", name="approved").fill("yes")
        form.get_by_role("textbox", name="request").fill("a new laptop")
        form.get_by_role("button", name="Run").click()
        page.wait_for_function("document.body.dataset.runStatus === 'succeeded'", timeout=scaled(20_000))
        nodes = page.get_by_role("table", name="Nodes run")
        assert nodes.get_by_role("button").all_inner_texts() == ["Check", "Approve", "Report"]
        picture = page.get_by_role("img", name="The graph Approval drawn")
        lit = picture.locator("g.node.am-succeeded").evaluate_all("gs => gs.map(g => g.dataset.node)")
        assert lit == ["Check", "Approve", "Report"]
        assert picture.locator("g.node[data-node='Reject'].am-succeeded").count() == 0  # the path not taken
        taken = picture.locator("polyline.am-taken").evaluate_all(
            "es => es.map(e => e.dataset.source + '>' + e.dataset.target)"
        )
        assert sorted(taken) == sorted(["__start__>Check", "Check>Approve", "Approve>Report", "Report>__end__"])
        nodes.get_by_role("button", name="Approve").click()
        detail = page.get_by_role("region", name="Node detail").inner_text()
        assert '"request": "a new laptop"' in detail and '"decision": "Approved: a new laptop"' in detail
        assert "Decision for a new laptop" in page.get_by_role("region", name="Final state").inner_text()
        page.screenshot(path=str(artefacts(tmp_path) / "studio-run.png"))

        # change a prompt, save, and run again from the checkpoint after Check: the same state, the new file
        edit(page, cell(page, 3, 4), "OK: {request}")
        page.keyboard.press("Control+s")
        page.wait_for_function("document.body.dataset.state === 'saved'", timeout=scaled(10_000))
        page.wait_for_function("document.body.dataset.runReady === 'Approval'", timeout=scaled(20_000))
        page.get_by_role("list", name="Checkpoints").get_by_role("button", name="next: Approve").click()
        page.wait_for_function("document.body.dataset.runStatus === 'succeeded'", timeout=scaled(20_000))
        assert '"decision": "OK: a new laptop"' in page.get_by_role("region", name="Final state").inner_text()
        assert nodes.get_by_role("button").all_inner_texts() == ["Approve", "Report"]  # from there on, not Check
        # the checkpoints listed are the fork's branch: the first run's steps after the fork point are not
        checkpoints = page.get_by_role("list", name="Checkpoints")
        checkpoints.get_by_role("button", name="next: Report").wait_for()
        assert checkpoints.get_by_role("button", name="next: Report").count() == 1, checkpoints.all_inner_texts()
        assert (
            "Decision for a new laptop; request=a new laptop; decision=OK: a new laptop"
            in page.get_by_role("region", name="Final state").inner_text()
        )

        # fork from the second checkpoint (after Check) with a changed value: the new run starts from that state
        page.get_by_role("textbox", name="Change the state before forking").fill('{"request": "a phone"}')
        page.get_by_role("list", name="Checkpoints").get_by_role("button", name="next: Approve").first.click()
        page.wait_for_function(
            "document.body.dataset.runStatus === 'succeeded' && $('final').textContent.includes('a phone')",
            timeout=scaled(20_000),
        )
        final = page.get_by_role("region", name="Final state").inner_text()
        assert "Decision for a phone; request=a phone; decision=OK: a phone" in final, final
        page.get_by_role("list", name="Checkpoints").scroll_into_view_if_needed()
        page.screenshot(path=str(artefacts(tmp_path) / "studio-fork.png"))
        page.get_by_role("textbox", name="Change the state before forking").fill("[1]")
        page.get_by_role("list", name="Checkpoints").get_by_role("button", name="next: Approve").first.click()
        page.wait_for_function("document.body.dataset.runStatus === 'error'", timeout=scaled(10_000))
        assert "must be a JSON object" in page.get_by_role("status").filter(has_text="JSON object").inner_text()
        page.get_by_role("textbox", name="Change the state before forking").fill("")

        page.get_by_role("combobox", name="Workflow file").select_option("publish.csv")
        page.wait_for_function("document.body.dataset.runReady === 'Publish'", timeout=scaled(20_000))
        page.get_by_role("textbox", name="topic").fill("owls")
        page.get_by_role("button", name="Run").click()
        page.wait_for_function("document.body.dataset.runStatus === 'paused'", timeout=scaled(20_000))
        answer = page.get_by_role("form", name="Answer the paused node")
        assert answer.inner_text().startswith("Review: Publish this draft? Draft about owls")
        assert page.get_by_role("img").locator("g.node[data-node='Review'].am-paused").count() == 1
        answer.get_by_role("textbox", name="Answer").fill("yes")
        answer.get_by_role("button", name="Answer").click()
        page.wait_for_function("document.body.dataset.runStatus === 'succeeded'", timeout=scaled(20_000))
        assert "Approved: True" in page.get_by_role("region", name="Final state").inner_text()
        earlier = page.get_by_role("list", name="Earlier runs").get_by_role("button")
        # the list is asked for again once the run ends; until its answer comes it shows the run paused
        page.wait_for_function(
            "$('threads').textContent.includes(' · done · ')", timeout=scaled(10_000)
        )  # as `agentmap threads` says it, not the protocol's `idle`
        assert earlier.count() == 1


# counts the answers the page has read from /server/threads/search, once its own code has had them
COUNT_SEARCHES = """
window.searchesRead = 0;
const pageFetch = window.fetch;
window.fetch = async (url, init) => {
  const response = await pageFetch(url, init);
  if (!String(url).endsWith("/threads/search")) return response;
  const json = response.json.bind(response);
  response.json = async () => { const data = await json(); window.searchesRead += 1; return data; };
  return response;
};
"""


def test_an_earlier_runs_list_answered_late_does_not_replace_a_newer_one(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "publish.csv").write_text(HUMAN, encoding="utf-8")
    held: list[tuple[Any, Any]] = []

    def hold_the_first(route: Any) -> None:
        if held:
            route.continue_()
        else:  # the list asked for when the run paused: answered now, delivered after the run ended
            held.append((route, route.fetch()))

    with studio_page(browser, tmp_path, file="publish.csv", init_script=COUNT_SEARCHES) as page:
        page.wait_for_function("document.body.dataset.runReady === 'Publish'", timeout=scaled(20_000))
        page.route("**/server/threads/search", hold_the_first)  # the list asked for on opening is on its way
        page.get_by_role("textbox", name="topic").fill("owls")
        page.get_by_role("button", name="Run").click()
        page.wait_for_function("document.body.dataset.runStatus === 'paused'", timeout=scaled(20_000))
        form = page.get_by_role("form", name="Answer the paused node")
        form.get_by_role("textbox", name="Answer").fill("yes")
        form.get_by_role("button", name="Answer").click()
        page.wait_for_function("document.body.dataset.runStatus === 'succeeded'", timeout=scaled(20_000))
        page.wait_for_function("$('threads').textContent.includes(' · done · ')", timeout=scaled(10_000))
        assert len(held) == 1
        read = page.evaluate("window.searchesRead")
        route, answer = held[0]
        assert '"interrupted"' in answer.text()  # the late answer says the thread is paused...
        route.fulfill(response=answer)
        page.wait_for_function(f"window.searchesRead > {read}", timeout=scaled(10_000))
        listed = page.get_by_role("list", name="Earlier runs").get_by_role("button").all_inner_texts()
        assert len(listed) == 1 and " · done · " in listed[0], listed  # ...and is not shown over the newer one


def test_a_workbook_opens_a_tab_per_sheet_and_saves_keeping_other_sheets_and_formatting(
    browser: Any, tmp_path: Path
) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    from openpyxl.styles import Font, PatternFill

    book = openpyxl.Workbook()
    greet = book.active
    greet.title = "Greet"
    greet.append(["Node", "AgentType", "Prompt", "Input_Fields", "Output_Field", "Edge"])
    greet.append(["Hello", "template", "Hello, {name}", "name", "greeting", ""])
    greet["A1"].font = Font(bold=True)
    greet["C2"].fill = PatternFill("solid", fgColor="FFFFFF00")
    greet.column_dimensions["C"].width = 40
    loud = book.create_sheet("Loud")
    loud.append(["Node", "AgentType", "Prompt", "Input_Fields", "Output_Field", "Edge"])
    loud.append(["Say", "template", "{name}!", "name", "said", ""])
    loud["B2"].font = Font(italic=True)
    path = tmp_path / "flows.xlsx"
    book.save(path)

    with studio_page(browser, path, file="flows.xlsx[Greet]") as page:
        sheets = page.get_by_role("tablist", name="Sheets").get_by_role("tab")
        assert sheets.all_inner_texts() == ["Greet", "Loud"]
        assert sheets.get_by_text("Greet").get_attribute("aria-selected") == "true"
        assert page.get_by_role("tablist", name="Graphs").get_by_role("tab").all_inner_texts() == ["Greet"]
        page.get_by_role("img", name="The graph Greet drawn").wait_for(timeout=scaled(10_000))
        edit(page, cell(page, 2, 6), "Helo")  # a misspelled node, found on its cell of the sheet
        assert cell(page, 2, 6).get_attribute("aria-invalid") == "true"
        assert "flows.xlsx[Greet]!F2" in page.get_by_role("list", name="Findings").inner_text()
        page.screenshot(path=str(artefacts(tmp_path) / "studio-workbook.png"))
        cell(page, 2, 6).click()
        before = checks(page)
        page.keyboard.press("Delete")  # empties the cell
        wait_checked(page, before)
        settle(page)
        assert cell(page, 2, 6).get_attribute("aria-invalid") is None
        edit(page, cell(page, 2, 3), "Good day, {name}")
        page.keyboard.press("Control+s")
        page.wait_for_function("document.body.dataset.state === 'saved'", timeout=scaled(10_000))
        page.wait_for_function("document.body.dataset.runReady === 'Greet'", timeout=scaled(20_000))

        sheets.get_by_text("Loud").click()
        page.wait_for_function("document.body.dataset.state === 'ready' && S.file === 'flows.xlsx[Loud]'")
        assert cell(page, 2, 1).inner_text() == "Say"
        page.wait_for_function("document.body.dataset.runReady === 'Loud'", timeout=scaled(20_000))
        page.get_by_role("form", name="Initial state").get_by_role("textbox", name="name").fill("Ada")
        page.get_by_role("button", name="Run").click()
        page.wait_for_function("document.body.dataset.runStatus === 'succeeded'", timeout=scaled(20_000))
        assert '"said": "Ada!"' in page.get_by_role("region", name="Final state").inner_text()

        # another program saves the workbook while it is open: offered for reload, never overwritten
        edit(page, cell(page, 2, 3), "{name}?")
        theirs = openpyxl.load_workbook(path)
        theirs["Loud"]["C2"] = "changed elsewhere"
        theirs.save(path)
        alert = page.get_by_role("alert")
        alert.wait_for(timeout=scaled(10_000))
        assert "changed on disk" in alert.inner_text()
        alert.get_by_role("button", name="Keep editing").click()
        page.get_by_role("button", name="Save").click()
        page.wait_for_function("document.body.dataset.state === 'conflict'", timeout=scaled(10_000))
        assert openpyxl.load_workbook(path)["Loud"]["C2"].value == "changed elsewhere"
        alert.get_by_role("button", name="Reload from disk").click()
        page.wait_for_function("document.body.dataset.state === 'ready'", timeout=scaled(10_000))
        assert cell(page, 2, 3).inner_text() == "changed elsewhere"

    saved = openpyxl.load_workbook(path)
    assert [c.value for c in saved["Greet"][2]][:3] == ["Hello", "template", "Good day, {name}"]
    assert saved["Greet"]["F2"].value is None
    assert saved["Greet"]["A1"].font.bold and saved["Greet"]["C2"].fill.fgColor.rgb == "FFFFFF00"
    assert saved["Greet"].column_dimensions["C"].width == 40
    assert [c.value for c in saved["Loud"][2]] == ["Say", "template", "changed elsewhere", "name", "said", None]
    assert saved["Loud"]["B2"].font.italic


def test_a_graph_renamed_on_one_sheet_is_found_on_the_sheet_that_calls_it(browser: Any, tmp_path: Path) -> None:
    from test_studio_workbook import calling_workbook

    path = calling_workbook(tmp_path / "calls.xlsx")
    with studio_page(browser, path, file="calls.xlsx[Helpers]") as page:
        edit(page, cell(page, 2, 1), "Helper2")  # sheet Main's node Call runs ::Helper
        findings = page.get_by_role("list", name="Findings")
        assert "calls.xlsx[Main]!D2" in findings.inner_text()
        assert page.locator("[role=gridcell][aria-invalid=true]").count() == 0  # not on a cell of this sheet
        page.keyboard.press("Control+s")
        page.wait_for_function("document.body.dataset.state === 'saved'", timeout=scaled(10_000))
        findings.get_by_role("button").filter(has_text="calls.xlsx[Main]!D2").click()  # opens sheet Main
        page.wait_for_function("S.file === 'calls.xlsx[Main]'", timeout=scaled(10_000))
        page.wait_for_function(
            "document.querySelector(\"[aria-rowindex='2'][aria-colindex='4']\")?.getAttribute('aria-invalid')"
            " === 'true'",
            timeout=scaled(10_000),
        )


def test_a_formula_cell_shows_its_value_and_is_not_edited(browser: Any, tmp_path: Path) -> None:
    from test_studio_workbook import formula_workbook

    path = formula_workbook(tmp_path / "formulas.xlsx")
    with studio_page(browser, path, file="formulas.xlsx[Greet]") as page:
        prompt = cell(page, 2, 3)
        assert prompt.inner_text() == "Hello, {name}" and prompt.get_attribute("aria-readonly") == "true"
        assert prompt.get_attribute("aria-description") == 'formula ="Hello, "&"{name}"'
        prompt.click()
        page.keyboard.press("Enter")
        assert page.locator("td.editing").count() == 0
        assert "edit the formula in Excel" in page.locator("#status").inner_text()


def test_text_typed_like_a_formula_in_a_workbook_is_saved_as_text(browser: Any, tmp_path: Path) -> None:
    from test_studio_workbook import formatted_workbook

    openpyxl = pytest.importorskip("openpyxl")
    path = formatted_workbook(tmp_path / "flows.xlsx")
    with studio_page(browser, path, file="flows.xlsx[Greet]") as page:
        edit(page, cell(page, 2, 3), "=SUM(A1)")
        page.keyboard.press("Control+s")
        page.wait_for_function("document.body.dataset.state === 'saved'", timeout=scaled(10_000))
        assert cell(page, 2, 3).inner_text() == "=SUM(A1)" and cell(page, 2, 3).get_attribute("aria-readonly") is None
        edit(page, cell(page, 3, 3), "Goodbye, {name}")  # the next save is not refused
        page.keyboard.press("Control+s")
        page.wait_for_function("document.body.dataset.state === 'saved'", timeout=scaled(10_000))
    greet = openpyxl.load_workbook(path)["Greet"]
    assert (greet["C2"].value, greet["C2"].data_type, greet["C3"].value) == ("=SUM(A1)", "s", "Goodbye, {name}")


ORDER = (
    "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
    "Order,Cups,human,How many cups of {drink}?,,drink,cups,Review\n"
    'Order,Review,human,Order {cups} cups?,"{""interaction_type"": ""approval""}",cups,approved,Done\n'
    "Order,Done,template,{cups} cups approved: {approved},,cups|approved,message,\n"
)


def test_an_answer_typed_in_the_page_means_what_it_says(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "order.csv").write_text(ORDER, encoding="utf-8")
    with studio_page(browser, tmp_path, file="order.csv") as page:
        page.wait_for_function("document.body.dataset.runReady === 'Order'", timeout=scaled(20_000))
        page.get_by_role("textbox", name="drink").fill("tea")
        page.get_by_role("button", name="Run").click()
        page.wait_for_function("document.body.dataset.runStatus === 'paused'", timeout=scaled(20_000))
        form = page.get_by_role("form", name="Answer the paused node")
        box, button = form.get_by_role("textbox", name="Answer"), form.get_by_role("button", name="Answer")
        box.fill("2")  # text, as `agentmap resume ID 2` sends it (before: the number 2, refused as "not text")
        button.click()
        page.wait_for_function(
            "$('question-text').textContent.startsWith('Review: Order 2 cups?')", timeout=scaled(20_000)
        )
        box.fill("maybe")
        button.click()
        page.wait_for_function("document.body.dataset.runStatus === 'error'", timeout=scaled(20_000))
        refusal = page.locator("#run-status").inner_text()
        assert refusal.startswith("command.resume: node 'Review' asks for an approval; 'maybe' is neither"), refusal
        assert form.is_visible()  # the run stays paused: the question is asked again
        box.fill("no")
        button.click()
        page.wait_for_function("document.body.dataset.runStatus === 'succeeded'", timeout=scaled(20_000))
        assert "2 cups approved: False" in page.get_by_role("region", name="Final state").inner_text()


def test_before_a_save_the_page_says_which_threads_wait_and_what_the_edit_does_to_them(
    browser: Any, tmp_path: Path
) -> None:
    import agentmap

    flow = tmp_path / "purchase.csv"
    flow.write_text(PURCHASE_A, encoding="utf-8")
    saver = agentmap.checkpointer(str(tmp_path / "studio.db"))  # where the studio keeps its runs' threads
    app = agentmap.compile(flow, checkpointer=saver)
    for n in range(3):
        assert app.invoke({"request": f"item {n}"}, {"configurable": {"thread_id": f"wait-{n}"}}).interrupts
    app.invoke({"request": "done"}, {"configurable": {"thread_id": "finished"}})
    app.thread("finished").resume("yes")  # finished: not waiting

    with studio_page(browser, flow) as page:
        edit(page, cell(page, 2, 2), "Approval")  # Review renamed
        edit(page, cell(page, 3, 4), "Bought {request}: {approved}")  # a prompt of a node still to run
        page.keyboard.press("Control+s")
        page.wait_for_function("document.body.dataset.state === 'impact'", timeout=scaled(20_000))
        warning = page.get_by_role("alert").filter(has_text="Threads waiting on this file")
        text = warning.inner_text()
        assert "3 threads of purchase.csv wait on the revision they started on" in text, text
        assert "3 would need a migration map" in text, text
        changes = page.get_by_role("list", name="Changes since their revisions").inner_text()
        assert "(3 threads)" in changes and "Review" in changes and "Approval" in changes, changes
        waiting = page.get_by_role("list", name="Waiting threads").get_by_role("listitem").all_inner_texts()
        assert sorted(w[:6] for w in waiting) == ["wait-0", "wait-1", "wait-2"], waiting
        assert all("needs-migration" in w and "map: node,Review,Approval" in w for w in waiting), waiting
        page.screenshot(path=str(artefacts(tmp_path) / "studio-impact.png"))
        assert flow.read_text(encoding="utf-8") == PURCHASE_A  # nothing written yet

        page.get_by_role("button", name="Keep editing").click()
        assert page.evaluate("document.body.dataset.state") == "edited" and not warning.is_visible()
        page.keyboard.press("Control+s")
        page.get_by_role("button", name="Save: they finish on their revisions").click()
        page.wait_for_function("document.body.dataset.state === 'saved'", timeout=scaled(20_000))
        assert "Purchase,Approval,human" in flow.read_text(encoding="utf-8")

    edited = agentmap.compile(flow, checkpointer=agentmap.checkpointer(str(tmp_path / "studio.db")))
    result = edited.thread("wait-1").resume("yes")  # it finishes on the revision it started on
    assert result.state["note"] == "Told the team about item 1"
    assert result.state["report"] == "Purchase of item 1 approved: True"
