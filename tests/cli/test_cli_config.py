"""Configuration through the real command: the file, AGENTMAP_* variables, --config and bad values."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import agentmap, write

_FLOW = (
    "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next,Prompt\n"
    "G,Try,failure,,,,Done,Recover,it broke\n"
    "G,Recover,template,,note,,,,recovered\n"
    "G,Done,echo,,,,,,\n"
)


def test_success_policy_from_file_then_variable(tmp_path: Path) -> None:
    csv = write(tmp_path / "flow.csv", _FLOW)
    assert agentmap("run", csv, cwd=tmp_path).code == 0  # all_nodes: Try failed, and Recover handled it
    write(tmp_path / "agentmap.yaml", "execution:\n  success_policy: critical_nodes\n  critical_nodes: [Try]\n")
    assert agentmap("run", csv, cwd=tmp_path).code == 1  # critical_nodes: Try failed, handled or not
    write(tmp_path / "agentmap.yaml", "execution:\n  success_policy: final_node\n")
    relaxed = agentmap("run", csv, cwd=tmp_path)
    assert relaxed.code == 0, relaxed.err
    assert json.loads(relaxed.out)["state"]["note"] == "recovered"
    critical = {"AGENTMAP_EXECUTION__SUCCESS_POLICY": "critical_nodes", "AGENTMAP_EXECUTION__CRITICAL_NODES": '["Try"]'}
    assert agentmap("run", csv, cwd=tmp_path, env=critical).code == 1  # the variables win over the file


def test_functions_and_agents_folders_from_config(tmp_path: Path) -> None:
    write(tmp_path / "lib" / "routers" / "pick.py", "def pick(state, ok, fail):\n    return 'B'\n")
    write(
        tmp_path / "lib" / "agents" / "yell.py",
        (
            "import agentmap\n\nclass YellFromConfigAgent(agentmap.BaseAgent):\n"
            "    def process(self, inputs):\n        return str(inputs.get('text', '')).upper()\n"
        ),
    )
    csv = write(
        tmp_path / "flows" / "flow.csv",
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\nG,A,yell_from_config,text,loud,func:pick\nG,B,echo,loud,out,\n",
    )
    config = write(
        tmp_path / "settings" / "team.yaml", "paths:\n  functions: ../lib/routers\n  custom_agents: ../lib/agents\n"
    )
    without = agentmap("run", csv, "--state", '{"text": "hi"}', cwd=tmp_path)
    assert without.code == 4 and "yell_from_config" in without.err
    result = agentmap("run", csv, "--state", '{"text": "hi"}', "--config", config, cwd=tmp_path)
    assert result.code == 0, result.err
    assert json.loads(result.out)["state"]["loud"] == "HI"
    by_variable = agentmap(
        "run",
        csv,
        "--state",
        '{"text": "hi"}',
        cwd=tmp_path,
        env={
            "AGENTMAP_PATHS__FUNCTIONS": str(tmp_path / "lib" / "routers"),
            "AGENTMAP_PATHS__CUSTOM_AGENTS": str(tmp_path / "lib" / "agents"),
        },
    )
    assert by_variable.code == 0, by_variable.err


def test_legacy_config_is_read(tmp_path: Path) -> None:
    csv = write(tmp_path / "flow.csv", _FLOW)
    write(
        tmp_path / "agentmap_config.yaml",
        "csv_path: flow.csv\nrouting: {enabled: true}\n"
        "execution:\n  success_policy:\n    type: critical_nodes\n    critical_nodes: [Recover]\n",
    )
    result = agentmap("run", cwd=tmp_path)
    assert result.code == 0, result.err
    assert json.loads(result.out)["file"] == csv.name  # the configured file, shown relative to the working folder


def test_bad_config_file_exits_2_naming_file_and_key(tmp_path: Path) -> None:
    write(tmp_path / "agentmap.yaml", "execution:\n  succes_policy: final_node\n")
    for command in (["run", "graphs/hello_world.csv"], ["validate", "graphs/hello_world.csv"]):
        result = agentmap(command[0], Path(__file__).parents[2] / command[1], cwd=tmp_path)
        assert result.code == 2, result.err
        assert "agentmap.yaml: execution.succes_policy: unknown key" in result.err
        assert "Traceback" not in result.text


def test_bad_variable_exits_2_naming_it(tmp_path: Path) -> None:
    result = agentmap("run", "graphs/hello_world.csv", env={"AGENTMAP_LOGGING__LEVEL": "chatty"})
    assert result.code == 2
    assert "environment variable AGENTMAP_LOGGING__LEVEL" in result.err and "Traceback" not in result.err


def test_missing_config_option(tmp_path: Path) -> None:
    result = agentmap("run", "graphs/hello_world.csv", "--config", tmp_path / "nope.yaml")
    assert result.code == 2 and "nope.yaml (--config) does not exist" in result.err


def test_logging_level_reaches_agent_logs(tmp_path: Path) -> None:
    quiet = agentmap("run", "graphs/hello_world.csv")
    assert "agentmap.agents" not in quiet.err
    loud = agentmap("run", "graphs/hello_world.csv", env={"AGENTMAP_LOGGING__LEVEL": "DEBUG"})
    assert loud.code == 0 and "DEBUG agentmap.agents" in loud.err
    assert json.loads(loud.out)["success"] is True  # logs stay off stdout


def test_agent_trace_lines_show_only_at_the_trace_level() -> None:
    # log_trace goes through logger.info (the agent contract); the command line leaves it out below TRACE
    info = agentmap("run", "graphs/hello_world.csv", env={"AGENTMAP_LOGGING__LEVEL": "INFO"})
    assert info.code == 0 and "RUN START" not in info.err and "RUN COMPLETED" not in info.err
    trace = agentmap("run", "graphs/hello_world.csv", env={"AGENTMAP_LOGGING__LEVEL": "TRACE"})
    assert trace.code == 0 and "*** AGENT Greet RUN START" in trace.err and "*** AGENT Greet RUN COMPLETED" in trace.err


def test_llm_and_tools_settings_reach_the_agents(tmp_path: Path) -> None:
    write(
        tmp_path / "custom_agents" / "peek.py",
        (
            "import agentmap\n\nclass PeekAgent(agentmap.BaseAgent):\n    def process(self, inputs):\n"
            "        s = self.environment.settings\n"
            "        return {'model': s['llm']['model'], 'roots': s['tools']['roots']}\n"
        ),
    )
    csv = write(tmp_path / "flow.csv", "GraphName,Node,AgentType,Output_Field\nG,Peek,peek,seen\n")
    write(tmp_path / "agentmap.toml", '[llm]\nmodel = "offline"\n[tools]\nroots = ["shared/tools"]\n')
    result = agentmap("run", csv, cwd=tmp_path, env={"AGENTMAP_LLM__MODEL": "openai:gpt-4o-mini"})
    assert result.code == 0, result.err
    seen = json.loads(result.out)["state"]["seen"]
    assert seen == {"model": "openai:gpt-4o-mini", "roots": [str((tmp_path / "shared" / "tools").resolve())]}
