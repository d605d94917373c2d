"""What the command imports: nothing heavy for --version and --help, no LLM stack for a deterministic run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import ROOT
from timing import scaled

_FORBIDDEN_IN_RUN = (
    "pandas",
    "fastapi",
    "starlette",
    "uvicorn",
    "openai",
    "anthropic",
    "google.genai",
    "google.generativeai",
    "ollama",
    "langchain_openai",
    "langchain_anthropic",
    "langchain_google_genai",
    "langchain_ollama",
    "mcp",
    "langchain_mcp_adapters",
    "agentmap.llm",
    "agentmap.orchestration",
    "agentmap.agents.journal",  # the call journal records model and tool calls: none in these workflows
    "agentmap.runtime.checkpoint",  # savers: a run without --thread saves nothing, and no node uses the store
    "sqlite3",
)

_PROBE = """
import json, sys
from agentmap.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def _modules(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    report = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", _PROBE, str(report), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    data = json.loads(report.read_text())
    return data["code"], set(data["modules"])


def _loaded(modules: set[str], package: str) -> bool:
    return package in modules or any(m.startswith(package + ".") for m in modules)


@pytest.mark.slow
@pytest.mark.parametrize(
    "target", ["graphs/hello_world.csv", "graphs/parallel.csv", "graphs/subgraph.csv::Main", "graphs/custom_router.csv"]
)
def test_deterministic_run_imports_no_llm_stack(tmp_path: Path, target: str) -> None:
    code, modules = _modules(tmp_path, "run", target, "--json")
    assert code == 0
    assert "langgraph.graph" in modules  # the probe really ran the workflow
    assert not [p for p in _FORBIDDEN_IN_RUN if _loaded(modules, p)]
    assert "agentmap.cli.run" in modules and "agentmap.cli.batch" not in modules  # only the invoked command's module


@pytest.mark.slow
def test_version_imports_nothing_heavy(tmp_path: Path) -> None:
    code, modules = _modules(tmp_path, "--version")
    assert code == 0
    assert not [p for p in ("typer", "rich", "pydantic", "langgraph", "langchain_core") if _loaded(modules, p)]


@pytest.mark.slow
def test_help_imports_no_runtime(tmp_path: Path) -> None:
    code, modules = _modules(tmp_path, "--help")
    assert code == 0 and "typer" in modules
    assert not [
        p
        for p in (
            "langgraph",
            "langchain_core",
            "pydantic_settings",
            "agentmap.runtime",
            "agentmap.spec",
            "rich.live",
            "rich.table",
        )
        if _loaded(modules, p)
    ]
