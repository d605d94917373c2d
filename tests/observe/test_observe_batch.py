"""`agentmap batch --trace` and `agentmap.batch(..., tracing=...)`: one `agentmap.run` span per row under one
`agentmap.batch` span, on threads, an event loop and worker processes."""

from __future__ import annotations

import csv
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_observe_cli
from timing import scaled

import agentmap
from agentmap.cli import main
from agentmap.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "graphs"
NAMES = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald"]
collector = test_observe_cli.collector  # a real OTLP/HTTP receiver on 127.0.0.1


@pytest.fixture(autouse=True)
def _restore_process_state() -> Iterator[None]:
    """`agentmap batch` quiets the agentmap logger and sets the SIGINT handler, as a command may."""
    logger = logging.getLogger("agentmap")
    level, handler = logger.level, signal.getsignal(signal.SIGINT)
    yield
    logger.setLevel(level)
    signal.signal(signal.SIGINT, handler)


@pytest.fixture
def names(tmp_path: Path) -> Path:
    table = tmp_path / "names.csv"
    table.write_text("name\n" + "\n".join(NAMES) + "\n", encoding="utf-8")
    return table


def spans_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def check_batch_tree(spans: list[dict[str, Any]], rows: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One batch span, and one run span per row beneath it in the same trace, each with its row number."""
    (batch,) = [s for s in spans if s["name"].startswith("agentmap.batch ")]
    runs = [s for s in spans if s["name"].startswith("agentmap.run ")]
    runs.sort(key=lambda s: s["attributes"]["agentmap.batch.row"])
    assert [r["attributes"]["agentmap.batch.row"] for r in runs] == list(range(1, rows + 1))
    assert all(r["parentSpanId"] == batch["spanId"] and r["traceId"] == batch["traceId"] for r in runs)
    return batch, runs


def test_batch_trace_file_has_a_run_span_per_row_under_the_batch_span(
    tmp_path: Path, names: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spans, out = tmp_path / "spans.jsonl", tmp_path / "out.csv"
    args = ["batch", str(GRAPHS / "hello_world.csv"), "-i", str(names), "-o", str(out), "--trace", f"file:{spans}"]
    assert main(args) == 0, capsys.readouterr().err
    batch, runs = check_batch_tree(spans_of(spans), len(NAMES))
    with out.open(encoding="utf-8", newline="") as handle:
        ids = [row["row_id"] for row in csv.DictReader(handle)]
    assert [r["attributes"]["agentmap.batch.row_id"] for r in runs] == ids  # the output's row_id column
    assert batch["attributes"]["agentmap.batch.rows"] == len(NAMES)
    assert batch["attributes"]["agentmap.batch.succeeded"] == len(NAMES) and batch["status"]["code"] == "UNSET"
    text = spans.read_text(encoding="utf-8")
    assert "Grace" not in text and "agentmap.node.inputs" not in text  # no state values without --trace-content


def test_the_failing_row_is_marked_and_the_config_file_turns_tracing_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spans = tmp_path / "spans.jsonl"
    config = tmp_path / "agentmap.yaml"
    config.write_text(f"tracing:\n  exporter: file:{spans}\n", encoding="utf-8")
    example, refunds = GRAPHS / "batch_example.csv", GRAPHS / "data" / "refunds.csv"
    args = ["batch", str(example), "-i", str(refunds), "-o", str(tmp_path / "out.csv"), "--id-column", "ticket_id"]
    assert main([*args, "--config", str(config), "--trace-content", "--executor", "async"]) == 1
    assert "1 row failed" in capsys.readouterr().err
    batch, runs = check_batch_tree(spans_of(spans), 5)
    failed = runs[3]["attributes"]
    assert failed["agentmap.batch.row_id"] == "T-104" and failed["agentmap.success"] is False
    assert runs[3]["status"]["code"] == "ERROR" and "could not convert" in runs[3]["status"]["message"]
    assert batch["attributes"]["agentmap.batch.failed"] == 1 and batch["status"]["message"] == "1 row failed"
    assert json.loads(runs[0]["attributes"]["agentmap.run.input"])["customer"] == "Ada"  # --trace-content


def test_python_batch_takes_tracing(tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    rows = [{"name": n} for n in NAMES[:3]]
    result = agentmap.batch(GRAPHS / "hello_world.csv", rows, tracing=f"file:{spans}", concurrency=2)
    assert result.success
    _, runs = check_batch_tree(spans_of(spans), 3)
    assert {r["attributes"]["agentmap.batch.row_id"] for r in runs} == {r.id for r in result.rows}


def test_tracing_objects_cannot_reach_worker_processes() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    for value in (True, TracerProvider()):
        with pytest.raises(ConfigError) as caught:
            agentmap.batch(GRAPHS / "hello_world.csv", [{"name": "Ada"}], executor="process", tracing=value)
        assert caught.value.code == "usage" and "cannot reach the process executor's workers" in str(caught.value)
        assert 'tracing="otlp"' in (caught.value.hint or "")


@pytest.mark.slow
def test_process_workers_write_every_rows_spans_to_one_file(
    tmp_path: Path, names: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative trace file: the workers write where the command was started
    args = ["batch", str(GRAPHS / "hello_world.csv"), "-i", str(names), "-o", "out.csv", "--trace", "file:spans.jsonl"]
    assert main([*args, "--executor", "process", "--workers", "2", "--chunk-size", "2"]) == 0, capsys.readouterr().err
    spans = spans_of(tmp_path / "spans.jsonl")  # every line is whole JSON: the processes' lines never mix
    batch, runs = check_batch_tree(spans, len(NAMES))
    assert batch["attributes"]["agentmap.batch.executor"] == "process"
    nodes = [s for s in spans if s["name"].startswith("agentmap.node ")]
    assert len(nodes) == 2 * len(NAMES) and {n["parentSpanId"] for n in nodes} == {r["spanId"] for r in runs}


def test_bad_trace_options_stop_batch_and_serve_before_they_start(
    tmp_path: Path, names: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hello = str(GRAPHS / "hello_world.csv")
    assert main(["batch", hello, "-i", str(names), "-o", str(tmp_path / "o.csv"), "--trace", "zipkin"]) == 2
    assert "--trace 'zipkin' is not a trace exporter" in capsys.readouterr().err
    assert main(["serve", hello, "--trace", "jaeger"]) == 2
    assert "--trace 'jaeger' is not a trace exporter" in capsys.readouterr().err
    missing = f"file:{tmp_path / 'nowhere' / 'spans.jsonl'}"
    args = ["batch", hello, "-i", str(names), "-o", str(tmp_path / "o.csv"), "--trace", missing, "-e", "process"]
    assert main(args) == 2 and "folder" in capsys.readouterr().err  # refused before any worker starts
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.slow
def test_process_workers_send_every_rows_spans_over_otlp(
    collector: tuple[str, list[bytes]], tmp_path: Path, names: Path
) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    endpoint, received = collector
    command = [sys.executable, "-m", "agentmap", "batch", str(GRAPHS / "hello_world.csv"), "-i", str(names)]
    command += ["-o", str(tmp_path / "out.csv"), "--trace", "otlp", "-e", "process", "--workers", "2"]
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    done = subprocess.run([*command, "--chunk-size", "2"], env=env, capture_output=True, text=True, timeout=scaled(120))
    assert done.returncode == 0, done.stderr
    rows: list[int] = []
    for body in received:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    if span.name == "agentmap.run HelloWorld":
                        rows += [a.value.int_value for a in span.attributes if a.key == "agentmap.batch.row"]
    assert sorted(rows) == list(range(1, len(NAMES) + 1))
