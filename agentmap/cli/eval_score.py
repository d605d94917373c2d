"""`agentmap eval score LOGS_DIR|RESULTS`: score a folder of conversation logs (or an `agentmap batch` output)
and print the result (`agentmap/cli/evaluation.py` registers the command): exit 0 when every run passes, 1 when
some fail. Also the file check `eval run` shares."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentmap.cli._common import cannot_write, ensure_writable, load
from agentmap.cli.eval_diff import check_logs_dir
from agentmap.cli.render import console, dump_json, set_json_output
from agentmap.errors import ConfigError, ErrorCode, Location, WorkflowFileError

if TYPE_CHECKING:
    from agentmap._cli_api import EvalReport

__all__ = ["SCENARIOS_HINT", "existing_file", "score_folder"]


def existing_file(path: Path, what: str, hint: str) -> None:
    if not path.is_file():
        state = "is a folder" if path.is_dir() else "does not exist"
        raise WorkflowFileError(
            f"the {what} {state}", code=ErrorCode.FILE_NOT_FOUND, location=Location(file=str(path)), hint=hint
        )


SCENARIOS_HINT = (
    "pass a .csv, .xlsx or .jsonl with columns scenario, turn, user_message (or goal) (see csv_specs/evaluation.md)"
)


def score_folder(
    logs_dir: Path,
    *,
    expectations: Path | None = None,
    json_output: bool = False,
    report: Path | None = None,
    judge: str | None = None,
    rubric: Path | None = None,
    judge_threshold: int | None = None,
    config: Path | None = None,
    debug: bool = False,
) -> int:
    """The `eval score` command: returns 0 when every run passes, 1 when some fail.

    Raises:
        ConfigError: `--rubric` or `--judge-threshold` without `--judge`, or a judge that cannot be built.
        WorkflowFileError: The logs folder or the expectations file does not exist, or the folder has no logs.
    """
    set_json_output(json_output)
    if judge is None and (rubric is not None or judge_threshold is not None):
        options = (("--rubric", rubric), ("--judge-threshold", judge_threshold))
        given = [name for name, value in options if value is not None]
        raise ConfigError(
            f"{' and '.join(given)} only appl{'y' if len(given) > 1 else 'ies'} to the LLM judge, which is off",
            code=ErrorCode.USAGE,
            hint="add --judge MODEL (e.g. --judge openai:gpt-4o-mini), or drop the option",
        )
    if logs_dir.is_file() and logs_dir.suffix.lower() in _BATCH_OUTPUTS:
        return _score_batch(logs_dir, expectations, judge, json_output, report)
    check_logs_dir(logs_dir)
    if expectations is not None:
        existing_file(expectations, "expectations file", SCENARIOS_HINT)
    scorer = None
    if judge is not None:
        settings = load(config, debug)
        from agentmap._cli_api import load_rubric, make_llm_judge

        criteria = load_rubric(rubric) if rubric is not None else None
        threshold = 3 if judge_threshold is None else judge_threshold
        scorer = make_llm_judge(judge, rubric=criteria, threshold=threshold, settings=settings.agent_settings())
    from agentmap._cli_api import score_logs

    result = score_logs(logs_dir, expectations=expectations, judge=scorer)
    code = 0 if result.passed == len(result.runs) else 1
    if report is not None:
        _write_report(result, report)
    _print_score(result, code, report, json_output)
    return code


_BATCH_OUTPUTS = (".csv", ".jsonl", ".ndjson", ".parquet", ".xlsx")


def _score_batch(
    table: Path, expectations: Path | None, judge: str | None, json_output: bool, report: Path | None
) -> int:
    """`eval score RESULTS.csv`: the rows of an `agentmap batch` output, scored by the same checks."""
    if expectations is not None or judge is not None:
        raise ConfigError(
            f"{'--expectations' if expectations is not None else '--judge'} does not apply to a batch output",
            code=ErrorCode.USAGE,
            hint="a batch output carries its expected columns in its rows; score a logs folder for these options",
        )
    from agentmap._cli_api import score_batch_output

    result = score_batch_output(table)
    code = 0 if result.passed == len(result.runs) else 1
    if report is not None:
        _write_report(result, report)
    _print_score(result, code, report, json_output)
    return code


def _write_report(result: EvalReport, path: Path) -> None:
    from agentmap._cli_api import report_html

    ensure_writable(path, "the HTML report")
    try:
        path.write_text(report_html(result), encoding="utf-8")
    except OSError as exc:
        raise cannot_write(path, "the HTML report", exc) from None


def _print_score(result: EvalReport, code: int, report: Path | None, json_output: bool) -> None:
    if json_output:
        document = {**result.to_dict(), "exit_code": code}
        if report is not None:
            document["report"] = str(report)
        dump_json(document)
        return
    from agentmap._cli_api import render_table

    out = console()
    render_table(result, console=out)
    verdict = "every run passed" if code == 0 else f"{len(result.runs) - result.passed} failed"
    out.print(f"{result.passed} of {len(result.runs)} runs passed ({verdict})", highlight=False, markup=False)
    if report is not None:
        out.print(f"HTML report written to {report}", highlight=False, markup=False)
