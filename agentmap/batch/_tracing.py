"""Tracing a batch: the `agentmap.batch` span, each row's facts on its run span, and tracing options workers can use.

The batch room does not know OpenTelemetry (`observe` is its sibling): it asks the workflow's run hooks
(`RunHooks.batch_started`: a tracer answers, the others return None) and passes what it returns, plain run
metadata, to every row's run, in this process or in a worker process or Ray worker. The tracer turns that
metadata into span attributes and the parent of each row's `agentmap.run` span.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError, ErrorCode

if TYPE_CHECKING:
    from agentmap.batch.executors import Executor
    from agentmap.runtime.options import CompileOptions
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["ROW_ID_KEY", "ROW_KEY", "BatchSpan", "shippable_options"]

ROW_KEY = "agentmap.batch.row"
"""Run metadata (and span attribute): the row's 1-based number in the input."""
ROW_ID_KEY = "agentmap.batch.row_id"
"""Run metadata (and span attribute): the row's id (the `--id-column` value, else row number and hash)."""

_REMOTE = ("process", "ray")


def shippable_options(options: CompileOptions, executor: Executor) -> CompileOptions:
    """`compile` options with `tracing` in a form every worker can use on its own.

    A `file:` path becomes absolute (a Ray worker runs in a folder of its own); worker processes and Ray workers
    build their own exporter from the text, so a TracerProvider or `Tracing` object, or `True` (the provider
    installed in this process), cannot reach them and is refused.

    Raises:
        ConfigError: A tracing object given with the process or ray executor (exit 2).
    """
    value = options.tracing
    if value is None or value is False:
        return options
    if isinstance(value, str):
        shipped: Any = _absolute(value)
    elif isinstance(value, Mapping) and isinstance(value.get("exporter"), str | None):
        shipped = {**value, "exporter": _absolute(value["exporter"]) if value.get("exporter") else None}
    elif executor in _REMOTE:
        raise ConfigError(
            f"tracing={value!r} cannot reach the {executor} executor's workers: they are other processes and "
            "make their own exporter from the exporter's name",
            code=ErrorCode.USAGE,
            hint='pass the exporter as text (tracing="otlp", "console" or "file:spans.jsonl"), '
            'or use executor="thread"',
        )
    else:
        shipped = value
    return replace(options, tracing=shipped)


def _absolute(exporter: str) -> str:
    kind, sep, rest = exporter.strip().partition(":")
    if kind == "file" and sep and rest:
        return f"file:{os.path.abspath(os.path.expanduser(rest))}"
    return exporter


class BatchSpan:
    """The `agentmap.batch` span of one batch, when a run hook of the workflow makes one.

    Attributes:
        metadata: Run metadata for every row (its run span's parent); empty when nobody traces.
    """

    def __init__(self, app: CompiledWorkflow, source_name: str, executor: Executor, total: int, skipped: int) -> None:
        from agentmap.runtime.events import observers_for

        self.app = app
        self.metadata: dict[str, Any] = {}
        self._end: Callable[[Mapping[str, Any]], None] | None = None
        observers = observers_for(app)
        if not observers:
            return
        spec = app.spec
        attributes: dict[str, Any] = {
            "agentmap.graph": spec.name,
            "agentmap.batch.input": source_name,
            "agentmap.batch.executor": executor,
            "agentmap.batch.rows": total,
            "agentmap.batch.skipped": skipped,
        }
        if spec.file:
            attributes["agentmap.workflow.file"] = str(spec.file)
        for hooks in observers:
            started = hooks.batch_started(attributes)
            if started is not None:  # the first tracer's span is the rows' parent
                self.metadata, self._end = started
                break

    def finish(self, succeeded: int, failed: int, interrupted: bool) -> None:
        """End the span with the batch's counts and send the spans this process holds (workers send theirs
        with each chunk of rows)."""
        if self._end is not None:
            end, self._end = self._end, None
            end(
                {
                    "agentmap.batch.succeeded": succeeded,
                    "agentmap.batch.failed": failed,
                    "agentmap.batch.interrupted": interrupted,
                    "agentmap.success": not failed and not interrupted,
                }
            )
        self.app.flush()
