"""Where `--trace otlp|console|file:PATH` sends spans: one TracerProvider per exporter for the process."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from agentmap.errors import ConfigError, ErrorCode

__all__ = ["HINT", "flush_providers", "provider_for"]

HINT = "use --trace otlp, --trace console or --trace file:spans.jsonl (tracing: in agentmap.yaml takes the same)"


class _JsonLinesExporter(SpanExporter):
    """Appends one JSON object per finished span, one per line, to a file.

    Several processes may write the same file (a batch's worker processes, a server and a command): the file is
    opened with O_APPEND and each export goes out in one `write` of whole lines, so lines never interleave.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        data = memoryview("".join(_line(span) for span in spans).encode("utf-8"))
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _CLOEXEC, 0o644)
            while data:  # a regular file takes it whole; the loop is for a short write (a full disk says so)
                data = data[os.write(self._fd, data) :]
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _line(span: ReadableSpan) -> str:
    """One span as a compact JSON line, with OTLP/JSON's field names (ids in hex, times in Unix nanoseconds)."""
    context = span.context
    parent = span.parent
    data: dict[str, Any] = {
        "name": span.name,
        "traceId": f"{context.trace_id:032x}" if context else None,
        "spanId": f"{context.span_id:016x}" if context else None,
        "parentSpanId": f"{parent.span_id:016x}" if parent else None,
        "kind": span.kind.name,
        "startTimeUnixNano": span.start_time,
        "endTimeUnixNano": span.end_time,
        "status": {"code": span.status.status_code.name, "message": span.status.description},
        "attributes": dict(span.attributes or {}),
    }
    if span.events:
        data["events"] = [
            {"name": e.name, "timeUnixNano": e.timestamp, "attributes": dict(e.attributes or {})} for e in span.events
        ]
    if span.links:
        data["links"] = [
            {"traceId": f"{link.context.trace_id:032x}", "spanId": f"{link.context.span_id:016x}"}
            for link in span.links
        ]
    return json.dumps(data, ensure_ascii=False, default=str) + "\n"


_PROVIDERS: dict[str, TracerProvider] = {}
_PROVIDERS_LOCK = threading.Lock()


def provider_for(exporter: str) -> TracerProvider:
    """One provider per exporter spec for the whole process (runs of every workflow share it)."""
    with _PROVIDERS_LOCK:
        found = _PROVIDERS.get(exporter)
        if found is not None:
            return found
        provider = TracerProvider(resource=Resource.create({"service.name": "agentmap"}))
        kind, _, rest = exporter.partition(":")
        if kind == "console":
            provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        elif kind == "file":
            path = Path(rest).expanduser()
            if not rest or (path.parent != Path() and not path.parent.is_dir()):
                raise ConfigError(
                    f"the trace file {rest or '(none given)'!r} cannot be written: "
                    + ("no file named" if not rest else f"folder {path.parent} does not exist"),
                    code=ErrorCode.BAD_CONFIG,
                    hint="name a file in an existing folder: --trace file:spans.jsonl",
                )
            # Written in batches off the run's thread; `Tracing.flush()` (the CLI's end) and exit write the rest.
            provider.add_span_processor(BatchSpanProcessor(_JsonLinesExporter(path)))
        elif kind == "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            except ImportError:
                raise ConfigError(
                    "--trace otlp needs the OTLP exporter, which is not installed",
                    code=ErrorCode.BAD_CONFIG,
                    hint='pip install "agentmap[otel]"',
                ) from None
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_* variables
        else:
            raise ConfigError(f"unknown trace exporter {exporter!r}", code=ErrorCode.BAD_CONFIG, hint=HINT)
        _PROVIDERS[exporter] = provider
        return provider


def flush_providers() -> None:
    """Send the spans every exporter of this process still holds (the end of a command, a worker's chunk)."""
    with _PROVIDERS_LOCK:
        providers = list(_PROVIDERS.values())
    for provider in providers:
        provider.force_flush()
