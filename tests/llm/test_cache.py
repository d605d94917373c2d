"""The LLM response cache through the real command against a local OpenAI-compatible server: a second process
sends no request, ttl expiry, `--no-cache`, a changed prompt misses, a failed call is not kept, a hit costs
nothing (usage, summary, spans), `llm.cache` in agentmap.yaml, the cache in the run's SQLite checkpoint, a hit
streamed as one chunk, and bad Context as a located validation error."""

from __future__ import annotations

import csv
import json
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import forked
import pytest
from openai_stub import OpenAIStub, error, text
from test_costs import _metadata, _run
from test_costs import _setup as two_nodes

import agentmap

sys.path[:0] = [str(Path(__file__).parents[1] / "cli"), str(Path(__file__).parents[1] / "server")]
from cli_helpers import agentmap_tty  # noqa: E402
from server_helpers import serving  # noqa: E402

HEADER = ["GraphName", "Node", "AgentType", "Prompt", "Context", "Input_Fields", "Output_Field", "Success_Next"]
CACHED: dict[str, Any] = {"cache": {"ttl": 3600}}


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def _setup(
    folder: Path,
    stub: OpenAIStub,
    extra: dict[str, Any] | None = None,
    *,
    tell: str = "Say it again.",
    config: str | None = None,
) -> dict[str, str]:
    """Two `openai` nodes on gpt-4o-mini, Ask then Tell, each with `extra` in its Context."""
    return two_nodes(folder, stub, config=config, extra=extra, tell=tell)


def test_a_second_process_sends_no_request_and_the_hit_costs_nothing(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one", usage=(1000, 200)), text("two", usage=(2000, 100)))
    env = _setup(tmp_path, stub, CACHED)
    code, first, err = _run(tmp_path, env)
    assert code == 0, err
    assert len(stub.requests) == 2
    assert first["usage"]["cache_hits"] == 0
    code, second, err = _run(tmp_path, env)
    assert code == 0, err
    assert len(stub.requests) == 2  # the second process asked the cache, not the server
    assert (second["state"]["a"], second["state"]["b"]) == ("one", "two")
    assert second["usage"] == {
        **{"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "cache_write_tokens": 0, "total_tokens": 0},
        **{"model_calls": 2, "replayed_calls": 0, "cache_hits": 2},
    }
    ask = _metadata(second)["Ask"]
    assert ask["cache_hits"] == 1 and "cost" not in ask
    assert (tmp_path / ".agentmap" / "llm_cache.db").is_file()  # no checkpoint: the default file


def test_the_summary_and_the_spans_say_cache_hit(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one", usage=(1000, 200)), text("two", usage=(2000, 100)))
    env = _setup(tmp_path, stub, CACHED)
    assert _run(tmp_path, env)[0] == 0
    result = agentmap_tty("run", "two.csv", "--state", '{"q": "hi"}', cwd=tmp_path, env=env)
    assert result.code == 0, result.out
    assert "model calls: 2 (2 from the cache, no cost) · tokens: 0 in, 0 out" in result.out
    code, _, err = _run(tmp_path, env, "--trace", "file:spans.jsonl")
    assert code == 0, err
    spans = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text().splitlines()]
    chat = [s["attributes"] for s in spans if s["name"].startswith("chat ")]
    assert len(chat) == 2
    assert all(c["agentmap.cache_hit"] is True and "gen_ai.usage.input_tokens" not in c for c in chat), chat
    node = next(s["attributes"] for s in spans if s["name"] == "agentmap.node Ask")
    assert node["agentmap.cache_hits"] == 1 and "agentmap.cost_usd" not in node
    assert len(stub.requests) == 2


def test_an_entry_expires_after_its_ttl(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(*[text("same") for _ in range(40)])
    env = _setup(tmp_path, stub, {"cache": {"ttl": 0.5}})
    assert _run(tmp_path, env)[0] == 0
    assert len(stub.requests) == 2
    # Both entries were written before the run ended: half a second later (the ttl, on the wall clock the cache keeps)
    # both have expired, and the next run asks the server again for both nodes.
    expired = time.time() + 0.5
    while time.time() <= expired:
        time.sleep(expired - time.time() + 0.01)
    code, document, err = _run(tmp_path, env)
    assert code == 0, err
    assert len(stub.requests) == 4
    assert document["usage"]["cache_hits"] == 0


def test_no_cache_calls_the_model(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one"), text("two"), text("three"), text("four"))
    env = _setup(tmp_path, stub, CACHED)
    assert _run(tmp_path, env)[0] == 0
    code, document, err = _run(tmp_path, env, "--no-cache")
    assert code == 0, err
    assert len(stub.requests) == 4
    assert (document["state"]["a"], document["usage"]["cache_hits"]) == ("three", 0)


def test_a_changed_prompt_misses(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one"), text("two"), text("three"))
    assert _run(tmp_path, _setup(tmp_path, stub, CACHED))[0] == 0
    code, document, err = _run(tmp_path, _setup(tmp_path, stub, CACHED, tell="Say it twice."))
    assert code == 0, err
    assert len(stub.requests) == 3  # Ask is the same request (a hit), Tell's prompt changed (a miss)
    assert (document["state"]["b"], document["usage"]["cache_hits"]) == ("three", 1)


def test_a_failed_call_is_not_cached(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(error(500, "provider down"))
    env = _setup(tmp_path, stub, CACHED)
    code, document, err = _run(tmp_path, env)
    assert code != 0 or document["success"] is False, err
    stub.script(text("one"), text("two"))
    code, document, err = _run(tmp_path, env)
    assert code == 0, err
    assert len(stub.requests) == 3
    assert (document["state"]["a"], document["usage"]["cache_hits"]) == ("one", 0)


def test_llm_cache_in_agentmap_yaml_caches_every_llm_node(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one"), text("two"))
    env = _setup(tmp_path, stub, config="llm:\n  cache: {ttl: 3600}\n")
    assert _run(tmp_path, env)[0] == 0
    code, document, err = _run(tmp_path, env)
    assert code == 0, err
    assert len(stub.requests) == 2
    assert document["usage"]["cache_hits"] == 2


def test_context_cache_false_turns_the_config_wide_cache_off_for_a_node(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one"), text("two"), text("three"), text("four"))
    env = _setup(tmp_path, stub, {"cache": False}, config="llm:\n  cache: {ttl: 3600}\n")
    assert _run(tmp_path, env)[0] == 0
    assert _run(tmp_path, env)[0] == 0
    assert len(stub.requests) == 4


def test_the_cache_lives_in_the_runs_sqlite_checkpoint(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one"), text("two"))
    env = _setup(tmp_path, stub, CACHED)
    assert _run(tmp_path, env, "--checkpoint", "runs.db", "--thread", "t1")[0] == 0
    code, document, err = _run(tmp_path, env, "--checkpoint", "runs.db", "--thread", "t2")
    assert code == 0, err
    assert len(stub.requests) == 2 and document["usage"]["cache_hits"] == 2
    with sqlite3.connect(tmp_path / "runs.db") as db:
        assert db.execute("SELECT count(*) FROM agentmap_llm_cache").fetchone() == (2,)
    assert not (tmp_path / ".agentmap" / "llm_cache.db").exists()


def test_threads_show_calls_marks_a_cache_hit(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one"), text("two"))
    env = _setup(tmp_path, stub, CACHED)
    for thread in ("t1", "t2"):
        assert _run(tmp_path, env, "--checkpoint", "runs.db", "--thread", thread)[0] == 0
    hits = {}
    for thread in ("t1", "t2"):
        code, out, err = forked.run(
            "threads", "show", thread, "--calls", "--checkpoint", "runs.db", "--json", cwd=tmp_path, env=env
        )
        assert code == 0, err
        hits[thread] = [c["cache_hit"] for c in json.loads(out)["calls"]]
    assert hits == {"t1": [False, False], "t2": [True, True]}
    shown = agentmap_tty(
        "threads", "show", "t2", "--calls", "--checkpoint", "runs.db", cwd=tmp_path, env=env | {"COLUMNS": "200"}
    )
    assert shown.code == 0 and shown.out.count("finished (cache hit)") == 2, shown.out


def test_a_hit_streams_as_one_chunk(tmp_path: Path, stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default cache file is in the working folder
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    stub.script(text("one"), text("two"))
    _setup(tmp_path, stub, CACHED)
    app = agentmap.compile(tmp_path / "two.csv")
    assert app.invoke({"q": "hi"}).state["b"] == "two"
    chunks = list(app.stream({"q": "hi"}, stream_mode="messages"))
    assert [(type(m).__name__, m.text, meta["langgraph_node"]) for m, meta in chunks] == [
        ("AIMessageChunk", "one", "Ask"),
        ("AIMessageChunk", "two", "Tell"),
    ]
    assert len(stub.requests) == 2


@pytest.mark.parametrize(
    ("cache", "said"),
    [
        (3600, "Context cache must be an object"),
        ({"ttl": 0}, 'Context cache "ttl" must be a positive number of seconds'),
        ({"ttl": "1h"}, 'Context cache "ttl" must be a positive number of seconds'),
        ({"ttl": 60, "size": 9}, 'Context cache takes only "ttl"'),
    ],
)
def test_a_bad_cache_context_is_a_located_validation_error(
    tmp_path: Path, stub: OpenAIStub, cache: Any, said: str
) -> None:
    env = _setup(tmp_path, stub, {"cache": cache})
    code, out, err = forked.run("validate", "two.csv", "--json", cwd=tmp_path, env=env)
    assert code == 4, out + err
    issues = [i for i in json.loads(out)["issues"] if said in i["message"]]
    assert issues, out
    assert (issues[0]["code"], issues[0]["row"], issues[0]["column"]) == ("bad-config", 2, "Context")


def test_a_bad_llm_cache_in_agentmap_yaml_is_a_validation_error(tmp_path: Path, stub: OpenAIStub) -> None:
    env = _setup(tmp_path, stub, config="llm:\n  cache: {ttl: -5}\n")
    code, out, err = forked.run("validate", "two.csv", cwd=tmp_path, env=env)
    assert code == 4, out + err
    assert 'llm.cache "ttl" must be a positive number of seconds, got -5' in out + err


def _batch(folder: Path, env: dict[str, str], output: str, *extra: str) -> list[dict[str, str]]:
    code, _, err = forked.run("batch", "two.csv", "--input", "in.csv", "--output", output, *extra, cwd=folder, env=env)
    assert code == 0, err
    with (folder / output).open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_batch_rows_hit_the_cache_and_no_cache_turns_it_off(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(*[text("ok", usage=(100, 10))] * 4)
    env = _setup(tmp_path, stub, CACHED)
    (tmp_path / "in.csv").write_text("q\nhi\nho\n")
    assert [r["b"] for r in _batch(tmp_path, env, "first.csv", "--concurrency", "1")] == ["ok", "ok"]
    # row ho's Ask is a new request; its Tell asks what row hi's Tell asked (reply "ok"): 3 requests
    assert len(stub.requests) == 3
    rows = _batch(tmp_path, env, "second.csv")
    assert len(stub.requests) == 3
    assert [(r["tokens_in"], r["cost"]) for r in rows] == [("0", ""), ("0", "")]
    stub.script(*[text("fresh")] * 4)
    assert [r["b"] for r in _batch(tmp_path, env, "third.csv", "--no-cache")] == ["fresh", "fresh"]
    assert len(stub.requests) == 7


@pytest.mark.postgres
def test_the_cache_lives_in_a_postgresql_checkpoint(tmp_path: Path, stub: OpenAIStub, postgres_url: str) -> None:
    stub.script(text("one"), text("two"))
    env = _setup(tmp_path, stub, CACHED) | {"AGENTMAP_CHECKPOINT": postgres_url}
    assert _run(tmp_path, env, "--thread", "t1")[0] == 0
    code, document, err = _run(tmp_path, env, "--thread", "t2")
    assert code == 0, err
    assert len(stub.requests) == 2 and document["usage"]["cache_hits"] == 2
    assert not (tmp_path / ".agentmap" / "llm_cache.db").exists()


def test_resume_no_cache_calls_the_model(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one"), text("two"), text("three"))
    env = _setup(tmp_path, stub, CACHED)
    context = json.dumps({"model": "gpt-4o-mini", "base_url": stub.base_url, "max_retries": 0, **CACHED})
    with (tmp_path / "two.csv").open("w", newline="") as handle:  # a person answers first, then Ask asks the model
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerow(["g", "Hold", "human", "Go?", "", "", "q", "Ask"])
        writer.writerow(["g", "Ask", "openai", "Answer briefly.", context, "q", "a", ""])

    def resumed(thread: str, *extra: str) -> dict[str, Any]:
        code, out, err = forked.run("run", "two.csv", "--thread", thread, "--json", cwd=tmp_path, env=env)
        assert code == 0, err
        code, out, err = forked.run("resume", thread, "hi", "--json", *extra, cwd=tmp_path, env=env)
        assert code == 0, err
        return dict(json.loads(out))

    assert resumed("t1")["state"]["a"] == "one"
    assert (resumed("t2")["state"]["a"], len(stub.requests)) == ("one", 1)  # a hit
    assert (resumed("t3", "--no-cache")["state"]["a"], len(stub.requests)) == ("two", 2)


@pytest.mark.slow
def test_a_hit_streams_to_a_langgraph_sdk_client_of_agentmap_serve(
    tmp_path: Path, stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk = pytest.importorskip("langgraph_sdk")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    monkeypatch.chdir(tmp_path)  # a run without a thread keeps its cache in the working folder
    stub.script(text("one"), text("two"))
    _setup(tmp_path, stub, CACHED)
    checkpoint = str(tmp_path / "runs.db")
    with serving(tmp_path / "two.csv", checkpoint=checkpoint) as url, sdk.get_sync_client(url=url, api_key=None) as c:
        runs = []
        for _ in range(2):
            thread = c.threads.create()["thread_id"]  # a run on a thread: the cache is in the server's checkpoint
            parts = list(c.runs.stream(thread, "g", input={"q": "hi"}, stream_mode="messages-tuple"))
            runs.append(
                [(m["content"], meta["langgraph_node"]) for m, meta in (p.data for p in parts if p.event == "messages")]
            )
    assert [t for t in runs[0] if t[0]] == [("one", "Ask"), ("two", "Tell")]
    assert runs[1] == [("one", "Ask"), ("two", "Tell")]  # from the cache: one chunk a reply
    assert len(stub.requests) == 2
    with sqlite3.connect(checkpoint) as db:
        assert db.execute("SELECT count(*) FROM agentmap_llm_cache").fetchone() == (2,)
