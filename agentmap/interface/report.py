"""Render an `EvalReport`: a terminal table (rich), JSON, and a self-contained HTML page."""

from __future__ import annotations

import html
import json
import os
from typing import TYPE_CHECKING

from agentmap.interface.logs import LogFormatError, parse_conversation_texts
from agentmap.interface.scores import EvalReport, RunScore, ScenarioScore

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["INTERVAL_NOTE", "render_table", "report_html", "report_json"]

_SHOWN_FAILURES = 20


def report_json(report: EvalReport) -> str:
    """Return the report as indented JSON text."""
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False)


def render_table(report: EvalReport, console: Console | None = None) -> None:
    """Print the summary: one row per scenario, overall pass^k, then the first failing runs.

    Args:
        report: The report to show.
        console: Where to print; a new stdout console by default.
    """
    from rich.console import Console
    from rich.table import Table

    out = console or Console()
    ks = sorted(report.pass_hat_k)
    judged = _judged(report)
    table = Table(title=f"Evaluation of {report.logs_dir}")
    checks = ("failed checks",) if report.repeated else ()
    for column in ("scenario", "runs", "passed", *(f"pass^{k}" for k in ks), *(("judge",) if judged else ()), *checks):
        table.add_column(column, justify="left" if column in ("scenario", *checks) else "right")
    for scenario in report.scenarios:
        cells = [_figure(report, scenario.pass_hat_k, scenario.intervals, k) for k in ks]
        cells += [_mean_score(_runs_of(report, scenario))] if judged else []
        cells += [_checks(scenario)] if checks else []
        style = "green" if scenario.passes == scenario.runs else "red"
        table.add_row(scenario.name, str(scenario.runs), str(scenario.passes), *cells, style=style)
    unmapped = [r for r in report.runs if r.scenario is None]
    if unmapped:
        extra = [_mean_score(unmapped)] if judged else []
        extra += [""] if checks else []
        table.add_row(
            "(no scenario)", str(len(unmapped)), str(sum(r.passed for r in unmapped)), *("-" for _ in ks), *extra
        )
    total = [_figure(report, report.pass_hat_k, report.intervals, k) for k in ks]
    total += [_mean_score(report.runs)] if judged else []
    total += [""] if checks else []
    table.add_row("all", str(len(report.runs)), str(report.passed), *total, style="bold")
    out.print(table)
    if report.repeated:
        out.print(INTERVAL_NOTE, highlight=False)
    failures = [r for r in report.runs if not r.passed]
    for run in failures[:_SHOWN_FAILURES]:
        out.print(
            f"[red]FAIL[/red] {run.log} ({_name(run)}): "
            + "; ".join(_finding_text(f.turn, f.message) for f in run.findings),
            markup=True,
            highlight=False,
        )
    if len(failures) > _SHOWN_FAILURES:
        out.print(f"... and {len(failures) - _SHOWN_FAILURES} more failing runs (see --json or --report)")
    for warning in report.warnings:
        out.print(f"[yellow]warning:[/yellow] {warning}")


def report_html(report: EvalReport) -> str:
    """Return a self-contained HTML page (inline CSS, no scripts or external files) with every run."""
    esc = html.escape
    ks = sorted(report.pass_hat_k)
    judged = _judged(report)
    head = "".join(f"<th>pass^{k}</th>" for k in ks) + ("<th>judge</th>" if judged else "")
    head += "<th>failed checks</th>" if report.repeated else ""
    rows = []
    for s in report.scenarios:
        cells = "".join(f"<td>{_figure(report, s.pass_hat_k, s.intervals, k)}</td>" for k in ks)
        cells += f"<td>{_mean_score(_runs_of(report, s))}</td>" if judged else ""
        cells += f"<td>{esc(_checks(s))}</td>" if report.repeated else ""
        cls = "ok" if s.passes == s.runs else "bad"
        rows.append(f'<tr class="{cls}"><td>{esc(s.name)}</td><td>{s.runs}</td><td>{s.passes}</td>{cells}</tr>')
    total = "".join(f"<td>{_figure(report, report.pass_hat_k, report.intervals, k)}</td>" for k in ks)
    total += f"<td>{_mean_score(report.runs)}</td>" if judged else ""
    total += "<td></td>" if report.repeated else ""
    rows.append(f'<tr class="total"><td>all</td><td>{len(report.runs)}</td><td>{report.passed}</td>{total}</tr>')
    runs = "".join(_run_row(r, judged) for r in report.runs)
    conversations = "".join(_conversation(report.logs_dir, r) for r in report.runs)
    warnings = "".join(f'<p class="warn">{esc(w)}</p>' for w in report.warnings)
    return _PAGE.format(
        title=esc(f"Evaluation of {report.logs_dir}"),
        passed=report.passed,
        total=len(report.runs),
        head=head,
        scenarios="".join(rows),
        runs=runs,
        run_judge="<th>judge</th>" if judged else "",
        conversations=conversations,
        warnings=warnings + (f"<p>{esc(INTERVAL_NOTE)}</p>" if report.repeated else ""),
    )


INTERVAL_NOTE = (
    "pass^k [95% interval]: Wilson score interval of each scenario's pass rate, raised to the power k; "
    "overall: the mean of the scenarios' bounds."
)
"""Said under the table when the report has intervals (several runs per scenario)."""


def _figure(report: EvalReport, values: dict[int, float], intervals: dict[int, tuple[float, float]], k: int) -> str:
    """pass^k as `0.50`, with its interval `0.50 [0.15-0.85]` when the report has repeated runs."""
    if k not in values:
        return "-"
    if not report.repeated or k not in intervals:
        return f"{values[k]:.2f}"
    low, high = intervals[k]
    return f"{values[k]:.2f} [{low:.2f}-{high:.2f}]"


def _checks(scenario: ScenarioScore) -> str:
    """The runs that failed each kind of check, as `expectation 2, state 1`, or `-`."""
    return ", ".join(f"{kind} {count}" for kind, count in scenario.failed_checks.items()) or "-"


def _judged(report: EvalReport) -> bool:
    return any(r.judge is not None for r in report.runs)


def _runs_of(report: EvalReport, scenario: ScenarioScore) -> list[RunScore]:
    return [r for r in report.runs if r.scenario == scenario.name]


def _mean_score(runs: list[RunScore]) -> str:
    """The mean judge score of `runs` that got one, as `4.50`, or `-`."""
    scores = [r.judge.score for r in runs if r.judge is not None and r.judge.score is not None]
    return f"{sum(scores) / len(scores):.2f}" if scores else "-"


def _name(run: RunScore) -> str:
    if run.scenario is None:
        return "no scenario"
    return f"{run.scenario} #{run.run}" if run.run is not None else run.scenario


def _finding_text(turn: int | None, message: str) -> str:
    return f"turn {turn}: {message}" if turn is not None else message


def _run_row(run: RunScore, judged: bool) -> str:
    esc = html.escape
    found = "".join(f"<li>{esc(f.kind)}: {esc(_finding_text(f.turn, f.message))}</li>" for f in run.findings)
    verdict = "pass" if run.passed else "fail"
    return (
        f'<tr class="{"ok" if run.passed else "bad"}"><td>{esc(run.log)}</td><td>{esc(_name(run))}</td>'
        f"<td>{verdict}</td><td>{run.user_turns}</td><td>{run.refusals}</td><td>{run.clarifications}</td>"
        f"{_judge_cell(run) if judged else ''}<td><ul>{found}</ul></td></tr>"
    )


def _conversation(logs_dir: str, run: RunScore) -> str:
    """One run's conversation, each reply beside the findings about its turn (read back from the log)."""

    esc = html.escape
    try:
        with open(os.path.join(logs_dir, run.log), encoding="utf-8-sig") as handle:
            turns = parse_conversation_texts(handle.read(), source=run.log)
    except (OSError, UnicodeDecodeError, LogFormatError):
        turns = []  # a log that cannot be read is a `format` finding already

    def notes(turn: int | None) -> str:
        found = [f for f in run.findings if f.turn == turn]
        return "".join(
            f'<li class="{"bad" if f.kind != "judge" else "warn"}">{esc(f.kind)}: {esc(f.message)}</li>' for f in found
        )

    rows = []
    general = notes(None)
    if general:
        rows.append(f'<tr><td colspan="2"><em>whole conversation</em></td><td><ul>{general}</ul></td></tr>')
    user_turn = 0
    for role, text in turns:
        if role == "user":
            user_turn += 1
        beside = notes(user_turn) if role != "user" else ""
        rows.append(
            f'<tr class="{esc(role)}"><td>{esc(role)}{f" {user_turn}" if role == "user" else ""}</td>'
            f'<td class="text">{esc(text)}</td><td>{f"<ul>{beside}</ul>" if beside else ""}</td></tr>'
        )
    missing = [f for f in run.findings if f.turn is not None and f.turn > user_turn]
    for finding in missing:
        rows.append(
            f"<tr><td>turn {finding.turn}</td><td><em>(no reply)</em></td><td><ul>{notes(finding.turn)}</ul></td></tr>"
        )
    verdict = "pass" if run.passed else "fail"
    return (
        f'<details{" open" if not run.passed else ""}><summary class="{"ok" if run.passed else "bad"}">'
        f"{esc(run.log)} ({esc(_name(run))}): {verdict}</summary>"
        f'<table class="conversation"><thead><tr><th>turn</th><th>text</th><th>findings</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></details>"
    )


def _judge_cell(run: RunScore) -> str:
    """The judge's score and reasons for one run (its failure, if any, is also among the findings)."""
    if run.judge is None:
        return "<td>-</td>"
    score = "-" if run.judge.score is None else f"{run.judge.score}/5"
    reasons = "".join(f"<li>{html.escape(reason)}</li>" for reason in run.judge.reasons)
    return f"<td>{score}<ul>{reasons}</ul></td>" if reasons else f"<td>{score}</td>"


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 2em; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }}
tr.ok td:first-child {{ border-left: 4px solid #2a2; }}
tr.bad td:first-child {{ border-left: 4px solid #c22; }}
tr.total {{ font-weight: bold; }}
ul {{ margin: 0; padding-left: 1.2em; }}
.warn {{ color: #a60; }}
li.bad {{ color: #a11; }}
summary.ok {{ color: #261; }}
summary.bad {{ color: #a11; font-weight: bold; }}
table.conversation td.text {{ white-space: pre-wrap; max-width: 60em; }}
tr.user td {{ background: #f4f7fb; }}
details {{ margin-bottom: 1em; }}
</style></head>
<body>
<h1>{title}</h1>
<p>{passed} of {total} runs passed.</p>
{warnings}
<h2>Scenarios</h2>
<table><thead><tr><th>scenario</th><th>runs</th><th>passed</th>{head}</tr></thead>
<tbody>{scenarios}</tbody></table>
<h2>Runs</h2>
<table><thead><tr><th>log</th><th>scenario</th><th>verdict</th><th>user turns</th><th>refusals</th>
<th>clarifications</th>{run_judge}<th>findings</th></tr></thead>
<tbody>{runs}</tbody></table>
<h2>Conversations</h2>
<p>Each reply beside the findings about its turn; failing runs are open.</p>
{conversations}
</body></html>
"""
