"""`agentmap mcp` through the official MCP client: the command started as a real subprocess over stdio, its tools
listed and called, progress, a failing run, bad calls, and a pause answered by elicitation or the `resume` tool."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from components import clean_env

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters, types  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HELLO = ROOT / "graphs" / "hello_world.csv"

_QUOTE = {
    "description": "Prices an order of tea or cake.",
    "schema": {"qty": "integer", "item": {"type": "string", "enum": ["tea", "cake"]}},
}
FLOWS = f"""\
GraphName,Node,AgentType,Prompt,Description,Context,Input_Fields,Output_Field,Edge
Quote,Price,template,{{qty}} x {{item}},Prices the order,"{json.dumps(_QUOTE).replace('"', '""')}",item|qty,quote,
Broken,Fail,failure,,Always fails,,,outcome,
Publish,Review,human,Publish {{draft}}?,Asks to approve,"{{""interaction_type"": ""approval""}}",draft,approved,Done
Publish,Done,echo,,,,approved|draft,result,
"""


def _flows(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "flows.csv").write_text(FLOWS, encoding="utf-8")
    return folder / "flows.csv"


Elicit = Any  # the client's elicitation callback (mcp.client.session.ElicitationFnT)


@asynccontextmanager
async def connected(
    tmp_path: Path, *args: str | Path, elicit: Elicit = None, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """A client session with `agentmap mcp ARGS`, started as an MCP client starts a server."""
    env = clean_env(env)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentmap", "mcp", *map(str, args)], cwd=tmp_path, env=env
    )
    with open(tmp_path / "server.err", "a", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, timedelta(seconds=60), elicitation_callback=elicit) as session,
        ):
            await session.initialize()
            yield session


def _text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_tools_are_listed_with_schemas_and_called(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    async with connected(tmp_path, HELLO, flows) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"HelloWorld", "Quote", "Broken", "Publish", "resume"}
        assert tools["HelloWorld"].inputSchema == {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": False,
        }
        quote = tools["Quote"]
        assert quote.inputSchema["properties"]["qty"] == {"type": "integer"}
        assert quote.inputSchema["properties"]["item"]["enum"] == ["tea", "cake"]
        assert quote.description == "Prices an order of tea or cake.\nPrice: Prices the order"

        steps: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append((progress, message))

        result = await session.call_tool("HelloWorld", {"name": "Ada"}, progress_callback=on_progress)
        assert not result.isError
        assert result.structuredContent is not None
        assert result.structuredContent["greeting"] == "Hello, Ada!"
        assert result.structuredContent["graph_success"] is True
        assert _text(result) == result.structuredContent["message"]
        assert steps == [(1.0, "Greet finished"), (2.0, "Finish finished")]

        quoted = await session.call_tool("Quote", {"qty": 2, "item": "tea"})
        assert _text(quoted) == "2 x tea"

        failed = await session.call_tool("Broken", {})
        assert failed.isError
        assert failed.structuredContent is not None and failed.structuredContent["graph_success"] is False
        assert _text(failed).startswith("graph 'Broken' failed: ")


NOISY = """\
from agentmap import BaseAgent


class NoisyAgent(BaseAgent):
    def process(self, inputs):
        print("printed by a node")
        return "quiet"
"""


LOST = """\
def lost(state, success_target, failure_target):
    return "Nowhere"
"""


async def test_a_bad_call_is_a_json_rpc_error_naming_the_argument(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    (tmp_path / "flows" / "custom_agents").mkdir()
    (tmp_path / "flows" / "custom_agents" / "noisy.py").write_text(NOISY, encoding="utf-8")
    noisy = tmp_path / "flows" / "noisy.csv"
    (tmp_path / "flows" / "functions").mkdir()
    (tmp_path / "flows" / "functions" / "lost.py").write_text(LOST, encoding="utf-8")
    rows = ["GraphName,Node,AgentType,Output_Field,Edge", "Noisy,Talk,noisy,said,", "Lost,Go,echo,went,func:lost"]
    noisy.write_text("\n".join([*rows, "Lost,End,echo,,"]) + "\n", encoding="utf-8")
    async with connected(tmp_path, flows, noisy) as session:
        said = await session.call_tool("Noisy", {})  # what a node prints goes to stderr, not into the protocol
        assert said.structuredContent is not None and said.structuredContent["said"] == "quiet"
        lost = await session.call_tool("Lost", {})  # an error that stops the run: the call's error result
        assert lost.isError and _text(lost).startswith("graph 'Lost' stopped: ")
        assert "Nowhere" in _text(lost) and "Traceback" not in _text(lost)
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("Quot", {}, "unknown tool 'Quot'; tools: Quote, Broken, Publish, Noisy, Lost"),
            ("Quote", {"qty": 2}, "tool 'Quote': missing required argument 'item' (required: item, qty)"),
            ("Quote", {"qty": "two", "item": "tea"}, "tool 'Quote': argument 'qty': 'two' is not of type 'integer'"),
            ("Quote", {"qty": 2, "item": "tea", "size": 1}, "tool 'Quote' has no argument 'size'"),
            ("resume", {"thread_id": "nope", "answer": "yes"}, "tool 'resume': unknown thread 'nope'"),
        ]
        for name, arguments, message in cases:
            with pytest.raises(McpError) as caught:
                await session.call_tool(name, arguments)
            assert caught.value.error.code == types.INVALID_PARAMS
            assert caught.value.error.message.startswith(message), caught.value.error.message
            assert "Traceback" not in caught.value.error.message
    assert "printed by a node" in (tmp_path / "server.err").read_text(encoding="utf-8")


ORDER = """\
from pydantic import BaseModel

from agentmap import BaseAgent


class Line(BaseModel):
    sku: str
    qty: int


class OrderInput(BaseModel):
    lines: list[Line]
    note: str
    rush: bool = False


class OrderAgent(BaseAgent):
    input_model = OrderInput

    def process(self, inputs):
        count = sum(line["qty"] for line in inputs["lines"])
        return f"{count} items" + (" (rush)" if inputs["rush"] else "") + f": {inputs['note']}"
"""


async def test_a_custom_agents_input_model_types_the_tools_arguments(tmp_path: Path) -> None:
    (tmp_path / "flows" / "custom_agents").mkdir(parents=True)
    (tmp_path / "flows" / "custom_agents" / "order.py").write_text(ORDER, encoding="utf-8")
    orders = tmp_path / "flows" / "orders.csv"
    header = "GraphName,Node,AgentType,Context,Input_Fields,Output_Field"
    orders.write_text(f"{header}\nOrders,Take,order,,items:lines|note|rush|who,summary\n", encoding="utf-8")
    async with connected(tmp_path, orders) as session:
        (tool,) = (await session.list_tools()).tools
        schema = tool.inputSchema
        assert schema["properties"]["items"] == {"type": "array", "items": {"$ref": "#/$defs/Line"}, "title": "Lines"}
        assert schema["properties"]["rush"] == {"type": "boolean", "default": False, "title": "Rush"}
        assert schema["properties"]["note"] == {"type": "string", "title": "Note"}
        assert schema["properties"]["who"] == {"type": "string"}  # not a field of the model: a string
        assert schema["$defs"]["Line"]["properties"]["qty"] == {"type": "integer", "title": "Qty"}
        assert sorted(schema["required"]) == ["items", "note", "who"]

        result = await session.call_tool("Orders", {"items": [{"sku": "tea", "qty": 2}], "note": "hi", "who": "Ada"})
        assert _text(result) == "2 items: hi"
        with pytest.raises(McpError) as caught:
            await session.call_tool("Orders", {"items": [{"sku": "tea", "qty": "two"}], "note": "hi", "who": "Ada"})
        assert caught.value.error.code == types.INVALID_PARAMS
        assert caught.value.error.message.startswith("tool 'Orders': argument 'items': 'two' is not of type 'integer'")


async def test_a_pause_is_answered_through_elicitation(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        if len(asked) == 1:  # a first answer that does not fit: asked again
            return types.ElicitResult(action="accept", content={"answer": "maybe"})
        if len(asked) == 2:
            return types.ElicitResult(action="accept", content={"approved": True})
        return types.ElicitResult(action="decline")  # the person would rather answer later

    async with connected(tmp_path, flows, elicit=elicit) as session:
        result = await session.call_tool("Publish", {"draft": "the post"})
        assert not result.isError, _text(result)
        assert result.structuredContent is not None
        assert result.structuredContent["approved"] is True
        assert result.structuredContent["result"] == {"approved": True, "draft": "the post"}
        declined = await session.call_tool("Publish", {"draft": "another"})
        assert declined.structuredContent is not None and declined.structuredContent["status"] == "paused"
        thread_id = declined.structuredContent["thread_id"]
        later = await session.call_tool("resume", {"thread_id": thread_id, "answer": "no"})
        assert later.structuredContent is not None and later.structuredContent["approved"] is False
    assert len(asked) == 3
    first = asked[0]
    assert isinstance(first, types.ElicitRequestFormParams)
    assert first.message == "Publish the post?"
    assert first.requestedSchema["properties"]["approved"]["type"] == "boolean"
    assert "neither yes nor no" in asked[1].message


async def test_an_elicited_no_or_false_rejects_even_as_text_in_the_approved_field(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    words = ["no", "false"]

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approved": words.pop(0)})  # a form sent as text

    async with connected(tmp_path, flows, elicit=elicit) as session:
        for draft in ("the post", "the other post"):
            result = await session.call_tool("Publish", {"draft": draft})
            assert not result.isError, _text(result)
            assert result.structuredContent is not None
            assert result.structuredContent["result"] == {"approved": False, "draft": draft}  # rejected, not approved
    assert words == []


async def test_an_elicited_answer_that_fits_no_rule_is_asked_again_then_left_paused(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approved": "maybe"})

    async with connected(tmp_path, flows, elicit=elicit) as session:
        result = await session.call_tool("Publish", {"draft": "the post"})
        assert result.isError
        text = _text(result)
        assert text.startswith("graph 'Publish' stays paused: 3 answers did not fit"), text
        assert "'maybe' is neither yes nor no" in text and "'resume' tool" in text
        assert result.structuredContent is not None and result.structuredContent["status"] == "paused"
        thread_id = result.structuredContent["thread_id"]
        with pytest.raises(McpError) as caught:
            await session.call_tool("resume", {"thread_id": thread_id, "answer": {"approved": "maybe"}})
        assert caught.value.error.code == types.INVALID_PARAMS
        message = caught.value.error.message
        assert message.startswith("tool 'resume': argument 'answer': node 'Review' asks for an approval"), message
        done = await session.call_tool("resume", {"thread_id": thread_id, "answer": {"approved": "no"}})
        assert done.structuredContent is not None
        assert done.structuredContent["result"] == {"approved": False, "draft": "the post"}
    assert len(asked) == 3 and asked[0] == "Publish the post?"
    assert all("'maybe' is neither yes nor no" in m and m.endswith("\nPublish the post?") for m in asked[1:]), asked


async def test_a_pause_is_answered_through_the_resume_tool_after_a_restart(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    database = tmp_path / "runs.db"
    async with connected(tmp_path, flows, "--checkpoint", database) as session:  # a client without elicitation
        paused = await session.call_tool("Publish", {"draft": "the post"})
        assert not paused.isError
        assert paused.structuredContent is not None and paused.structuredContent["status"] == "paused"
        thread_id = paused.structuredContent["thread_id"]
        [question] = paused.structuredContent["questions"]
        assert question["node"] == "Review" and question["question"] == "Publish the post?"
        assert f'"thread_id": "{thread_id}"' in _text(paused)
        assert "Review asks: Publish the post? Answer with the 'resume' tool" in _text(paused)  # not `post?.`

    async with connected(tmp_path, flows, "--checkpoint", database) as session:  # the server started again
        with pytest.raises(McpError) as caught:
            await session.call_tool("resume", {"thread_id": thread_id, "answer": "maybe"})
        assert "neither yes nor no" in caught.value.error.message
        done = await session.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
        assert not done.isError, _text(done)
        assert done.structuredContent is not None
        assert done.structuredContent["result"] == {"approved": True, "draft": "the post"}
        with pytest.raises(McpError) as again:
            await session.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
        assert "has finished" in again.value.error.message


async def test_a_cancelled_call_stops_the_run_after_its_step(tmp_path: Path) -> None:
    import durable_graphs

    side = tmp_path / "ticks.txt"
    (tmp_path / "flows").mkdir()
    counter = durable_graphs.counter(tmp_path / "flows", nodes=4)
    env = {"TICK_FILE": str(side), "TICK_SLEEP": "0.4"}
    async with connected(tmp_path, counter, env=env) as session:
        cancelled: list[str | None] = []

        async def cancel_after_the_first_node(progress: float, total: float | None, message: str | None) -> None:
            if not cancelled:  # the first call is request 1 (initialize was 0)
                cancelled.append(message)
                notice = types.CancelledNotification(params=types.CancelledNotificationParams(requestId=1))
                await session.send_notification(types.ClientNotification(notice))

        with pytest.raises(McpError, match="cancelled"):
            await session.call_tool("Count", {}, progress_callback=cancel_after_the_first_node)
        assert cancelled == ["N01 finished"]
        again = await session.call_tool("Count", {})  # a whole run, longer than what the first had left
        assert again.structuredContent is not None and again.structuredContent["count"] == 4
    ticks = side.read_text(encoding="utf-8").split()
    assert ticks[-4:] == ["N01", "N02", "N03", "N04"]
    assert ticks[:-4] in (["N01"], ["N01", "N02"])  # the step under way when the cancel came ends; no more


async def test_every_graph_of_graphs_is_listed_and_called(tmp_path: Path) -> None:
    states: dict[str, Any] = {}
    for path in (ROOT / "graphs").rglob("*.state.json"):
        states.update(json.loads(path.read_text(encoding="utf-8")))
    env = {"AGENTMAP_TASKS_DB": str(tmp_path / "tasks.db"), "AGENTMAP_DECISION_LOG": str(tmp_path / "decisions.db")}
    async with connected(tmp_path, ROOT / "graphs", env=env) as session:
        tools = (await session.list_tools()).tools
        assert len(tools) >= 10
        for tool in tools:
            if tool.name == "resume" or any(
                isinstance(states[k], (list, dict)) for k in tool.inputSchema["properties"]
            ):
                continue  # graphs/assistant/ reads a list, which its untyped argument (text) cannot carry
            arguments = {key: str(states[key]) for key in tool.inputSchema["properties"]}
            result = await session.call_tool(tool.name, arguments)
            assert not result.isError, (tool.name, _text(result))
            content = result.structuredContent or {}
            if content.get("status") == "paused":  # graphs/approval.csv asks a person
                result = await session.call_tool("resume", {"thread_id": content["thread_id"], "answer": "yes"})
                content = result.structuredContent or {}
            assert content.get("graph_success") is True, (tool.name, _text(result))


async def test_a_pause_answered_after_the_file_changed_finishes_on_the_revision_it_started_on(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    database = tmp_path / "runs.db"
    async with connected(tmp_path, flows, "--checkpoint", database) as session:
        paused = await session.call_tool("Publish", {"draft": "the post"})
        assert paused.structuredContent is not None and paused.structuredContent["status"] == "paused"
        thread_id = paused.structuredContent["thread_id"]
    edited = FLOWS.replace("approved,Done\n", "approved,Announce\n").replace(
        "Publish,Done,echo,,,,approved|draft,result,", "Publish,Announce,template,Out now: {draft},,,draft,result,"
    )
    flows.write_text(edited, encoding="utf-8")  # Done replaced by Announce while the run waits

    async with connected(tmp_path, flows, "--checkpoint", database) as session:
        done = await session.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
        assert not done.isError, _text(done)
        assert done.structuredContent is not None
        assert done.structuredContent["result"] == {"approved": True, "draft": "the post"}  # Done ran, not Announce
        fresh = await session.call_tool("Publish", {"draft": "a note"})  # a new run takes the file as it is
        assert fresh.structuredContent is not None
        again = await session.call_tool("resume", {"thread_id": fresh.structuredContent["thread_id"], "answer": "yes"})
        assert again.structuredContent is not None and again.structuredContent["result"] == "Out now: a note"
