"""What `agentmap batch` says once the batch ends, however it ends: the summary on stderr (and on stdout with
`--json`), the revisions its rows ran, the rows still waiting for provider batch jobs, the rows that failed, and
what Ctrl-C kept."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap import BatchResult

__all__ = ["report", "report_failed", "report_interrupted", "report_waiting"]


def report(result: BatchResult, json_mode: bool, extra: dict[str, Any]) -> None:
    """The batch's summary: `extra` and `result.summary()` as JSON on stdout in `json_mode`, and the lines on stderr
    (rows, revisions, tokens and cost)."""
    summary = {**extra, **result.summary()}
    if json_mode:
        from agentmap.cli.render import dump_json

        dump_json(summary)
    ran = result.successes + result.failures
    skipped = f", {result.skipped} skipped (done before)" if result.skipped else ""
    waiting = result.llm is not None and result.llm.waiting_rows > 0  # --detach: the table is written once they end
    stopped = result.interrupted or result.over_budget or waiting
    where = f" -> {result.output}" if result.output and not stopped else ""
    sys.stderr.write(
        f"batch: {ran} rows ran: {result.successes} succeeded, {result.failures} failed{skipped} "
        f"in {result.duration_s:.1f}s{where}\n"
    )
    _report_revisions(result)
    if result.tokens_in or result.tokens_out:
        from agentmap.cli.render import money

        cost = f", cost {money(result.cost)}" if result.cost is not None else ""
        cached = f" ({result.tokens_cached} cached)" if result.tokens_cached else ""
        sys.stderr.write(f"batch: tokens {result.tokens_in} in{cached}, {result.tokens_out} out{cost}\n")


def _report_revisions(result: BatchResult) -> None:
    """Which revision the rows ran, once the file was edited since some of them started."""
    now = (result.revision or "")[:12]
    if result.earlier:
        continued = sum(result.earlier.values())
        each = ", ".join(f"{revision[:12]}: {n}" for revision, n in result.earlier.items())
        sys.stderr.write(
            f"batch: {continued} unfinished row{'s' if continued != 1 else ''} went on at the revision they started "
            f"on ({each}); the others ran the file as it is now (revision {now}); --latest moves them to it\n"
        )
    if result.moved:
        sys.stderr.write(
            f"batch: {result.moved} unfinished row{'s' if result.moved != 1 else ''} moved to the file as it is now "
            f"(revision {now}) before going on (--latest)\n"
        )


def report_waiting(result: BatchResult, output: Path, checkpoint: str | None) -> None:
    """With `--llm-batch`: the rows still waiting for provider jobs, how to collect them and how to look."""
    if result.llm is None or not result.llm.waiting_rows:
        return
    from agentmap._cli_api import status_command

    held = f" ({result.llm.held} calls held by --budget: a higher one places them)" if result.llm.held else ""
    sys.stderr.write(
        f"llm-batch: {result.llm.waiting_rows} rows wait for provider batch jobs{held}; collect them with the same "
        f"command (without --detach); to look: {status_command(output, checkpoint)}\n"
    )


def report_failed(result: BatchResult, output: Path) -> None:
    """The rows that failed, in this run or an earlier one, where their errors are and how to rerun them."""
    failed = result.failures + result.failed_before
    if failed:
        earlier = f", {result.failed_before} of them in an earlier run" if result.failed_before else ""
        sys.stderr.write(
            f"batch: {failed} row{'s' if failed != 1 else ''} failed{earlier} (see the error column of {output}); "
            "rerun them with --redo-failed\n"
        )


def report_interrupted(result: BatchResult, output: Path, json_mode: bool, extra: dict[str, Any]) -> None:
    """Ctrl-C stopped the batch: what it kept, where, how to continue, then the summary (`report`)."""
    from agentmap._cli_api import partial_path

    done = result.successes + result.failures
    sys.stderr.write(
        f"interrupted: Ctrl-C stopped the batch; {done} rows finished in this run are kept in "
        f"{partial_path(output)}\n  run the same command again to continue where it stopped\n"
    )
    report(result, json_mode, extra)
