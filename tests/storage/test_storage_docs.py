"""The examples of csv_specs/storage.md and csv_specs/human.md run as the pages say."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command
from typer.testing import CliRunner

import agentmap
from agentmap.cli.app import build_app

SPECS = Path(__file__).resolve().parents[2] / "csv_specs"


def _block(page: str, lang: str, index: int = 0) -> str:
    blocks: list[str] = re.findall(rf"```{lang}\n(.*?)```", (SPECS / page).read_text(encoding="utf-8"), re.S)
    return blocks[index]


def test_the_storage_example_appends_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "goals.csv"
    path.write_text(_block("storage.md", "csv"), encoding="utf-8")
    assert [i for i in agentmap.validate(path) if i.code != "unset-input"] == []
    agentmap.run(path, {"goal": "learn Go", "owner": "Bo"})
    result = agentmap.run(path, {"goal": "run 10k", "owner": "Ada"})
    assert result.state["goals"][-1] == {"goal": "run 10k", "owner": "Ada"} and len(result.state["goals"]) == 2
    assert (tmp_path / "data" / "goals.csv").read_text(encoding="utf-8").endswith("run 10k,Ada\n")


def test_the_storage_config_example_means_what_it_says(tmp_path: Path) -> None:
    from agentmap.agents.base import AgentEnvironment
    from agentmap.config import load_settings
    from agentmap.storage._paths import locate

    (tmp_path / "agentmap.yaml").write_text(_block("storage.md", "yaml"), encoding="utf-8")
    env = AgentEnvironment(base_dir=tmp_path / "flows", settings=load_settings(cwd=tmp_path).agent_settings())
    assert locate("csv", "users", env).path == tmp_path / "store" / "csv" / "users.csv"
    assert locate("json", "doc", env).path == tmp_path / "store" / "json" / "doc.json"
    assert locate("file", "/srv/files/a.txt", env).path == Path("/srv/files/a.txt").resolve()


def test_the_human_example_pauses_and_resumes_through_the_cli_and_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "publish.csv"
    path.write_text(_block("human.md", "csv"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner, app = CliRunner(), build_app()
    base = ["run", "publish.csv", "--json", "--checkpoint", "runs.db", "--thread", "t1"]
    paused = json.loads(runner.invoke(app, [*base, "--state", '{"draft": "Q3 notes"}']).stdout)
    assert paused["interrupts"][0]["question"] == "Publish this draft? Q3 notes"
    done = json.loads(runner.invoke(app, [*base, "--resume", '"yes"']).stdout)
    assert done["state"]["message"] == "Approved: True"

    compiled = agentmap.compile(path, checkpointer="memory")
    config: Any = {"configurable": {"thread_id": "t1"}}
    first = compiled.invoke({"draft": "Q3 notes"}, config)
    assert first.interrupts[0].value["question"] == "Publish this draft? Q3 notes"
    assert compiled.invoke(Command(resume="yes"), config).state["approved"] is True
