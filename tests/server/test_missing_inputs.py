"""A run whose input lacks a key the nodes read: 422 naming it (the default), or with `--missing-inputs warn` a
warning in its metadata and the log."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from server_helpers import GRAPHS, serving

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

_MESSAGE = "the initial state has no 'name', read by node 'Greet'; no node writes it, so the node would read None"


def test_a_missing_input_is_a_warning_in_the_run_and_the_log(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="agentmap.server"),
        serving(GRAPHS / "hello_world.csv", checkpoint="memory", missing_inputs="warn") as url,
        sdk.get_sync_client(url=url, api_key=None) as client,
    ):
        tid = client.threads.create()["thread_id"]
        run = client.runs.create(tid, "HelloWorld", input={})
        assert run["metadata"]["warnings"] == [_MESSAGE]
        client.runs.join(tid, run["run_id"])
        assert client.runs.get(tid, run["run_id"])["metadata"]["warnings"] == [_MESSAGE]
        client.runs.wait(tid, "HelloWorld", input={"name": "Ada"})
        again = client.runs.create(tid, "HelloWorld", input={})  # the thread's values hold a name now
        assert "warnings" not in again["metadata"]
        client.runs.join(tid, again["run_id"])
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum(_MESSAGE in m and "HelloWorld" in m for m in logged) == 1, logged


def test_a_missing_input_is_refused_with_422_by_default(tmp_path: Path) -> None:
    with (
        serving(GRAPHS / "hello_world.csv", checkpoint=str(tmp_path / "runs.db")) as url,
        sdk.get_sync_client(url=url, api_key=None) as client,
    ):
        for thread in (None, client.threads.create()["thread_id"]):
            with pytest.raises(httpx.HTTPStatusError) as caught:
                client.runs.wait(thread, "HelloWorld", input={})
            body = caught.value.response.json()
            assert caught.value.response.status_code == 422 and body["code"] == "missing-state"
            assert _MESSAGE in body["message"]
            assert body["hint"] == 'pass \'name\' in the run\'s input, e.g. {"name": "..."}'
        assert client.runs.wait(None, "HelloWorld", input={"name": "Ada"})["greeting"] == "Hello, Ada!"
