"""The hierarchical assistant in graphs/assistant: Router -> parallel domains -> Synthesizer, offline."""

from __future__ import annotations

import threading
from pathlib import Path

import jsonschema
import pytest

from agentmap.contracts.minimal import AGENT_OUTPUT_SCHEMA
from agentmap.errors import AgentMapError
from agentmap.interface.agent import agent_for

ASSISTANT = Path(__file__).resolve().parents[2] / "graphs" / "assistant" / "assistant.csv"

SLOW = '''
import asyncio
import time


async def slow_lookup(topic: str) -> str:
    """Look up a topic in the slow archive."""
    await asyncio.sleep(3)
    return "found"


def slow_archive_search(topic: str) -> str:
    """Search the slow archive for a topic."""
    time.sleep(1.5)
    return "found"
'''

WEATHER = '''
def weather_forecast(city: str) -> str:
    """Get the weather forecast for a city."""
    return "sunny in " + city
'''


@pytest.fixture
def tool_root(tmp_path: Path) -> Path:
    for name, text in (("slow", SLOW), ("weather", WEATHER)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tools.py").write_text(text, encoding="utf-8")
    return tmp_path


async def test_the_bundled_assistant_answers_with_its_tools() -> None:
    output = await agent_for(ASSISTANT)("What is the weather forecast in Paris?")
    jsonschema.validate(output, AGENT_OUTPUT_SCHEMA)
    assert "sunny" in output["content"]
    assert output["tools"] == ["weather_forecast"]
    assert set(output["timings"]) == {"Router", "Domains", "Synthesizer"}


@pytest.mark.parametrize("mode", ["async", "threads"])
async def test_a_domain_that_times_out_is_reported_while_the_others_answer(tool_root: Path, mode: str) -> None:
    agent = agent_for(ASSISTANT)
    output = await agent(
        "Look up the weather forecast for Paris and the topic cats in the slow archive",
        config={"tool_root": str(tool_root), "domain_timeout_secs": 0.5, "execution_mode": mode},
    )
    jsonschema.validate(output, AGENT_OUTPUT_SCHEMA)
    assert output["content"].startswith("Done: weather forecast returned sunny in Paris")
    assert "the slow domain did not answer within 0.5 seconds" in output["content"]
    assert all(t["tool"] != "domain:slow" for t in output["traces"])  # traces hold tool calls only
    assert output["errors"] == ["timeout: the slow domain did not answer within 0.5 seconds"]
    assert output["timings"]["domain:slow"] >= 0.5
    assert output["response_time_secs"] < 2.5  # the slow tool (3 s or 1.5 s) was not waited for


async def test_only_domains_and_model_overrides(tool_root: Path) -> None:
    agent = agent_for(ASSISTANT)
    output = await agent(
        "Look up the weather forecast for Paris and the topic cats in the slow archive",
        config={
            "tool_root": str(tool_root),
            "only_domains": ["weather"],
            "model_overrides": {"router": "offline:router-model", "synth": "offline:synth-model"},
        },
    )
    assert output["content"].startswith("Done: weather forecast returned sunny in Paris")
    assert "Note:" not in output["content"]  # the slow domain was never started
    assert [t["tool"] for t in output["traces"]] == ["weather_forecast"]
    assert output["models"] == {
        "Router": "offline:router-model",
        "Domains": "offline",
        "Synthesizer": "offline:synth-model",
    }


async def test_config_wins_over_environment(tool_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMAP_ONLY_DOMAINS", "slow")
    monkeypatch.setenv("AGENTMAP_TOOL_ROOT", str(tool_root))
    output = await agent_for(ASSISTANT)("weather forecast for Paris", config={"only_domains": ["weather"]})
    assert output["tools"] == ["weather_forecast"]


THREADS = '''
import asyncio
import threading
from pathlib import Path


async def {name}_where(topic: str) -> str:
    """Tell where the {name} lookup of a topic ran, once the {other} lookup has started too."""
    folder = Path(__file__).parents[1]
    (folder / "{name}.started").touch()
    for _ in range(1200):  # at most a minute: the two lookups run side by side, so each sees the other start
        if (folder / "{other}.started").exists():
            return f"{threading.get_ident()} met"
        await asyncio.sleep(0.05)
    return f"{threading.get_ident()} alone"
'''


@pytest.mark.parametrize("mode", ["async", "threads"])
async def test_execution_mode_runs_domains_on_the_loop_or_in_threads(tmp_path: Path, mode: str) -> None:
    for name, other in (("alpha", "beta"), ("beta", "alpha")):
        (tmp_path / name).mkdir()
        tools = THREADS.replace("{name}", name).replace("{other}", other)
        (tmp_path / name / "tools.py").write_text(tools, encoding="utf-8")
    output = await agent_for(ASSISTANT)(
        "Where did the alpha and beta lookups of the topic run?",
        config={"tool_root": str(tmp_path), "execution_mode": mode},
    )
    told = {t["tool"]: t["output"].split() for t in output["traces"]}
    assert {tool: met for tool, (_, met) in told.items()} == {"alpha_where": "met", "beta_where": "met"}, told
    where = {tool: int(thread) for tool, (thread, _) in told.items()}
    loop_thread = threading.get_ident()
    if mode == "async":
        assert set(where.values()) == {loop_thread}
    else:
        assert loop_thread not in where.values()
        assert len(set(where.values())) == 2  # one thread per domain: they ran at once


async def test_a_relative_tool_root_in_config_is_read_from_the_working_folder(
    tool_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tool_root.parent)
    monkeypatch.setenv("AGENTMAP_TOOL_ROOT", tool_root.name)
    output = await agent_for(ASSISTANT)("weather forecast for Paris", config={"only_domains": ["weather"]})
    assert output["tools"] == ["weather_forecast"]


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"tool_root": "no/such/folder"}, "tool_root .*no/such/folder is not a folder"),
        ({"only_domains": ["wether"]}, "only_domains names 'wether', which is not a domain .* maths, notes, weather"),
    ],
)
async def test_config_mistakes_fail_the_call_instead_of_a_vague_reply(config: dict[str, object], words: str) -> None:
    with pytest.raises(AgentMapError, match=words):
        await agent_for(ASSISTANT)("What is 2 plus 3?", config=config)
