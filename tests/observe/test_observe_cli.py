"""`agentmap run --trace/--draw` and `agentmap export --format svg|png|dot` through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from timing import scaled

from agentmap.cli.app import run_cli

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "graphs"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run the command in-process: exit code, stdout, stderr."""

    def invoke(*args: str | Path) -> tuple[int, str, str]:
        capsys.readouterr()
        code = run_cli([str(a) for a in args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


def test_trace_to_a_file_writes_one_json_span_per_line(
    cli: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    spans = tmp_path / "spans.jsonl"
    code, out, _ = cli("run", GRAPHS / "parallel.csv", "--trace", f"file:{spans}", "--json")
    assert code == 0 and json.loads(out)["success"] is True
    lines = [json.loads(line) for line in spans.read_text(encoding="utf-8").splitlines()]
    run = next(s for s in lines if s["name"] == "agentmap.run Briefing")
    nodes = [s for s in lines if s["name"].startswith("agentmap.node ")]
    assert len(nodes) == 5 and all(s["parentSpanId"] == run["spanId"] for s in nodes)
    assert "agentmap.node.inputs" not in nodes[0]["attributes"]


def test_trace_content_and_the_config_file(cli: Callable[..., tuple[int, str, str]], tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    config = tmp_path / "agentmap.yaml"
    config.write_text(f"tracing:\n  exporter: file:{spans}\n", encoding="utf-8")
    code, _, _ = cli("run", GRAPHS / "hello_world.csv", "--config", config, "--trace-content", "--json")
    assert code == 0
    greet = next(json.loads(x) for x in spans.read_text(encoding="utf-8").splitlines() if "Greet" in x)
    assert json.loads(greet["attributes"]["agentmap.node.inputs"]) == {"name": "World"}  # from hello_world.state.json


def test_bad_trace_options_are_usage_errors(cli: Callable[..., tuple[int, str, str]], tmp_path: Path) -> None:
    code, out, _ = cli("run", GRAPHS / "hello_world.csv", "--trace", "zipkin", "--json")
    assert code == 2 and "not a trace exporter" in out
    config = tmp_path / "agentmap.yaml"
    config.write_text("tracing:\n  exporter: jaeger\n", encoding="utf-8")
    code, out, _ = cli("run", GRAPHS / "hello_world.csv", "--config", config, "--json")
    assert code == 2 and "unknown trace exporter 'jaeger'" in out
    code, out, _ = cli("run", GRAPHS / "hello_world.csv", "--trace", f"file:{tmp_path}/no/such/spans.jsonl", "--json")
    assert code == 2 and "does not exist" in out


def test_draw_the_path_of_a_run(cli: Callable[..., tuple[int, str, str]], tmp_path: Path) -> None:
    picture = tmp_path / "run.svg"
    code, _, err = cli("run", GRAPHS / "llm_offline.csv", "--draw", picture, "--json")
    assert code == 0 and f"wrote {picture}" in err
    svg = picture.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and 'class="node taken" data-node="Assistant"' in svg
    assert 'class="node skipped" data-node="Explain"' in svg and " ms</text>" in svg
    png = tmp_path / "run.png"
    assert cli("run", GRAPHS / "parallel.csv", "--draw", png, "--json")[0] == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, out, _ = cli("run", GRAPHS / "parallel.csv", "--draw", tmp_path / "run.gif", "--json")
    assert code == 2 and ".svg or .png" in out


@pytest.mark.parametrize(("fmt", "start"), [("svg", b"<svg"), ("png", b"\x89PNG"), ("dot", b"digraph")])
def test_export_pictures(cli: Callable[..., tuple[int, str, str]], tmp_path: Path, fmt: str, start: bytes) -> None:
    target = tmp_path / f"graph.{fmt}"
    code, _, _ = cli("export", GRAPHS / "branching.csv", "--format", fmt, "-o", target)
    assert code == 0 and target.read_bytes().startswith(start)


def test_export_png_needs_a_file(cli: Callable[..., tuple[int, str, str]]) -> None:
    code, out, err = cli("export", GRAPHS / "branching.csv", "--format", "png")
    assert code == 2 and "-o graph.png" in out + err


def test_export_svg_to_stdout_names_every_node(cli: Callable[..., tuple[int, str, str]]) -> None:
    code, out, _ = cli("export", GRAPHS / "branching.csv", "--format", "svg")
    assert code == 0 and all(f'data-node="{n}"' in out for n in ("Check", "Approve", "Reject", "Report"))
    assert ">ok</text>" in out and ">fail</text>" in out


class _Collector(BaseHTTPRequestHandler):
    received: list[bytes] = []  # noqa: RUF012 (one test server at a time)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(body if self.path == "/v1/traces" else b"")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[bytes]]]:
    _Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Collector.received
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_otlp_spans_of_a_cli_run_reach_a_collector(collector: tuple[str, list[bytes]]) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    endpoint, received = collector
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "agentmap-test"}
    done = subprocess.run(
        [sys.executable, "-m", "agentmap", "run", str(GRAPHS / "subgraph.csv::Main"), "--trace", "otlp", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert done.returncode == 0, done.stderr
    names: list[str] = []
    parents: dict[bytes, bytes] = {}
    ids: dict[str, bytes] = {}
    for body in received:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                assert scope.scope.name == "agentmap"
                for span in scope.spans:
                    names.append(span.name)
                    parents[span.span_id] = span.parent_span_id
                    ids[span.name] = span.span_id
    assert "agentmap.run Main" in names and "agentmap.run Frame" in names and names.count("agentmap.node Greet") == 2
    assert parents[ids["agentmap.run Frame"]] == ids["agentmap.node Decorate"]


@pytest.mark.slow
def test_a_run_without_tracing_or_pictures_imports_neither() -> None:
    code = (
        "import sys, agentmap; agentmap.run('graphs/hello_world.csv', {'name': 'Ada'}); "
        "print(sorted(m for m in sys.modules if m.startswith(('agentmap.observe', 'grandalf', 'resvg_py'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=scaled(120))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
