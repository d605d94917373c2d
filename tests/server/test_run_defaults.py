"""What a served run gets when its request leaves something out: the graph's own recursion limit, and an input no
node writes asked for (422 naming it). In process (no socket)."""

from __future__ import annotations

from pathlib import Path

import pytest
from server_helpers import GRAPHS

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from agentmap.server import ServeConfig, create_app


def test_a_served_loop_without_an_exit_stops_at_the_graphs_own_limit(tmp_path: Path) -> None:
    loop = tmp_path / "loop.csv"
    loop.write_text("GraphName,Node,AgentType,Edge\nLoop,A,echo,B\nLoop,B,echo,C\nLoop,C,echo,A\n", encoding="utf-8")
    with TestClient(create_app(ServeConfig(targets=(str(loop),), checkpoint="memory"))) as api:
        error = api.post("/runs/wait", json={"assistant_id": "Loop", "input": {}}).json()["__error__"]
        # ten steps per node, at least 50 (csv_specs/cli.md), not LangGraph's 10,007
        assert error["code"] == "recursion-limit" and "recursion limit (50 steps)" in error["message"]
        assert '{"recursion_limit": 200} in Python or in a served run' in error["message"]
        given = {"assistant_id": "Loop", "input": {}, "config": {"recursion_limit": 4}}
        assert "recursion limit (4 steps)" in api.post("/runs/wait", json=given).json()["__error__"]["message"]


def test_a_served_run_without_an_input_no_node_writes_is_refused_naming_it() -> None:
    config = ServeConfig(targets=(str(GRAPHS / "hello_world.csv"),), checkpoint="memory")
    with TestClient(create_app(config)) as api:
        refused = api.post("/runs/wait", json={"assistant_id": "HelloWorld", "input": {}})
        assert refused.status_code == 422 and refused.json()["code"] == "missing-state"
        assert "no 'name', read by node 'Greet'" in refused.json()["message"]
        ran = api.post("/runs/wait", json={"assistant_id": "HelloWorld", "input": {"name": "Ada"}})
        assert ran.status_code == 200 and ran.json()["greeting"] == "Hello, Ada!"
    lenient = ServeConfig(targets=config.targets, checkpoint="memory", missing_inputs="warn")
    with TestClient(create_app(lenient)) as api:
        ran = api.post("/runs/wait", json={"assistant_id": "HelloWorld", "input": {}})
        assert ran.status_code == 200 and ran.json()["greeting"] == "Hello, None!"
