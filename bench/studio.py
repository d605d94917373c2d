"""Studio round trip: an edit typed into a cell of a 200-node workflow until its finding shows on that cell.

Measured in a real headless chromium (Debian's package) on `agentmap studio`'s page: a key typed into an open
cell editor, to the moment the page has applied the findings the server returned for it (the misspelled
next-node marked on its cell, then cleared again). Target: p50 <= 100 ms.

The baseline, measured in the same run, alternating: `agentmap.validate(path)` in this process on the same
200-node file (what `agentmap validate` does, without the process start). The ratio says what the page, the
HTTP hop and rendering the rows as the file add to the validator itself.

Prints min/median/max of each. Run: `python bench/studio.py [--rounds N]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import agentmap
from agentmap.studio import StudioConfig, background

NODES = 200
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def write_workflow(path: Path) -> None:
    rows = ["GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge"]
    for i in range(NODES):
        target = f"N{i + 1}" if i < NODES - 1 else ""
        rows.append(f"Big,N{i},template,step {i} {{x{i}}},x{i},x{i + 1},{target}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


ROUND_TRIP = """async ([row, text]) => {
  const cell = document.querySelector(`td[role=gridcell][aria-rowindex="${row}"][aria-colindex="7"]`);
  cell.click();
  cell.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
  const editor = cell.querySelector("input");
  const started = performance.now();
  editor.value = text;
  editor.dispatchEvent(new Event("input", { bubbles: true }));
  await new Promise((resolve) => {  // the page announces each set of findings it has applied
    const applied = () => {
      if (!S.pending) { document.removeEventListener("studio:checked", applied); resolve(); }
    };
    document.addEventListener("studio:checked", applied);
  });
  const took = performance.now() - started;
  const marked = cell.getAttribute("aria-invalid") === "true";
  editor.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
  return [took, marked];
}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        flow = Path(folder) / "big.csv"
        write_workflow(flow)
        page_ms: list[float] = []
        validate_ms: list[float] = []
        with background(StudioConfig(target=flow)) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url + "?file=big.csv")
            page.wait_for_function("Number(document.body.dataset.checks) >= 1")
            for i in range(args.rounds):
                row = 2 + (i * 37) % NODES
                for text, should_mark in (("Nowhere", True), (f"N{row - 1}" if row < NODES + 1 else "", False)):
                    took, marked = page.evaluate(ROUND_TRIP, [row, text])
                    if marked != should_mark:
                        print(f"round {i}: row {row} marked={marked}, expected {should_mark}", file=sys.stderr)
                        return 1
                    page_ms.append(took)
                    started = time.perf_counter()
                    agentmap.validate(flow)
                    validate_ms.append((time.perf_counter() - started) * 1000)
            browser.close()
    for name, values in (("page round trip", page_ms), ("agentmap.validate", validate_ms)):
        print(
            f"{name:>18}: min {min(values):6.1f} ms  p50 {statistics.median(values):6.1f} ms  max {max(values):6.1f} ms"
        )
    ratios = sorted(a / b for a, b in zip(page_ms, validate_ms, strict=True))
    print(f"{'ratio':>18}: min {ratios[0]:5.2f}x  p50 {statistics.median(ratios):5.2f}x  max {ratios[-1]:5.2f}x")
    p50 = statistics.median(page_ms)
    print(f"target p50 <= 100 ms: {'met' if p50 <= 100 else 'NOT met'} ({p50:.1f} ms, {NODES} nodes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
