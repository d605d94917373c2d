"""With tracing off, `agentmap batch` and `agentmap serve` load none of AgentMap's tracing, as `agentmap run` does not.

(langsmith, which LangGraph loads, imports `opentelemetry.sdk` on its own when it is installed; what tracing adds
is AgentMap's observe modules, the exporters and their threads, and that is what must stay out.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
if sys.argv[1] == "serve":  # compile and build the application, then return instead of listening
    import uvicorn
    uvicorn.Server.run = lambda self, sockets=None: None
sys.argv = ["agentmap", *sys.argv[1:]]
from agentmap.cli import main
try:
    main()
finally:
    watched = ("agentmap.observe", "opentelemetry.exporter")
    print("LOADED", sorted(m for m in sys.modules if m.startswith(watched)), file=sys.stderr)
"""


def loaded(*command: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, *command], cwd=cwd, capture_output=True, text=True)
    assert "LOADED" in done.stderr, done.stderr
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_batch_and_serve_without_tracing_load_no_tracing(tmp_path: Path) -> None:
    hello = str(ROOT / "graphs" / "hello_world.csv")
    (tmp_path / "rows.csv").write_text("name\nAda\n", encoding="utf-8")
    assert loaded("batch", hello, "-i", "rows.csv", "-o", "out.csv", cwd=tmp_path) == "LOADED []"
    assert loaded("serve", hello, "--checkpoint", "memory", cwd=tmp_path) == "LOADED []"
    traced = loaded("batch", hello, "-i", "rows.csv", "-o", "out2.csv", "--trace", "file:s.jsonl", cwd=tmp_path)
    assert "agentmap.observe.tracing" in traced  # the probe sees tracing when it is on
