"""`run_agent` for CSV workflows (seed 001): the output schema, traces, keys, history and the active agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentmap.contracts.minimal import AGENT_OUTPUT_SCHEMA
from agentmap.errors import AgentMapError, ConfigError
from agentmap.interface.agent import agent_for, load_active_agent, run_agent
from agentmap.interface.agent_calls import SYNC_TWIN
from agentmap.interface.eval_runner import run_eval
from agentmap.interface.evaluate import score_logs
from agentmap.interface.logs import read_log
from agentmap.interface.scenarios import Scenario, ScenarioTurn

TOOLS = '''
def city_population(city: str) -> str:
    """Look up the population of a city."""
    return f"{city} has 2 million people"


def shout(text: str) -> str:
    """Shout a text in capitals."""
    return text.upper()
'''

WORKFLOW = (
    "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next,Failure_Next,"
    "Tool_Source,Available_Tools\n"
    'Cities,Count,tool,,"{""tool"": ""shout""}",question:text,loud,Ask,,tools.py,\n'
    'Cities,Ask,llm,You answer questions about cities.,"{""model"": ""offline"", ""memory_key"": '
    '""chat_history""}",question,answer|chat_history,,,tools.py,city_population|shout\n'
)


@pytest.fixture
def workflow(tmp_path: Path) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    path = tmp_path / "cities.csv"
    path.write_text(WORKFLOW, encoding="utf-8")
    return path


async def test_output_matches_the_seed_schema_with_tool_traces(workflow: Path) -> None:
    agent = agent_for(workflow)
    output = await agent("What is the population of Paris?")
    jsonschema.validate(output, AGENT_OUTPUT_SCHEMA)
    assert "2 million" in output["content"]
    assert [t["tool"] for t in output["traces"]] == ["shout", "city_population"]
    shout, population = output["traces"]
    assert shout["args"] == {"text": "What is the population of Paris?"}
    assert shout["output"] == "WHAT IS THE POPULATION OF PARIS?"
    assert population["output"] == "Paris has 2 million people"
    assert population["duration_secs"] >= 0
    assert output["response_time_secs"] > 0
    assert output["tools"] == ["shout", "city_population"]
    assert output["models"] == {"Ask": "offline:offline"}
    assert set(output["timings"]) == {"Count", "Ask"}


async def test_repeated_tools_are_traced_each_time_but_named_once(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    path = tmp_path / "twice.csv"
    path.write_text(
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge,Tool_Source\n"
        'Twice,A,tool,"{""tool"": ""shout""}",question:text,first,B,tools.py\n'
        'Twice,B,tool,"{""tool"": ""shout""}",first:text,second,,tools.py\n',
        encoding="utf-8",
    )
    output = await agent_for(path, prompt_key="question", content_key="second")("hi")
    assert output["content"] == "HI"
    assert [t["tool"] for t in output["traces"]] == ["shout", "shout"]
    assert output["tools"] == ["shout"]


async def test_chat_history_reaches_the_workflow_as_messages(tmp_path: Path) -> None:
    path = tmp_path / "echo.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field\n"
        'Echo,Reply,template,"{prompt} | {chat_history} | {memory} | {agent_config}",'
        '"{""run_agent"": {""history"": ""chat_history"", ""content"": ""reply""}}",'
        "prompt|chat_history|memory|agent_config,reply\n",
        encoding="utf-8",
    )
    agent = agent_for(path)
    output = await agent(
        "third",
        chat_history="user: first\nassistant: second\nline two",
        memory="likes tea",
        config={"only_domains": ["maths"], "surprise": 1},
    )
    prompt, history, memory, config = output["content"].split(" | ")
    assert prompt == "third"
    assert "'role': 'user', 'content': 'first'" in history
    assert "'content': 'second\\nline two'" in history
    assert memory == "likes tea"
    assert "'only_domains': ['maths']" in config and "surprise" not in config


async def test_a_workflow_without_a_reply_raises_and_the_runner_logs_agent_error(tmp_path: Path) -> None:
    path = tmp_path / "silent.csv"
    path.write_text(
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Tool_Source\n"
        'Silent,A,tool,"{""tool"": ""lookup""}",prompt:text,out,tools.py\n',
        encoding="utf-8",
    )
    (tmp_path / "tools.py").write_text(
        'def lookup(text: str) -> str:\n    """Look a text up."""\n    raise RuntimeError("the archive is offline")\n',
        encoding="utf-8",
    )
    agent = agent_for(path)
    with pytest.raises(AgentMapError, match=r"gave no reply: .*the archive is offline") as caught:
        await agent("hi")
    assert caught.value.hint is None  # the node's error is what to fix, not the reply's key
    assert "\n" not in caught.value.message
    summary = await run_eval(
        [Scenario(name="s", turns=(ScenarioTurn(turn=1, message="hi"),))], agent, tmp_path / "logs", progress=False
    )
    log = read_log(summary.outcomes[0].log)
    assert log.metadata.stop_reason == "agent_error"
    assert "gave no reply" in log.turns[-1].text


async def test_a_reply_key_no_node_writes_says_how_to_name_it(workflow: Path) -> None:
    with pytest.raises(AgentMapError, match="gave no reply: no node wrote 'verdict'") as caught:
        await agent_for(workflow, content_key="verdict")("hi")
    assert caught.value.hint is not None and "content_key" in caught.value.hint


async def test_workflow_agent_through_eval_run_and_score(workflow: Path, tmp_path: Path) -> None:
    scenarios = [
        Scenario(
            name="pop",
            turns=(
                ScenarioTurn(turn=1, message="What is the population of Lyon?", must_include=("Lyon", "million")),
                ScenarioTurn(turn=2, message="hello", must_not_include=("error",)),
            ),
        )
    ]
    await run_eval(scenarios, agent_for(workflow), tmp_path / "logs", progress=False)
    report = score_logs(tmp_path / "logs")
    assert [(r.passed, r.findings) for r in report.runs] == [(True, [])]


def test_load_active_agent_from_a_python_file_or_a_workflow(
    workflow: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "my_agent.py"
    module.write_text(
        "async def run_agent(prompt, chat_history=None, memory=None, config=None):\n"
        "    return {'content': prompt[::-1], 'response_time_secs': 0.0, 'traces': []}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("ACTIVE_AGENT_PATH", str(module))
    assert load_active_agent().__name__ == "run_agent"
    assert callable(load_active_agent(f"{workflow}::Cities"))


async def test_module_run_agent_uses_the_active_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "rev.py"
    module.write_text(
        "def run_agent(prompt, chat_history=None, memory=None, config=None):\n"
        "    return {'content': prompt[::-1], 'response_time_secs': 0.0, 'traces': []}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("ACTIVE_AGENT_PATH", str(module))
    output: dict[str, Any] = await run_agent("abc")
    assert output["content"] == "cba"


@pytest.mark.parametrize(
    ("value", "words"),
    [("", "no active agent"), ("nowhere/agent.py", "does not exist"), ("no_such_module_xyz", "cannot import")],
)
def test_active_agent_mistakes_are_config_errors(value: str, words: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACTIVE_AGENT_PATH", value)
    with pytest.raises(ConfigError, match=words):
        load_active_agent()


def test_a_module_without_run_agent_is_refused(tmp_path: Path) -> None:
    module = tmp_path / "empty.py"
    module.write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no run_agent"):
        load_active_agent(module)


async def test_the_synchronous_twin_eval_run_calls_answers_the_same(workflow: Path) -> None:
    agent = agent_for(workflow)
    history = "user: hi\nassistant: hello"
    awaited = await agent("What is the population of Paris?", chat_history=history)
    called = getattr(agent, SYNC_TWIN)("What is the population of Paris?", chat_history=history)
    jsonschema.validate(called, AGENT_OUTPUT_SCHEMA)
    same = ("content", "tools", "nodes", "state", "success", "errors", "models")
    assert {k: called[k] for k in same} == {k: awaited[k] for k in same}
    assert [(t["tool"], t["args"], t["output"]) for t in called["traces"]] == [
        (t["tool"], t["args"], t["output"]) for t in awaited["traces"]
    ]


def test_the_tool_trace_collector_is_handed_tool_events_only(workflow: Path) -> None:
    """Every node's chain events and the model's events are not dispatched to it: a traced trial costs
    about what an untraced one does (bench/eval.py, throughput against `agentmap batch`)."""
    import agentmap
    from agentmap.interface.tracing import ToolTraceCollector

    class Counting(ToolTraceCollector):
        def __init__(self) -> None:
            super().__init__()
            self.other = 0

        def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
            self.other += 1

        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            self.other += 1

        def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
            self.other += 1

    app = agentmap.compile(workflow, state_keys=("question",))
    collector = Counting()
    app.invoke({"question": "What is the population of Paris?"}, {"callbacks": [collector]})
    assert [t.tool for t in collector.traces] == ["shout", "city_population"]
    assert collector.other == 0
