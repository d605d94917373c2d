"""What a command imports: validating a workflow needs no LangGraph (nor langchain-core, nor langsmith)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
FORBIDDEN = ("langgraph", "langchain_core", "langsmith")
PROBE = """
import sys
watched = set(sys.argv[1].split(","))
sys.argv = ["agentmap", *sys.argv[2:]]
from agentmap.cli import main
try:
    main()
finally:
    print("LOADED", sorted({m.split(".")[0] for m in sys.modules} & watched), file=sys.stderr)
"""


def loaded(*command: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(FORBIDDEN), *command], cwd=ROOT, capture_output=True, text=True
    )
    assert "LOADED" in done.stderr, done.stderr
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_agentmap_validate_imports_no_langgraph() -> None:
    assert loaded("validate", "graphs/hello_world.csv") == "LOADED []"
    assert loaded("validate", "graphs/branching.csv") == "LOADED []"


@pytest.mark.slow
def test_the_probe_sees_what_compiling_imports() -> None:
    assert "langgraph" in loaded("export", "graphs/hello_world.csv", "--format", "mermaid")
