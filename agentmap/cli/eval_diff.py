"""`agentmap eval diff BASE_DIR NEW_DIR`: which scenarios got worse or better, and a CI gate on regressions.

Both folders are scored as `eval score` scores them; each scenario's pass^k is compared at the largest k both
have. Exit 1 when NEW regressed (a pass^k below BASE's 95% interval, per scenario or overall), 0 otherwise;
missing folders exit 3.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from agentmap.cli._common import cannot_write, ensure_writable
from agentmap.cli.render import dump_json, set_json_output
from agentmap.errors import ErrorCode, Location, WorkflowFileError

if TYPE_CHECKING:
    from agentmap._cli_api import EvalDiff

__all__ = ["check_logs_dir", "diff_folders"]


def check_logs_dir(logs_dir: Path) -> None:
    """Stop unless `logs_dir` is a folder holding conversation logs.

    Raises:
        WorkflowFileError: The folder does not exist, is a file, or holds no `*.log`.
    """
    if not logs_dir.is_dir():
        state = "is a file" if logs_dir.exists() else "does not exist"
        raise WorkflowFileError(
            f"the logs folder {state}",
            code=ErrorCode.FILE_NOT_FOUND,
            location=Location(file=str(logs_dir)),
            hint="pass the folder `agentmap eval run --out DIR` wrote",
        )
    if not any(p.is_file() for p in logs_dir.glob("*.log")):
        raise WorkflowFileError(
            "the logs folder holds no conversation logs (*.log)",
            code=ErrorCode.NO_LOGS,
            location=Location(file=str(logs_dir)),
            hint="run `agentmap eval run SCENARIOS.csv --out DIR` first, then score DIR",
        )


def diff_folders(
    base_dir: Path, new_dir: Path, *, junit: Path | None = None, html: Path | None = None, json_output: bool = False
) -> int:
    """The `eval diff` command: returns 1 when NEW regressed against BASE, else 0."""
    set_json_output(json_output)
    check_logs_dir(base_dir)
    check_logs_dir(new_dir)
    from agentmap._cli_api import diff_html, diff_reports, junit_xml, score_logs

    base, new = score_logs(base_dir), score_logs(new_dir)
    diff = diff_reports(base, new)
    code = 1 if diff.regressions else 0
    if junit is not None:
        ensure_writable(junit, "the JUnit report")
        try:
            junit.write_text(junit_xml(diff), encoding="utf-8")
        except OSError as exc:
            raise cannot_write(junit, "the JUnit report", exc) from None
    if html is not None:
        ensure_writable(html, "the HTML diff")
        try:
            html.write_text(diff_html(diff, base, new), encoding="utf-8")
        except OSError as exc:
            raise cannot_write(html, "the HTML diff", exc) from None
    _print(diff, code, junit, html, json_output)
    return code


def _print(diff: EvalDiff, code: int, junit: Path | None, html: Path | None, json_output: bool) -> None:
    if json_output:
        document = {**diff.to_dict(), "exit_code": code}
        if junit is not None:
            document["junit"] = str(junit)
        if html is not None:
            document["html"] = str(html)
        dump_json(document)
        return
    from agentmap._cli_api import describe

    lines = [f"BASE {diff.base_dir}  ->  NEW {diff.new_dir}"]
    changes = [*diff.scenarios, *([diff.overall] if diff.overall is not None else [])]
    for change in changes:
        lines.append(f"  {change.name}: {describe(change)}")
    worse = [c.name for c in diff.scenarios if c.status == "worse"]
    better = [c.name for c in diff.scenarios if c.status == "better"]
    lines.append(f"worse: {', '.join(worse) or 'none'}; better: {', '.join(better) or 'none'}")
    regressions = [c.name for c in diff.regressions]
    lines.append(f"regression in {', '.join(regressions)} (exit 1)" if regressions else "no regression (exit 0)")
    if junit is not None:
        lines.append(f"JUnit report written to {junit}")
    if html is not None:
        lines.append(f"HTML diff written to {html}")
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
