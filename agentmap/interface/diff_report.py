"""`agentmap eval diff --html`: both runs side by side, each trial with its conversation, trajectory and checks.

One self-contained page (inline CSS, no scripts): the table of scenario changes (`compare.EvalDiff`: pass^k of
BASE and NEW, worse / better, regressions), then one section per scenario with BASE's trials on the left and
NEW's on the right. A trial shows its conversation with the findings beside each reply (as the score report
does), the nodes and tool calls of its run record, and its failed checks.
"""

from __future__ import annotations

import html
from typing import Any

from agentmap.interface.compare import EvalDiff, ScenarioChange, describe
from agentmap.interface.report import _conversation
from agentmap.interface.run_record import RunRecords
from agentmap.interface.scores import EvalReport, RunScore

__all__ = ["diff_html"]


def diff_html(diff: EvalDiff, base: EvalReport, new: EvalReport) -> str:
    """Return the side-by-side page of `diff`, made from the two reports it compared."""
    esc = html.escape
    changes = [*diff.scenarios, *([diff.overall] if diff.overall is not None else [])]
    rows = "".join(_change_row(change, change is not diff.overall) for change in changes)
    sides = ((base, RunRecords(base.logs_dir)), (new, RunRecords(new.logs_dir)))
    sections = "".join(_scenario(change.name, sides) for change in diff.scenarios)
    regressions = [c.name for c in diff.regressions]
    verdict = f"Regression in {', '.join(regressions)}." if regressions else "No regression."
    return _PAGE.format(
        title=esc(f"Evaluation diff: {diff.base_dir} -> {diff.new_dir}"),
        base=esc(diff.base_dir),
        new=esc(diff.new_dir),
        verdict=esc(verdict),
        verdict_class="bad" if regressions else "ok",
        changes=rows,
        sections=sections,
    )


def _change_row(change: ScenarioChange, linked: bool) -> str:
    esc = html.escape
    name = f'<a href="#s-{esc(change.name)}">{esc(change.name)}</a>' if linked else esc(change.name)
    cls = "bad" if change.regression or change.status == "worse" else "ok" if change.status == "better" else ""
    return (
        f'<tr class="{cls}"><td>{name}</td><td>{change.k or "-"}</td>'
        f"<td>{_figure(change.base)}</td><td>{_figure(change.new)}</td><td>{esc(change.status)}</td>"
        f"<td>{'yes' if change.regression else ''}</td><td>{esc(describe(change))}</td></tr>"
    )


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _scenario(name: str, reports: tuple[tuple[EvalReport, RunRecords], ...]) -> str:
    esc = html.escape
    sides = "".join(
        f'<div class="side"><h3>{label}</h3>{_trials(report, records, name)}</div>'
        for label, (report, records) in zip(("BASE", "NEW"), reports, strict=True)
    )
    return f'<section id="s-{esc(name)}"><h2>{esc(name)}</h2><div class="pair">{sides}</div></section>'


def _trials(report: EvalReport, records: RunRecords, name: str) -> str:
    runs = sorted((r for r in report.runs if r.scenario == name), key=lambda r: r.run or 0)
    if not runs:
        return "<p><em>no runs of this scenario</em></p>"
    return "".join(_trial(report.logs_dir, records, run) for run in runs)


def _trial(logs_dir: str, records: RunRecords, run: RunScore) -> str:
    esc = html.escape
    failed = "".join(f"<li>{esc(f.kind)}: {esc(f.message)}</li>" for f in run.findings)
    checks = f'<div class="checks"><b>failed checks</b><ul>{failed}</ul></div>' if failed else ""
    return f'<div class="trial">{_trajectory(records.get(run.log))}{checks}{_conversation(logs_dir, run)}</div>'


def _trajectory(record: dict[str, Any] | None) -> str:
    """The nodes and tool calls of a run's record, or nothing when there is none."""
    if record is None:
        return ""
    steps = [html.escape(str(node)) for node in record.get("nodes") or ()]
    for call in record.get("tool_calls") or ():
        if isinstance(call, dict):
            args = ", ".join(f"{k}={v!r}" for k, v in (call.get("args") or {}).items())
            steps.append(f'<span class="tool">{html.escape(str(call.get("tool")))}({html.escape(args)})</span>')
    if not steps:
        return ""
    return f'<p class="trajectory"><b>trajectory</b> {" &rarr; ".join(steps)}</p>'


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 1em; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }}
tr.ok td:first-child {{ border-left: 4px solid #2a2; }}
tr.bad td:first-child {{ border-left: 4px solid #c22; }}
p.ok {{ color: #261; font-weight: bold; }}
p.bad {{ color: #a11; font-weight: bold; }}
.pair {{ display: grid; grid-template-columns: 1fr 1fr; gap: 1.5em; }}
.side {{ min-width: 0; }}
.trial {{ border: 1px solid #ddd; border-radius: 4px; padding: 0.5em; margin-bottom: 1em; }}
.checks {{ color: #a11; }}
.tool {{ font-family: monospace; }}
ul {{ margin: 0; padding-left: 1.2em; }}
li.bad {{ color: #a11; }}
.warn {{ color: #a60; }}
summary.ok {{ color: #261; }}
summary.bad {{ color: #a11; font-weight: bold; }}
table.conversation td.text {{ white-space: pre-wrap; }}
tr.user td {{ background: #f4f7fb; }}
</style></head>
<body>
<h1>{title}</h1>
<p>BASE: {base}<br>NEW: {new}</p>
<p class="{verdict_class}">{verdict}</p>
<table><thead><tr><th>scenario</th><th>k</th><th>BASE pass^k</th><th>NEW pass^k</th><th>status</th>
<th>regression</th><th>detail</th></tr></thead>
<tbody>{changes}</tbody></table>
{sections}
</body></html>
"""
