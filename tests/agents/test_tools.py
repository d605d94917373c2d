"""`LocalToolExecutor`, tool loading from Tool_Source / Available_Tools, and the `tool` agent type."""

from __future__ import annotations

import asyncio
import logging
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from timing import scaled

import agentmap
from agentmap.agents.base import AgentEnvironment
from agentmap.agents.tool_agent import ToolAgent
from agentmap.agents.tool_sources import build_tool_executor, check_tool_config, load_python_tools
from agentmap.agents.tools import LocalToolExecutor
from agentmap.errors import ConfigError
from agentmap.runtime.tracking import ExecutionTracker

# -- tools used by the executor tests -----------------------------------------------------------


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


async def shout(text: str) -> str:
    """Upper-case a text, asynchronously."""
    await asyncio.sleep(0)
    return text.upper()


def whoami(user_id: str, greeting: str = "hi") -> str:
    """Greet the calling user."""
    return f"{greeting} {user_id}"


def broken(reason: str) -> str:
    """Always fail."""
    raise ValueError(reason)


def forbidden() -> str:
    """Fail with a permission error."""
    raise PermissionError("read-only store")


def offline_service() -> str:
    """Fail as if the network were down."""
    raise ConnectionRefusedError("connection refused by 127.0.0.1:9")


async def sleepy(seconds: float) -> str:
    """Sleep, asynchronously."""
    await asyncio.sleep(seconds)
    return "awake"


def sleepy_sync(seconds: float) -> str:
    """Sleep in a thread."""
    time.sleep(seconds)
    return "awake"


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


TOOLS: list[Any] = [add, shout, whoami, broken, forbidden, offline_service, sleepy, sleepy_sync, multiply]


@pytest.fixture
def executor() -> LocalToolExecutor:
    """The tools with a time limit a busy machine never reaches (the timeout cases set their own)."""
    return LocalToolExecutor(TOOLS, timeout=scaled(10))


async def test_runs_sync_async_and_langchain_tools(executor: LocalToolExecutor) -> None:
    assert (await executor.execute("add", {"a": 2, "b": 3}, "u1")).data == 5
    assert (await executor.execute("add", {"a": 2}, "u1")).data == 3
    assert (await executor.execute("shout", {"text": "hey"}, "u1")).data == "HEY"
    result = await executor.execute("multiply", {"a": 1.5, "b": 4}, "u1")
    assert result.success and result.data == 6.0 and result.error_code is None
    assert result.duration_ms >= 0


async def test_user_id_is_injected_and_hidden_from_the_model(executor: LocalToolExecutor) -> None:
    assert (await executor.execute("whoami", {}, "ada")).data == "hi ada"
    [schema] = [s for s in executor.get_tool_schemas() if s["function"]["name"] == "whoami"]
    assert "user_id" not in schema["function"]["parameters"]["properties"]
    assert "user_id" not in schema["function"]["parameters"].get("required", [])
    assert executor.takes_user_id("whoami") and not executor.takes_user_id("add")


async def test_unknown_tool_suggests_a_name(executor: LocalToolExecutor) -> None:
    result = await executor.execute("ad", {}, "u")
    assert (result.success, result.error_code) == (False, "unknown_tool")
    assert "unknown tool 'ad'; did you mean 'add'?" in (result.error or "")


async def test_arguments_are_checked_against_the_schema(executor: LocalToolExecutor) -> None:
    missing = await executor.execute("add", {"b": 2}, "u")
    assert missing.error_code == "invalid_arguments"
    assert "a: Field required" in (missing.error or "")
    wrong = await executor.execute("add", {"a": "two"}, "u")
    assert wrong.error_code == "invalid_arguments"
    assert "invalid arguments for tool 'add'" in (wrong.error or "")


@pytest.mark.parametrize(
    ("name", "args", "code", "text"),
    [
        ("broken", {"reason": "boom"}, "execution_error", "tool 'broken' failed: ValueError: boom"),
        ("forbidden", {}, "permission_denied", "read-only store"),
        ("offline_service", {}, "network", "connection refused"),
        ("sleepy", {"seconds": 5}, "timeout", "did not finish within 0.3 seconds"),
        ("sleepy_sync", {"seconds": 2}, "timeout", "did not finish within 0.3 seconds"),
    ],
)
async def test_failures_are_results_not_exceptions(
    executor: LocalToolExecutor, name: str, args: dict[str, Any], code: str, text: str
) -> None:
    if code == "timeout":  # only these wait for the limit: a tool that fails at once may start late on a busy machine
        executor = LocalToolExecutor(TOOLS, timeout=0.3)
    started = time.perf_counter()
    result = await executor.execute(name, args, "u")
    assert (result.success, result.error_code) == (False, code)
    assert text in (result.error or "")
    # the timeout does not wait for a stuck tool: it ends before the tool would have
    assert time.perf_counter() - started < args.get("seconds", float("inf"))


async def test_langchain_view_runs_through_the_executor(executor: LocalToolExecutor) -> None:
    tools = {t.name: t for t in executor.as_langchain_tools(user_id="ada")}
    assert await tools["whoami"].ainvoke({"greeting": "hello"}) == "hello ada"
    # A failure becomes the tool's error text, as LangChain tool calling expects.
    assert "execution_error" in await tools["broken"].ainvoke({"reason": "boom"})
    assert executor.get_available_tools()[:3] == ["add", "shout", "whoami"]


# -- loading tools from Tool_Source ------------------------------------------------------------


def write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code))
    return path


@pytest.fixture
def workflow_dir(tmp_path: Path) -> Path:
    base = tmp_path / "flow"
    write(
        base / "tools.py",
        '''
        from langchain_core.tools import tool

        def add_numbers(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        def _helper() -> None:
            """Private: not a tool."""

        @tool
        def word_count(text: str) -> int:
            """Count the words of a text."""
            return len(text.split())
        ''',
    )
    write(base / "lib" / "a.py", 'def ping() -> str:\n    """Ping."""\n    return "pong"\n')
    write(
        base / "lib" / "b.py",
        '__all__ = ["echo"]\ndef echo(x: str) -> str:\n    """Echo."""\n    return x\n'
        'def hidden() -> None:\n    """Not exported."""\n',
    )
    write(base / "lib" / "_private.py", 'def secret() -> None:\n    """No."""\n')
    return base


def env(base: Path, **settings: Any) -> AgentEnvironment:
    return AgentEnvironment(base_dir=base, settings=settings)


def names(tools: list[Any]) -> list[str]:
    return sorted(t.name for t in tools)


def test_a_file_gives_its_public_functions_and_tools(workflow_dir: Path) -> None:
    assert names(load_python_tools("tools.py", env(workflow_dir))) == ["add_numbers", "word_count"]


def test_a_folder_gives_every_file_and_respects_all(workflow_dir: Path) -> None:
    assert names(load_python_tools("lib", env(workflow_dir))) == ["echo", "ping"]


def test_an_importable_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workflow_dir: Path) -> None:
    write(tmp_path / "pkgroot" / "my_tools_pkg" / "__init__.py", "")
    write(
        tmp_path / "pkgroot" / "my_tools_pkg" / "text.py",
        'def upper(s: str) -> str:\n    """Up."""\n    return s.upper()\n',
    )
    monkeypatch.syspath_prepend(str(tmp_path / "pkgroot"))
    allowed = env(workflow_dir, tools={"allowed_modules": ["my_tools_pkg"]})
    assert names(load_python_tools("module:my_tools_pkg.text", allowed)) == ["upper"]
    assert names(load_python_tools("my_tools_pkg.text", allowed)) == ["upper"]
    with pytest.raises(ConfigError, match=r"tool module 'my_tools_pkg\.nope' cannot be imported"):
        load_python_tools("module:my_tools_pkg.nope", allowed)
    for source in ("module:my_tools_pkg.text", "module:shutil"):  # not allowed without the setting
        with pytest.raises(ConfigError, match=r"tools\.allowed_modules") as refused:
            load_python_tools(source, env(workflow_dir))
        assert refused.value.code == "tool-module-refused"


def test_a_path_outside_the_allowed_roots_is_refused(tmp_path: Path, workflow_dir: Path) -> None:
    outside = write(tmp_path / "elsewhere" / "evil.py", 'def run() -> None:\n    """Run."""\n')
    for source in (str(outside), "../elsewhere/evil.py"):
        with pytest.raises(ConfigError, match="is outside the allowed tool folders") as raised:
            load_python_tools(source, env(workflow_dir))
        assert raised.value.code == "tool-path-refused"
        assert "tools.roots" in raised.value.message
    (workflow_dir / "link.py").symlink_to(outside)
    with pytest.raises(ConfigError, match="outside the allowed tool folders"):
        load_python_tools("link.py", env(workflow_dir))


def test_configured_tool_roots_are_allowed(tmp_path: Path, workflow_dir: Path) -> None:
    write(tmp_path / "shared" / "common.py", 'def stamp() -> str:\n    """Stamp."""\n    return "ok"\n')
    environment = env(workflow_dir, tools={"roots": [str(tmp_path / "shared")]})
    assert names(load_python_tools(str(tmp_path / "shared" / "common.py"), environment)) == ["stamp"]
    flat = env(workflow_dir, **{"tools.roots": "../shared"})
    assert names(load_python_tools("../shared/common.py", flat)) == ["stamp"]


def test_missing_source_and_unknown_tool_names_are_reported(workflow_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"Tool_Source 'nope\.py' does not exist"):
        load_python_tools("nope.py", env(workflow_dir))
    problems = check_tool_config({"tool_source": "tools.py", "available_tools": ["add_numbrs"]}, env(workflow_dir))
    assert problems == [
        (
            "Available_Tools",
            "Available_Tools names 'add_numbrs', which no Tool_Source provides; did you mean 'add_numbers'? "
            "Tools found: add_numbers, word_count",
        )
    ]
    assert (
        check_tool_config({"tool_source": "tools.py|lib", "available_tools": "ping|word_count"}, env(workflow_dir))
        == []
    )


async def test_available_tools_select_and_order(workflow_dir: Path) -> None:
    context = {"tool_source": "tools.py|lib", "available_tools": ["word_count", "ping"], "tool_timeout": 2}
    executor = await build_tool_executor(context, env(workflow_dir))
    assert executor.get_available_tools() == ["word_count", "ping"]
    assert executor.timeout == 2.0


async def test_the_tools_folder_is_the_default_source(tmp_path: Path) -> None:
    write(tmp_path / "tools" / "t.py", 'def hello() -> str:\n    """Hello."""\n    return "hi"\n')
    executor = await build_tool_executor({"available_tools": ["hello"]}, env(tmp_path))
    assert (await executor.execute("hello", {}, "")).data == "hi"
    assert check_tool_config({"available_tools": ["x"]}, env(tmp_path / "empty")) == [
        (
            "Tool_Source",
            "Available_Tools names tools but Tool_Source is empty and there is no tools/ folder beside the workflow: "
            "set Tool_Source to a .py file, a folder, a module or an mcp: server",
        )
    ]


# -- the `tool` agent type ---------------------------------------------------------------------


def make_agent(base: Path, context: dict[str, Any]) -> tuple[ToolAgent, ExecutionTracker]:
    tracker = ExecutionTracker()
    node = ToolAgent("Calc", "", context, logger=logging.getLogger("test.tool"), execution_tracker=tracker)
    node.environment = env(base)
    return node, tracker


def test_tool_agent_calls_the_tool_with_its_inputs(workflow_dir: Path) -> None:
    context = {"tool": "add_numbers", "tool_source": "tools.py", "input_fields": ["x:a", "b"], "output_field": "sum"}
    node, tracker = make_agent(workflow_dir, context)
    assert node.run({"x": 2, "b": 40}) == {"sum": 42, "last_action_success": True}
    assert tracker.summary[0].metadata["tool"] == "add_numbers"


def test_tool_agent_failure_takes_the_failure_path(workflow_dir: Path) -> None:
    context = {"tool": "add_numbers", "tool_source": "tools.py", "input_fields": ["a"], "output_field": "sum"}
    node, _ = make_agent(workflow_dir, context)
    update = node.run({"a": 1})
    assert update["last_action_success"] is False
    assert update["errors"] == [
        "Error in Calc: invalid arguments for tool 'add_numbers': b: Field required [invalid_arguments]"
    ]


def test_tool_agent_validation(workflow_dir: Path) -> None:
    assert ToolAgent.validate_config("", {"tool_source": "tools.py"}, env(workflow_dir)) == [
        'a tool node needs the tool\'s name: set Context {"tool": "<name>"} or list exactly one name in Available_Tools'
    ]
    assert (
        ToolAgent.validate_config(
            "", {"available_tools": ["add_numbers"], "tool_source": "tools.py"}, env(workflow_dir)
        )
        == []
    )
    outside = ToolAgent.validate_config("", {"tool": "x", "tool_source": "/etc/passwd.py"}, env(workflow_dir))
    problem = outside[0]
    assert isinstance(problem, tuple)
    column, message = problem
    assert column == "Tool_Source" and "outside the allowed tool folders" in message


def test_tool_node_in_a_csv_workflow(workflow_dir: Path) -> None:
    (workflow_dir / "calc.csv").write_text(
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Success_Next,Failure_Next,Tool_Source\n"
        'calc,Add,tool,"{""tool"": ""add_numbers""}",a|b,sum,Count,Oops,tools.py\n'
        "calc,Count,tool,,text,words,,Oops,tools.py|lib\n"
        "calc,Oops,echo,,errors,problem,,,\n"
    )
    csv = workflow_dir / "calc.csv"
    # Count names no tool: validation reports it before anything runs.
    with pytest.raises(agentmap.WorkflowValidationError, match="needs the tool's name"):
        agentmap.compile(csv)
    csv.write_text(csv.read_text().replace("calc,Count,tool,,", 'calc,Count,tool,"{""tool"": ""word_count""}",'))
    app = agentmap.compile(csv)
    good = app.invoke({"a": 1, "b": 2, "text": "one two three"})
    assert (good.success, good.state["sum"], good.state["words"]) == (True, 3, 3)
    bad = app.invoke({"a": 1, "b": "many", "text": "x"})
    assert "words" not in bad.state and bad.failed_nodes == ["Add"]
    assert bad.success is True  # Add's Failure_Next (Oops) handles the failure
    assert "invalid arguments for tool 'add_numbers'" in str(bad.state["problem"])


def test_tool_agent_reports_a_tool_its_source_lacks(workflow_dir: Path) -> None:
    context = {"tool": "add_numbrs", "tool_source": "tools.py"}
    assert ToolAgent.validate_config("", context, env(workflow_dir)) == [
        "Context tool 'add_numbrs' is not among the tools of Tool_Source; did you mean 'add_numbers'? "
        "Tools found: add_numbers, word_count"
    ]


def test_every_tool_problem_is_reported_at_once(tmp_path: Path, workflow_dir: Path) -> None:
    write(tmp_path / "elsewhere" / "evil.py", 'def run() -> None:\n    """Run."""\n')
    context = {"tool_source": "../elsewhere/evil.py", "tool_timeout": "soon"}
    problems = check_tool_config(context, env(workflow_dir))
    assert [p if isinstance(p, str) else p[0] for p in problems][1:] == ["Tool_Source"]  # each at its own column
    assert isinstance(problems[0], str) and problems[0].startswith("tool_timeout")  # a Context key: no column
    assert "'../elsewhere/evil.py' is outside the allowed tool folders" in problems[1][1]


def test_validate_reports_a_tool_problem_at_its_own_cell_as_the_file_spells_it(tmp_path: Path) -> None:
    import agentmap

    flow = tmp_path / "flow" / "flow.csv"
    write(flow, 'GraphName,Node,AgentType,Context,ToolFile,Tools\nG,Call,tool,"{""tool"": ""x""}",../evil.py,x\n')
    (issue,) = [i for i in agentmap.validate(flow) if i.severity == "error"]
    assert (issue.row, issue.column, issue.code) == (2, "ToolFile", "bad-config")
    assert "outside the allowed tool folders" in issue.message
    assert "ToolFile cell of 'Call'" in issue.fix
