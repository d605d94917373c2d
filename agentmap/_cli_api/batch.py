"""batch: the tables read and written, the executors and their worker processes, the rows a stopped batch keeps;
and the spans a tracer still holds, sent before batch and serve end."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentmap.batch.executors import Executor
    from agentmap.batch.status import BatchStatus

__all__ = [
    "batch_status",
    "executor_named",
    "flush_traces",
    "partial_path",
    "status_command",
    "stop_worker_processes",
    "table_format",
]


def table_format(path: Path, what: str) -> str:
    """batch: the format of an input or output table from its suffix, or the error naming the ones read."""
    from agentmap.batch.tables import table_format

    return table_format(path, what)


def executor_named(name: str) -> Executor:
    """batch --executor: the executor of that name, or the error listing them."""
    from agentmap.batch.executors import executor_named

    return executor_named(name)


def partial_path(output: Path) -> Path:
    """batch: where a stopped batch keeps the rows it finished, for `--resume`."""
    from agentmap.batch.resume import partial_path

    return partial_path(output)


def batch_status(output: Path, checkpoint: str | None, *, live: bool = False) -> BatchStatus:
    """batch status: where the batch writing `output` stands (rows, provider jobs, calls, cost)."""
    from agentmap.batch.status import batch_status

    return batch_status(output, checkpoint, live=live)


def status_command(output: Path, checkpoint: str | None) -> str:
    """batch: the `agentmap batch status OUTPUT` command that shows where this batch stands."""
    from agentmap.batch.status import status_command

    return status_command(output, checkpoint)


def stop_worker_processes(timeout: float = 5.0) -> None:
    """batch: no worker process outlives the command (bounded wait)."""
    from agentmap.batch.executors import stop_worker_processes

    stop_worker_processes(timeout)


def flush_traces() -> None:
    """batch, serve: the spans a tracer still holds go out before the command ends (also on Ctrl-C)."""
    from agentmap.observe.tracing import flush_traces

    flush_traces()
