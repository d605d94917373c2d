"""Every workflow of `tests/compat/dialect/`, written in the AgentMap 0.9 style, runs end to end unchanged.

Each folder holds the old files (CSV, `custom_agents/`, `functions/`, prompts, `agentmap_config.yaml`) and a
`case.json`: `run` (`target`, optional `state`), `stdin` piped to input nodes, the `exit_code` of
`agentmap run`, the `expect`ed subset of the final state, and the warning codes `validate` must report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from compat_helpers import cli

CORPUS = Path(__file__).parent / "dialect"
CASES = sorted(p for p in CORPUS.iterdir() if (p / "case.json").is_file())


def test_the_corpus_is_complete() -> None:
    assert len(CASES) >= 18


@pytest.mark.parametrize("folder", CASES, ids=[p.name for p in CASES])
def test_old_workflow_runs_unchanged(folder: Path) -> None:
    case: dict[str, Any] = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    target = case["run"]["target"]
    checked = cli("validate", target, cwd=folder)
    assert checked.code == 0, checked.text
    found = {line.split("warning[", 1)[1].split("]", 1)[0] for line in checked.out.splitlines() if "warning[" in line}
    assert set(case["warnings"]) <= found, checked.out

    args = ["run", target, "--json", "--state", json.dumps(case["run"].get("state", {}))]
    result = cli(*args, stdin=case.get("stdin"), cwd=folder)
    assert "Traceback" not in result.text
    assert result.code == case["exit_code"], result.text
    state = result.json()["state"]
    for key, value in case["expect"].items():
        assert state.get(key) == value, (key, state)
