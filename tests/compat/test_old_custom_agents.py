"""Custom agent files written for AgentMap 0.9: old imports, old constructor keywords, old process(inputs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from compat_helpers import cli, write

# Shaped like the file `agentmap scaffold` of 0.9 wrote.
WEATHER = """
from typing import Any, Dict, Optional

from agentmap.agents.base_agent import BaseAgent
from agentmap.services.protocols import LLMCapableAgent


class WeatherAgent(BaseAgent, LLMCapableAgent):
    def __init__(self, name, prompt, context=None, logger=None, execution_tracking_service=None,
                 state_adapter_service=None):
        super().__init__(name, prompt, context, logger, execution_tracking_service, state_adapter_service)
        self.units = self.context.get("units", "metric")

    def process(self, inputs: Dict[str, Any]) -> Any:
        self.log_info(f"weather for {inputs.get('city')}")
        return f"sunny in {inputs.get('city')} ({self.units})"
"""

LOUD = """
from agentmap.agents.builtins.echo_agent import EchoAgent
from agentmap.agents.builtins.default_agent import DefaultAgent


class LoudEchoAgent(EchoAgent):
    def __init__(self, name, prompt, context=None, logger=None, execution_tracking_service=None,
                 state_adapter_service=None, **kwargs):
        super().__init__(name=name, prompt=prompt, context=context, logger=logger,
                         execution_tracking_service=execution_tracking_service,
                         state_adapter_service=state_adapter_service)

    def process(self, inputs):
        return {key: str(value).upper() for key, value in super().process(inputs).items()}


class PoliteDefaultAgent(DefaultAgent):
    def process(self, inputs):
        return "please: " + super().process(inputs)
"""

FLOW = """
GraphName,Node,AgentType,Context,Prompt,Input_Fields,Output_Field,Edge
W,Look,Weather,{units: imperial},,city,report,Shout
W,Shout,loud_echo,,,report,loud,Ask
W,Ask,PoliteDefault,,tea,,polite,
"""


def test_old_custom_agents_load_and_run_unchanged(tmp_path: Path) -> None:
    write(tmp_path, {"w.csv": FLOW, "custom_agents/weather.py": WEATHER, "custom_agents/loud.py": LOUD})
    result = cli("run", tmp_path / "w.csv", "--state", '{"city": "Oslo"}', "--json")
    assert result.code == 0, result.text
    state = result.json()["state"]
    assert state["report"] == "sunny in Oslo (imperial)"
    assert state["loud"] == {"report": "SUNNY IN OSLO (IMPERIAL)"}
    assert state["polite"] == "please: [Ask] tea"


def test_the_old_base_class_keeps_the_agent_contract() -> None:
    import logging

    import agentmap
    from agentmap.agents.base_agent import BaseAgent as OldBase

    class Double(OldBase):
        def process(self, inputs: dict[str, object]) -> object:
            return 2 * int(str(inputs["n"]))

    assert issubclass(OldBase, agentmap.BaseAgent)
    tracker = agentmap.ExecutionTracker()
    agent = Double(
        "D",
        "",
        {"input_fields": ["n"], "output_field": "m"},
        logger=logging.getLogger("t"),
        execution_tracking_service=tracker,
        state_adapter_service=object(),
    )
    assert agent.run({"n": 4}) == {"m": 8, "last_action_success": True}
    assert agent.execution_tracking_service is tracker
    with pytest.raises(ValueError, match="ExecutionTracker not provided"):
        Double("D", "", {}, logging.getLogger("t")).run({})  # the contract still needs a tracker


def test_old_services_are_refused_with_what_to_use_instead(tmp_path: Path) -> None:
    agent_file = """
    from agentmap.agents.base_agent import BaseAgent

    class AskAgent(BaseAgent):
        def process(self, inputs):
            return self.llm_service.call_llm(provider="openai", messages=[])
    """
    write(tmp_path, {"f.csv": "GraphName,Node,AgentType,Output_Field\nG,A,Ask,out\n", "custom_agents/a.py": agent_file})
    result = cli("run", tmp_path / "f.csv", "--json")
    assert result.code == 1
    assert "self.llm_service of AgentMap 0.9 is not provided" in result.json()["errors"][0]


def test_an_old_module_with_no_counterpart_says_which_type_is_missing(tmp_path: Path) -> None:
    agent_file = (
        "from agentmap.agents.builtins.storage.blob.blob_reader_agent import BlobReaderAgent\n"
        "class ArchiveAgent(BlobReaderAgent):\n    pass\n"
    )
    write(tmp_path, {"f.csv": "GraphName,Node,AgentType\nG,A,Archive\n", "custom_agents/b.py": agent_file})
    result = cli("validate", tmp_path / "f.csv")
    assert result.code == 4
    assert "f.csv:2:AgentType: error[unknown-agent-type]" in result.out
    assert "b.py, which cannot be imported" in result.out and "blob" in result.out
    assert "Traceback" not in result.text


def test_a_broken_script_in_the_folder_stops_only_the_workflows_that_name_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "good.csv": "GraphName,Node,AgentType,Input_Fields,Output_Field\nG,A,Weather,city,out\n",
            "bad.csv": "GraphName,Node,AgentType\nG,A,echo\nG,B,report\n",
            "custom_agents/weather_agent.py": WEATHER,
            "custom_agents/report_agent.py": "from agentmap.agents.base_agent import BaseAgent\nclass ReportAgent(:\n",
            "custom_agents/try_it.py": "import requests_that_are_not_installed\nprint('an example script')\n",
        },
    )
    good = cli("run", tmp_path / "good.csv", "--state", '{"city": "Oslo"}')
    assert good.code == 0 and "sunny in Oslo" in good.out
    bad = cli("validate", tmp_path / "bad.csv")
    assert bad.code == 4
    assert "bad.csv:3:AgentType: error[unknown-agent-type]" in bad.out
    assert "report_agent.py, which cannot be imported: SyntaxError" in bad.out
    assert "paths.custom_agents" in bad.out and "try_it" not in bad.out


def test_a_retired_built_in_type_says_what_became_of_it(tmp_path: Path) -> None:
    write(tmp_path, {"f.csv": "GraphName,Node,AgentType\nG,Store,vector_writer\n"})
    result = cli("validate", tmp_path / "f.csv")
    assert result.code == 4
    assert "f.csv:2:AgentType: error[unknown-agent-type]" in result.out
    assert "AgentMap 0.9 built-in type: vector storage" in result.out
