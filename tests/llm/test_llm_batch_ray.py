"""`agentmap batch --llm-batch --executor ray` (the run's local Ray with 2 CPUs: `ray_session` in tests/conftest.py):
the rows run on Ray workers to their next model call, wait while the provider job answers, then go on, round by
round, with the same outputs as on threads and each call billed once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from batch_stub import AnthropicBatchStub, OpenAIBatchStub
from test_llm_batch import _echo, _read, _rows, _workflow

import agentmap

pytestmark = [pytest.mark.ray, pytest.mark.slow]

N = 5
KEY_ENV = "AGENTMAP_TEST_BATCH_KEY"
# Set at import (collection), before the local Ray starts: its workers inherit the environment from here.
os.environ.setdefault(KEY_ENV, "sk-stub")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_ray_rows_wait_for_each_job_then_go_on_as_on_threads(ray_session: Any, tmp_path: Path, provider: str) -> None:
    stub_class = OpenAIBatchStub if provider == "openai" else AnthropicBatchStub
    model = "openai:gpt-4o-mini" if provider == "openai" else "anthropic:claude-sonnet-4-5"
    outputs: dict[str, list[dict[str, str]]] = {}
    for executor in ("thread", "ray"):
        with stub_class() as stub:
            stub.script(*([_echo] * (4 * N)))
            context = {"model": model, "base_url": stub.base_url, "api_key_env": KEY_ENV, "max_retries": 0}
            flow = _workflow(tmp_path, context)
            out = tmp_path / f"{executor}.csv"
            result = agentmap.batch(
                str(flow),
                _rows(N),
                output=out,
                executor=executor,
                chunk_size=2,
                llm_batch=True,
                llm_batch_poll=0.02,
                on_llm_progress=lambda _: None,
            )
            assert (result.successes, result.failures) == (N, 0), executor
            assert len(stub.jobs) == 2  # round 1: every row's call of A; round 2: every row's call of B
            assert len(stub.custom_ids) == len(set(stub.custom_ids)) == 2 * N  # no call submitted twice
            assert stub.billed == 2 * N  # nor billed twice
            assert len(stub.requests) == 2 * N  # every call went through a job, none as a normal call
        outputs[executor] = _read(out)
    columns = ("topic", "a", "mid", "b", "done", "success", "cost")
    on_threads = [{c: row[c] for c in columns} for row in outputs["thread"]]
    on_ray = [{c: row[c] for c in columns} for row in outputs["ray"]]
    assert on_ray == on_threads
    assert "<AGAIN" in on_ray[3]["done"] and "T3>" in on_ray[3]["done"]  # B answered on row 3's answer of A
