"""The examples run as shipped: the embedding script (as a process) and the notebook's code cells, in order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from timing import scaled

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.mark.slow
def test_embed_in_langgraph_script(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "embed_in_langgraph.py"), "grace", "porto"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:4]] == [
        "finished tidy",
        "finished hello",
        "finished briefing",
        "finished card",
    ]
    assert "Hello, Grace!" in lines and "Weather in Porto: sunny" in done.stdout
    assert "Traceback" not in done.stderr


def _code_cells() -> list[str]:
    notebook = json.loads((EXAMPLES / "notebook.ipynb").read_text(encoding="utf-8"))
    assert notebook["nbformat"] == 4
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_notebook_outputs_are_empty() -> None:
    notebook = json.loads((EXAMPLES / "notebook.ipynb").read_text(encoding="utf-8"))
    assert all(not cell.get("outputs") for cell in notebook["cells"] if cell["cell_type"] == "code")


@pytest.mark.parametrize("folder", [EXAMPLES, ROOT], ids=["from-examples", "from-root"])
def test_notebook_cells_run_in_order(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(folder)
    namespace: dict[str, Any] = {"__name__": "__notebook__"}
    for source in _code_cells():
        exec(compile(source, "notebook.ipynb", "exec"), namespace)
    printed = capsys.readouterr().out
    assert namespace["workflow"].graph_names == ["Briefing"]
    bundle = namespace["app"]._repr_mimebundle_()
    assert "Start --> Weather" in bundle["text/vnd.mermaid"] and "<svg" in bundle["image/svg+xml"]
    assert namespace["result"].success is True
    assert "Weather in Lisbon: sunny" in printed
    table = namespace["table"]
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    assert rows[0]["name"] == "Start" and len(rows) == 5
    assert all(row["success"] for row in rows)
