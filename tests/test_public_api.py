"""End to end through `import agentmap`: built-in agents, routing, parallel branches, custom agents,
success policies, embedding, async agents, and every validation finding with its row and column."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from timing import scaled

import agentmap
from agentmap import AgentMapError, BaseAgent, ExecutionTracker, StateAdapter, agent

WriteCsv = Callable[..., Path]


def _unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# -- the package ------------------------------------------------------------------------------------


def test_every_exported_name_resolves() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the old ValidationError name warns: test_error_codes
        for name in agentmap.__all__:
            assert getattr(agentmap, name) is not None, name
    assert issubclass(agentmap.WorkflowValidationError, AgentMapError)
    assert callable(agent) and all(isinstance(c, type) for c in (StateAdapter, ExecutionTracker, BaseAgent))
    assert dir(agentmap) == sorted(agentmap.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        agentmap.nope  # noqa: B018


@pytest.mark.slow
def test_import_agentmap_loads_no_heavy_package() -> None:
    probe = (
        "import sys, agentmap; heavy = ('pandas', 'fastapi', 'openai', 'anthropic', 'langchain_openai', "
        "'langgraph', 'langchain_core', 'mcp', 'yaml'); "
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


# -- every built-in agent ---------------------------------------------------------------------------


def test_every_builtin_agent_in_one_workflow(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
        All,Start,DefaultAgent,Plan the day,,,plan,Ask,,
        All,Ask,input,Your name?,"{""default"": ""Ada""}",,name,Greet,,
        All,Greet,Template,"Hello, {name}!",,name,greeting,Copy,,
        All,Copy,Echo,,,greeting,copied,Decide,,
        All,Decide,branching,,"{'field': 'mood', 'success_values': ['good']}",mood,decision,,Fine,Broken
        All,Fine,success,all fine,,,status,Sum,,
        All,Broken,failure,mood is bad,,,,Sum,,
        All,Sum,summary,Report,"{""format"": ""{key}={value}"", ""separator"": ""; ""}",plan|greeting|status,report,,,
        """
    )
    good = agentmap.run(path, {"mood": "good"})
    assert good.success is True
    assert good.state["plan"] == "[Start] Plan the day"
    assert good.state["greeting"] == "Hello, Ada!"
    assert good.state["copied"] == {"greeting": "Hello, Ada!"}
    assert good.state["decision"] == "Decide: mood='good' -> success"
    assert good.state["report"] == "Report; plan=[Start] Plan the day; greeting=Hello, Ada!; status=all fine"
    bad = agentmap.run(path, {"mood": "grumpy"})
    assert bad.success is False
    assert [e.name for e in bad.summary][-3:] == ["Decide", "Broken", "Sum"]
    assert bad.errors == ["Error in Decide: mood='grumpy' is a failure value", "Error in Broken: mood is bad"]
    assert bad.state["report"].endswith("status=None")
    assert bad.state["last_action_success"] is True  # Sum succeeded: a failure never sticks to later nodes


def test_graph_agent_end_to_end(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field
        Outer,Call,graph,,{workflow=::Inner},topic=subject,title=headline
        Inner,Write,template,"All about {topic}",,topic,headline
        """
    )
    result = agentmap.run(f"{path}::Outer", {"subject": "bees"})
    assert result.state["title"] == "All about bees"
    assert [e.name for e in result.summary[0].subgraph or []] == ["Write"]


# -- routing ----------------------------------------------------------------------------------------

ROUTES = """
GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
R,Start,branching,go,checked,,Yes,No
R,Yes,success,,yes,Pick,,
R,No,success,,no,Pick,,
R,Pick,echo,go,picked,func:{router},,
R,Low,success,,low,,,
R,High,success,,high,,,
"""


def test_success_next_failure_next_and_a_router_from_the_functions_folder(write_csv: WriteCsv) -> None:
    write_csv(
        """
        def by_value(state, success_target, failure_target):
            return "High" if state["go"] == "yes" else "Low"
        """,
        name="functions/by_value.py",
    )
    path = write_csv(ROUTES.replace("{router}", "by_value"))
    assert [e.name for e in agentmap.run(path, {"go": "yes"}).summary] == ["Start", "Yes", "Pick", "High"]
    assert [e.name for e in agentmap.run(path, {"go": "no"}).summary] == ["Start", "No", "Pick", "Low"]


def test_router_by_module_and_function_gets_both_targets(
    write_csv: WriteCsv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _unique("routes")
    (tmp_path / f"{module}.py").write_text(
        "def choose(state, success_target, failure_target):\n"
        "    return success_target if state['last_action_success'] else failure_target\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write_csv(
        f"""
        GraphName,Node,AgentType,Input_Fields,Edge,Success_Next,Failure_Next
        R,Check,branching,ok,func:{module}:choose,Good,Bad|Worse
        R,Good,success,,,,
        R,Bad,success,,,,
        R,Worse,success,,,,
        """
    )
    allowed = {"functions": {"allowed_modules": [module]}}  # a CSV may import only the modules allowed
    assert [e.name for e in agentmap.run(path, {"ok": "yes"}, settings=allowed).summary] == ["Check", "Good"]
    assert {e.name for e in agentmap.run(path, {"ok": "no"}, settings=allowed).summary} == {"Check", "Bad", "Worse"}


BARRIER_FLOW = """
GraphName,Node,AgentType,Input_Fields,Output_Field,Edge
P,Split,echo,q,started,Left|Middle|Right
P,Left,{waiter},q,left,Join
P,Middle,{waiter},q,middle,Middle2
P,Middle2,echo,middle,middle2,Join
P,Right,{waiter},q,right,Join
P,Join,summary,left|middle2|right,joined,
"""


def _barrier_agent(barrier: threading.Barrier) -> str:
    name = _unique("waiter")

    @agent(name)
    class Waiter(BaseAgent):
        """Blocks until all three branches have arrived: only true concurrency gets through."""

        def process(self, inputs: dict[str, Any]) -> Any:
            barrier.wait()
            return self.name

    return name


def test_parallel_sync_branches_run_concurrently_and_join_once(write_csv: WriteCsv) -> None:
    barrier = threading.Barrier(3, timeout=scaled(10))
    app = agentmap.compile(write_csv(BARRIER_FLOW.replace("{waiter}", _barrier_agent(barrier))))
    result = app.invoke({"q": 1})
    assert not barrier.broken
    assert result.state["joined"] == "left: Left\n\nmiddle2: {'middle': 'Middle'}\n\nright: Right"
    names = [e.name for e in result.summary]
    assert names.count("Join") == 1 and names[-1] == "Join"


async def test_parallel_sync_branches_run_concurrently_under_ainvoke(write_csv: WriteCsv) -> None:
    barrier = threading.Barrier(3, timeout=scaled(10))
    app = agentmap.compile(write_csv(BARRIER_FLOW.replace("{waiter}", _barrier_agent(barrier))))
    result = await app.ainvoke({"q": 1})
    assert not barrier.broken
    assert [e.name for e in result.summary].count("Join") == 1
    assert result.state["left"] == "Left" and result.state["right"] == "Right"


def test_async_branches_run_concurrently(write_csv: WriteCsv) -> None:
    name = _unique("gather")
    arrived: list[str] = []

    @agent(name)
    class Gather(BaseAgent):
        async def process(self, inputs: dict[str, Any]) -> Any:
            arrived.append(self.name)
            while len(arrived) < 2:  # both coroutines must be in flight at once
                await asyncio.sleep(0.001)
            return self.name

    path = write_csv(
        f"GraphName,Node,AgentType,Output_Field,Edge\nA,S,success,,X|Y\nA,X,{name},x,J\nA,Y,{name},y,J\nA,J,success,,\n"
    )
    result = asyncio.run(asyncio.wait_for(agentmap.compile(path).ainvoke({}), 10))
    assert (result.state["x"], result.state["y"]) == ("X", "Y")


def test_errors_accumulate_across_parallel_branches_and_later_nodes(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next
        E,Split,success,,,,,A|B,
        E,A,failure,A broke,,,Join,,
        E,B,failure,B broke,,,Join,,
        E,Join,echo,,errors,seen,,,Last
        E,Last,failure,last broke,,,,,
        """
    )
    result = agentmap.run(path)
    assert sorted(result.errors[:2]) == ["Error in A: A broke", "Error in B: B broke"]
    assert result.errors[2:] == []
    assert sorted(result.state["seen"]["errors"]) == ["Error in A: A broke", "Error in B: B broke"]
    assert result.state["last_action_success"] is True  # Join succeeded after two failed branches
    assert [e.name for e in result.summary][-1] == "Join"


# -- custom agents by every route -----------------------------------------------------------------


def test_custom_agent_by_decorator(write_csv: WriteCsv) -> None:
    name = _unique("shout")

    @agentmap.agent(name)
    class ShoutAgent(agentmap.BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            return str(inputs["text"]).upper()

    path = write_csv(f"GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Loud,{name.upper()}Agent,text,loud\n")
    assert agentmap.run(path, {"text": "hi"}).state["loud"] == "HI"


def test_custom_agent_from_the_custom_agents_folder(write_csv: WriteCsv) -> None:
    stem = _unique("weather")
    write_csv(
        f"""
        from agentmap import BaseAgent

        class {stem.title().replace("_", "")}Agent(BaseAgent):
            def process(self, inputs):
                return f"sunny in {{inputs['city']}}"
        """,
        name=f"custom_agents/{stem}.py",
    )
    path = write_csv(f"GraphName,Node,AgentType,Input_Fields,Output_Field\nG,W,{stem.replace('_', '')},city,w\n")
    assert agentmap.validate(path) == []
    assert agentmap.run(path, {"city": "Oslo"}).state["w"] == "sunny in Oslo"


@pytest.mark.slow
def test_custom_agent_from_an_installed_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "plugin_pkg.py").write_text(
        "from agentmap import BaseAgent\n"
        "class PluginAgent(BaseAgent):\n    def process(self, inputs):\n        return 'plugged in'\n",
        encoding="utf-8",
    )
    info = site / "plugin_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-pkg\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[agentmap.agents]\nplugin = plugin_pkg:PluginAgent\n", encoding="utf-8")
    flow = tmp_path / "flow.csv"
    flow.write_text("GraphName,Node,AgentType,Output_Field\nG,P,Plugin,out\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site)}
    probe = f"import agentmap; print(agentmap.run({str(flow)!r}).state['out'])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=scaled(120))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "plugged in"


# -- success policies -------------------------------------------------------------------------------

POLICY_FLOW = """
GraphName,Node,AgentType,Edge,Failure_Next,Success_Next
S,Risky,failure,,Fallback,
S,Fallback,success,,,
"""


@pytest.mark.parametrize(
    ("next_cells", "success"),
    [
        ("Fallback,", True),  # Failure_Next goes on: handled
        (",Fallback", False),  # Edge overrides Failure_Next (edge-overrides-branches): nothing handles it
        (",", False),  # no Failure_Next: the failure ends the run as failed
    ],
)
def test_only_a_failure_next_naming_a_node_handles_a_failure(
    write_csv: WriteCsv, next_cells: str, success: bool
) -> None:
    flow = f"GraphName,Node,AgentType,Failure_Next,Edge\nS,Risky,failure,{next_cells}\nS,Fallback,success,,\n"
    result = agentmap.run(write_csv(flow))
    assert result.success is success
    assert result.summary[0].handled is success


@pytest.mark.parametrize(
    ("policy", "critical", "success"),
    [
        ("all_nodes", (), True),  # Risky's failure is handled: Fallback is its Failure_Next
        ("final_node", (), True),
        ("critical_nodes", ("Fallback",), True),
        ("critical_nodes", ("Risky",), False),
    ],
)
def test_success_policies(write_csv: WriteCsv, policy: str, critical: tuple[str, ...], success: bool) -> None:
    app = agentmap.compile(write_csv(POLICY_FLOW), success_policy=policy, critical_nodes=critical)  # type: ignore[arg-type]
    result = app.invoke({})
    assert result.success is success
    assert result.state["graph_success"] is success


def test_custom_success_policy(write_csv: WriteCsv) -> None:
    def at_most_one_failure(summary: Sequence[agentmap.NodeExecution]) -> bool:
        return sum(e.success is False for e in summary) <= 1

    assert agentmap.run(write_csv(POLICY_FLOW), success_policy=at_most_one_failure).success is True


# -- LangGraph underneath ---------------------------------------------------------------------------


def test_compiled_graph_embeds_as_a_node_of_a_hand_written_state_graph(write_csv: WriteCsv) -> None:
    path = write_csv(
        """
        GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge
        G,Greet,template,"Hello, {name}!",name,greeting,Echo
        G,Echo,echo,,greeting,echoed,
        """
    )
    app = agentmap.compile(path)

    class Parent(TypedDict, total=False):
        name: str
        greeting: str
        shouted: str

    builder = StateGraph(Parent)
    builder.add_node("agentmap", app.graph)
    builder.add_node("shout", lambda state: {"shouted": state["greeting"].upper()})
    builder.add_edge(START, "agentmap")
    builder.add_edge("agentmap", "shout")
    builder.add_edge("shout", END)
    final = builder.compile().invoke({"name": "Ada"})
    assert final == {"name": "Ada", "greeting": "Hello, Ada!", "shouted": "HELLO, ADA!"}


def test_async_agents_run_under_invoke_and_ainvoke(write_csv: WriteCsv) -> None:
    coro, twin = _unique("coro"), _unique("twin")

    @agent(coro)
    class Coro(BaseAgent):
        async def process(self, inputs: dict[str, Any]) -> Any:
            await asyncio.sleep(0)
            return f"{inputs['x']}+coro"

    @agent(twin)
    class Twin(BaseAgent):
        async def aprocess(self, inputs: dict[str, Any]) -> Any:
            await asyncio.sleep(0)
            return f"{inputs['y']}+twin"

    path = write_csv(f"GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\nG,A,{coro},x,y,B\nG,B,{twin},y,z,\n")
    app = agentmap.compile(path)
    assert app.invoke({"x": "1"}).state["z"] == "1+coro+twin"
    assert asyncio.run(app.ainvoke({"x": "2"})).state["z"] == "2+coro+twin"


# -- every validation finding, with its row and column as the file spells it ------------------------

FINDINGS: list[tuple[str, str, list[tuple[int | None, str | None, str]]]] = [
    ("missing-column", "graph_name,AgentType\nG,echo\n", [(1, "Node", "missing-column")]),
    ("duplicate-column", "GraphName,Node,Edge,next\nG,A,,\n", [(1, "next", "duplicate-column")]),
    ("unknown-column", "GraphName,Node,Colour\nG,A,red\n", [(1, "Colour", "unknown-column")]),
    ("missing-graph-name", "workflow,Step\nG,A\n,B\n", [(3, "workflow", "missing-graph-name")]),
    ("missing-node-name", "GraphName,StepName\nG,A\nG,\n", [(3, "StepName", "missing-node-name")]),
    ("bad-context", "GraphName,Node,Config\nG,A,{temperature=2\n", [(2, "Config", "bad-context")]),
    ("bad-field", "GraphName,Node,Output\nG,A,a:b\n", [(2, "Output", "bad-field")]),
    ("bad-target", "GraphName,Node,next_node\nG,A,A|func:pick\n", [(2, "next_node", "bad-target")]),
    (
        "bad-prompt-file",
        "GraphName,Node,Instructions\nG,A,file:nowhere.txt\n",
        [(2, "Instructions", "bad-prompt-file")],
    ),
    ("no-graphs", "GraphName,Node\n", [(None, None, "no-graphs")]),
    ("duplicate-node", "GraphName,Node,Edge\nG,A,\nG,A,\n", [(3, "Node", "duplicate-node")]),
    ("reserved-name", "GraphName,Node\nG,a:b\n", [(2, "Node", "reserved-name")]),
    ("unknown-agent-type", "GraphName,Node,Type\nG,A,Ecko\n", [(2, "Type", "unknown-agent-type")]),
    (
        "edge-overrides-branches",
        "GraphName,Node,Edge,on_failure\nG,A,B,B\nG,B,,\n",
        [(2, "Edge", "edge-overrides-branches")],
    ),
    (
        "unknown-target",
        "GraphName,Node,SuccessTarget\nG,A,Nxt\nG,Next,\n",
        [(2, "SuccessTarget", "unknown-target"), (3, "Node", "unreachable-node")],
    ),
    (
        "parallel-write",
        "GraphName,Node,Output_Field,Edge\nG,S,,A|B\nG,A,x,\nG,B,x,\n",
        [(4, "Output_Field", "parallel-write")],
    ),
    ("unreachable-node", "GraphName,Node,Edge\nG,A,\nG,B,\n", [(3, "Node", "unreachable-node")]),
    ("unset-input", "GraphName,Node,Inputs,Edge\nG,A,,B\nG,B,typo,\n", [(3, "Inputs", "unset-input")]),
    ("unknown-function", "GraphName,Node,on_success\nG,A,func:nowhere\n", [(2, "on_success", "unknown-function")]),
    ("bad-config", "GraphName,Node,AgentType,Prompt\nG,A,template,\n", [(2, "Prompt", "bad-config")]),
]


@pytest.mark.parametrize(("code", "text", "expected"), FINDINGS, ids=[f[0] for f in FINDINGS])
def test_every_finding_has_its_row_and_column(
    write_csv: WriteCsv, code: str, text: str, expected: list[tuple[int | None, str | None, str]]
) -> None:
    path = write_csv(text)
    issues = agentmap.validate(path)
    assert [(i.row, i.column, i.code) for i in issues] == expected
    issue = next(i for i in issues if i.code == code)
    assert issue.file == str(path)
    assert issue.message and (issue.fix or code == "no-graphs")
    warning = code in ("unknown-column", "unreachable-node", "unset-input", "edge-overrides-branches")
    assert issue.severity == ("warning" if warning else "error")
    if not warning:
        with pytest.raises(agentmap.WorkflowValidationError) as info:
            agentmap.compile(path)
        assert code in str(info.value)


def test_bad_context_shows_the_cell(write_csv: WriteCsv) -> None:
    (issue,) = agentmap.validate(write_csv("GraphName,Node,Context\nG,A,temperature=2\n"))
    assert "'temperature=2'" in issue.message


def test_unknown_agent_type_suggests_and_says_how_to_register(write_csv: WriteCsv) -> None:
    (issue,) = agentmap.validate(write_csv("GraphName,Node,Type\nG,A,Ecko\n"))
    assert "did you mean 'echo'?" in issue.message
    assert "@agentmap.agent('Ecko')" in issue.fix and "custom_agents/" in issue.fix
