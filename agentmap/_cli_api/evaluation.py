"""eval run, eval score, eval diff: scenarios run against an agent, their logs scored, two reports compared."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap.interface.compare import EvalDiff, ScenarioChange
    from agentmap.interface.scenarios import Scenario
    from agentmap.interface.scores import EvalReport, Judge

__all__ = [
    "describe",
    "diff_html",
    "diff_reports",
    "junit_xml",
    "load_rubric",
    "load_scenarios",
    "make_llm_judge",
    "render_table",
    "report_html",
    "run_eval",
    "score_batch_output",
    "score_logs",
]


def load_scenarios(path: str | os.PathLike[str]) -> list[Scenario]:
    """eval run: the scenarios file, checked."""
    from agentmap.interface.scenarios import load_scenarios

    return load_scenarios(path)


if TYPE_CHECKING:  # the real signature, for the type checker; the call below forwards to it
    from agentmap.interface.eval_runner import run_eval
else:

    def run_eval(*args: Any, **kwargs: Any) -> Any:
        """eval run: each scenario against the agent, the logs written to `out_dir`, awaited by the command."""
        from agentmap.interface.eval_runner import run_eval

        return run_eval(*args, **kwargs)


def score_logs(
    logs_dir: str | os.PathLike[str], *, expectations: str | os.PathLike[str] | None = None, judge: Judge | None = None
) -> EvalReport:
    """eval score, eval diff: the conversation logs of a folder scored (with their expectations and a judge)."""
    from agentmap.interface.evaluate import score_logs

    return score_logs(logs_dir, expectations=expectations, judge=judge)


def score_batch_output(path: str | os.PathLike[str]) -> EvalReport:
    """eval score --batch-output: a batch's output table scored."""
    from agentmap.interface.batch_scores import score_batch_output

    return score_batch_output(path)


def load_rubric(path: str | os.PathLike[str]) -> str:
    """eval score --rubric: the judge's criteria from a file."""
    from agentmap.interface.judge import load_rubric

    return load_rubric(path)


def make_llm_judge(
    model: str, *, rubric: str | None = None, threshold: int = 3, settings: Mapping[str, Any] | None = None
) -> Judge:
    """eval score --judge: a model judging each run against the rubric's criteria."""
    from agentmap.interface.judge import make_llm_judge

    return make_llm_judge(model, rubric=rubric, threshold=threshold, settings=settings)


def render_table(report: EvalReport, console: Any = None) -> None:
    """eval score: the report as a table on the terminal."""
    from agentmap.interface.report import render_table

    render_table(report, console)


def report_html(report: EvalReport) -> str:
    """eval score --report: the report as one HTML page."""
    from agentmap.interface.report import report_html

    return report_html(report)


def diff_reports(base: EvalReport, new: EvalReport) -> EvalDiff:
    """eval diff: what changed between two scored folders, regressions included."""
    from agentmap.interface.compare import diff_reports

    return diff_reports(base, new)


def describe(change: ScenarioChange) -> str:
    """eval diff: one scenario's change in words."""
    from agentmap.interface.compare import describe

    return describe(change)


def diff_html(diff: EvalDiff, base: EvalReport, new: EvalReport) -> str:
    """eval diff --html: the comparison as one HTML page."""
    from agentmap.interface.diff_report import diff_html

    return diff_html(diff, base, new)


def junit_xml(diff: EvalDiff) -> str:
    """eval diff --junit: the comparison as JUnit XML for CI."""
    from agentmap.interface.compare import junit_xml

    return junit_xml(diff)
