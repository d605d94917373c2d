"""Scoring an `agentmap batch` output with the evaluation's checks: `agentmap eval score RESULTS.csv`.

Each row of the output is one run. Its values (the input columns, the workflow's output fields) are the run's
final state, so an `expected_state` column, carried from the batch input to its output, is checked on them
with the same expression language as a scenario's; a row whose run failed (`success` false) fails with its
`error`. Rows with the same `scenario` are that scenario's trials (pass^k with intervals, as for logs);
without a `scenario` column every row is a scenario of its own, named by its `row_id`.

Text cells of CSV and Excel outputs are read as the JSON values they spell when they do (`6`, `true`,
`["a", "b"]`, `{"status": "ok"}`), so `len(items) >= 2` works on the list a batch wrote as JSON text.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentmap.batch.tables import FORMATS, read_rows
from agentmap.errors import ConfigError, ErrorCode, Location
from agentmap.interface.checks import ExpressionError, check_state, parse_condition
from agentmap.interface.scores import EvalReport, Finding, RunScore, summarize

__all__ = ["BATCH_OUTPUT_SUFFIXES", "score_batch_output"]

BATCH_OUTPUT_SUFFIXES = tuple(FORMATS)
"""The extensions of a batch output `eval score` reads as one."""

_UNCHECKED = ("must_include", "must_not_include", "expect_refusal", "expect_clarification", "expected_trajectory")
_JSON_START = (*'{["-0123456789', "true", "false", "null")


def score_batch_output(path: str | os.PathLike[str]) -> EvalReport:
    """Score the rows of a batch output table (`.csv`, `.jsonl`, `.parquet`, `.xlsx`).

    Raises:
        ConfigError: The table is not a batch output (no `row_id` or `success` column), or an `expected_state`
            cell is not a condition of the language (code `bad-expression`, with its row and column).
        WorkflowFileError: The file does not exist.
    """
    file = Path(path)
    report = EvalReport(logs_dir=str(file))
    typed = FORMATS.get(file.suffix.lower()) in ("jsonl", "parquet")
    trials: dict[str, int] = {}
    unchecked: set[str] = set()
    for number, row in enumerate(read_rows(file), start=1 if typed else 2):
        if number == (1 if typed else 2) and not {"row_id", "success"} <= set(row):
            raise ConfigError(
                f"{file} is not an `agentmap batch` output: it has no row_id and success columns",
                code=ErrorCode.BAD_INPUT,
                location=Location(file=str(file)),
                hint="Pass the --output table of `agentmap batch`, or a folder of logs from `agentmap eval run`.",
            )
        state = {str(k): v if typed else _value(v) for k, v in row.items()}
        row_id = str(row.get("row_id"))
        name = str(row.get("scenario") or row_id)
        trials[name] = trials.get(name, 0) + 1
        score = RunScore(log=f"row {row_id}", scenario=name, run=trials[name])
        if _false(row.get("success")):
            error = str(row.get("error") or "").strip() or "no error given"
            score.findings.append(Finding("run", f"the run failed: {error}"))
        condition = str(row.get("expected_state") or "").strip()
        if condition:
            _check_syntax(condition, file, number)
            problem = check_state(condition, state)
            if problem is not None:
                score.findings.append(Finding("state", problem))
        unchecked |= {c for c in _UNCHECKED if str(row.get(c) or "").strip()}
        score.passed = not score.findings
        report.runs.append(score)
    if unchecked:
        report.warnings.append(
            f"{', '.join(sorted(unchecked))} not checked on a batch output (it has no conversation or trajectory): "
            "run the rows as scenarios with `agentmap eval run` for those"
        )
    summarize(report, list(trials))
    return report


def _value(cell: Any) -> Any:
    if isinstance(cell, str) and cell.strip().startswith(_JSON_START):
        try:
            return json.loads(cell)
        except ValueError:
            return cell
    return cell


def _false(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().lower() in ("false", "no", "0"))


def _check_syntax(condition: str, file: Path, row: int) -> None:
    try:
        parse_condition(condition)
    except ExpressionError as exc:
        raise ConfigError(
            f"{condition!r}: {exc}",
            code=ErrorCode.BAD_EXPRESSION,
            location=Location(file=str(file), row=row, column="expected_state"),
            hint="See csv_specs/evaluation.md, 'Checks on state and trajectory', for what a cell may hold.",
        ) from None
