"""`agentmap mcp FILE|FOLDER`: every graph an MCP tool, through the official `mcp` SDK.

A tool call is one run of the graph through the same `CompiledWorkflow.astream` as `agentmap serve`: a progress
notification per finished node when the client sent a progress token, and the client's cancellation closes
the stream, which stops the graph after its step. A run that pauses on a `human`/`suspend` node asks the
client through elicitation when it can, and resumes with the answer; otherwise the tool returns the question
and a thread id, and the `resume` tool continues it. Threads live in the `--checkpoint` saver (memory by
default; a SQLite file keeps a paused run across a restart of the server).

The tools and the SDK server are here (`McpGraphs`, `build_server`); `mcp_elicit.py` asks the client a paused
node's question; `mcp_stdio.py` serves them on stdin/stdout (`agentmap mcp`), `mcp_http.py` at `/mcp` of
`agentmap serve`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentmap._version import __version__
from agentmap.errors import AgentMapError, ConfigError, ErrorCode, WorkflowFileError
from agentmap.protocols._tools import (
    ArgumentError,
    check_answer_fits,
    check_arguments,
    describe,
    input_schema,
    reply,
)
from agentmap.protocols.mcp_elicit import ASKS, elicit

if TYPE_CHECKING:
    from mcp import types
    from mcp.server.lowlevel import Server

    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.server._graphs import Assistant, Assistants

__all__ = ["RESUME_TOOL", "Leg", "LocalRuns", "McpGraphs", "Runs", "build_server", "invalid_params"]

RESUME_TOOL = "resume"
_log = logging.getLogger("agentmap.mcp")


def _sdk_missing() -> ConfigError:
    return ConfigError(
        "agentmap mcp needs the MCP Python SDK, which is not installed",
        code=ErrorCode.MISSING_EXTRA,
        hint='pip install "agentmap[mcp-server]"',
    )


class McpGraphs:
    """The tools of an MCP server: one per graph, and `resume` when a graph can pause."""

    def __init__(self, assistants: Assistants, runs: Runs | None = None) -> None:
        """`runs` runs a tool call's legs: in this process by default (`agentmap mcp`), or on the run queue of
        `agentmap serve` (`mcp_http.py`)."""
        from agentmap.server._graphs import Assistants

        self.runs = runs or LocalRuns()
        self.assistants = Assistants([a for a in assistants.all if _answers_over_mcp(a)])
        if not self.assistants.all:
            raise WorkflowFileError(
                "no graph to offer as an MCP tool: each has an input node that reads the terminal",
                code=ErrorCode.NO_WORKFLOW,
                hint='give those nodes Context {"interrupt": true}: the run then pauses and asks the client',
            )
        self.schemas = {a.graph_id: input_schema(a) for a in self.assistants.all}
        self.pausing = {a.graph_id for a in self.assistants.all if a.app.pausing_nodes()}
        if self.pausing and RESUME_TOOL in self.schemas:
            raise ConfigError(
                f"a graph is named {RESUME_TOOL!r}, the tool that continues paused runs",
                code=ErrorCode.DUPLICATE_GRAPH,
                hint="rename the graph (GraphName column)",
            )

    def tools(self) -> list[types.Tool]:
        """Every tool, as `tools/list` returns them."""
        from mcp import types

        found = [
            types.Tool(name=a.graph_id, description=describe(a), inputSchema=self.schemas[a.graph_id])
            for a in self.assistants.all
        ]
        if self.pausing:
            schema = {
                "type": "object",
                "properties": {
                    "thread_id": {"type": "string", "description": "The thread id a paused run returned."},
                    "answer": {"description": "The answer to the paused node's question."},
                },
                "required": ["thread_id"],
                "additionalProperties": False,
            }
            text = f"Continue a paused run of {', '.join(sorted(self.pausing))} with the answer to its question."
            found.append(types.Tool(name=RESUME_TOOL, description=text, inputSchema=schema))
        return found

    async def call(self, server: Server[Any, Any], name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """Run the tool `name`; a bad call raises `McpError` (a JSON-RPC error naming the argument)."""
        if name == RESUME_TOOL and self.pausing:
            return await self._resume(server, arguments)
        assistant = self.assistants.get(name)
        if assistant is None or assistant.graph_id != name:
            raise invalid_params(f"unknown tool {name!r}; tools: {', '.join(self.schemas)}")
        try:
            state = check_arguments(name, self.schemas[name], arguments)
        except ArgumentError as err:
            raise invalid_params(err) from None
        thread_id = str(uuid.uuid4()) if name in self.pausing else None  # a run that can pause keeps a thread
        progress = _Progress(server.request_context)
        return await self._drive(server, assistant, await self.runs.start(assistant, state, thread_id, progress))

    async def _resume(self, server: Server[Any, Any], arguments: Mapping[str, Any]) -> types.CallToolResult:
        thread_id = arguments.get("thread_id")
        if not isinstance(thread_id, str) or not thread_id:
            raise invalid_params(f"tool {RESUME_TOOL!r}: missing required argument 'thread_id' (a text)")
        if not await self.runs.visible(thread_id, server.request_context):  # another user's: as if there were none
            raise invalid_params(_unknown_thread(thread_id))
        assistant = self._owner(thread_id)
        answer = arguments.get("answer")  # as the client sent it: `check_answer` decides what it means
        try:
            await asyncio.to_thread(check_answer_fits, assistant, thread_id, answer)
        except AgentMapError as err:
            raise invalid_params(err, where=f"tool {RESUME_TOOL!r}: argument 'answer'") from None
        progress = _Progress(server.request_context)
        leg = await self.runs.answer(assistant, thread_id, answer, progress)
        return await self._drive(server, assistant, leg)

    async def _drive(self, server: Server[Any, Any], assistant: Assistant, leg: Leg) -> types.CallToolResult:
        """From a run's first leg to its end, asking the client whenever the run pauses and it can answer."""
        ctx = server.request_context
        while True:
            if leg.error is not None:
                return _stopped(assistant, leg.error)
            if not leg.interrupts or leg.thread_id is None:
                return _finished(assistant, leg)
            asked = await elicit(ctx, leg.interrupts)
            if asked.refused is not None:
                return _still_paused(assistant, leg.values, leg.interrupts, leg.thread_id, asked.refused)
            if asked.answer is None:
                return _paused(assistant, leg.values, leg.interrupts, leg.thread_id)
            leg = await self.runs.answer(assistant, leg.thread_id, asked.answer.value, _Progress(ctx))

    def _owner(self, thread_id: str) -> Assistant:
        """The pausing graph whose run wrote thread `thread_id` (read from its checkpoint's metadata)."""
        from agentmap.runtime.threads import FILE_KEY, GRAPH_KEY, thread_config

        saver: Any = self.assistants.all[0].app.graph.checkpointer  # one saver for every graph
        saved = saver.get_tuple(thread_config(thread_id))
        meta = dict(saved.metadata or {}) if saved else {}
        for a in self.assistants.all:
            file = str(Path(str(a.app.spec.file)).resolve())
            if a.graph_id in self.pausing and meta.get(GRAPH_KEY) == a.app.name and meta.get(FILE_KEY) == file:
                return a
        raise invalid_params(_unknown_thread(thread_id))


def _unknown_thread(thread_id: str) -> str:
    return f"tool {RESUME_TOOL!r}: unknown thread {thread_id!r}; give the thread id a paused run returned"


def _answers_over_mcp(assistant: Assistant) -> bool:
    """False (with a warning) for a graph whose `input` node would read stdin: the protocol's own pipe."""
    prompting = assistant.app.prompting_nodes()
    if prompting:
        _log.warning(
            "graph %r is not offered: its input node %r reads the terminal, which an MCP client cannot answer; "
            'give it Context {"interrupt": true} to pause the run and ask the client',
            assistant.graph_id,
            prompting[0],
        )
    return not prompting


@dataclass
class Leg:
    """One leg of a tool call's run (to its end or its next pause).

    Attributes:
        thread_id: The run's thread (None for a graph that cannot pause: its run keeps none).
        values: The final state (without `__interrupt__`).
        interrupts: The questions it paused on (each with `id` and `value`).
        summary: The nodes run (each with `name` and `success`).
        success: The success policy's verdict.
        error: Why an error stopped the run (one paragraph), or None.
    """

    thread_id: str | None
    values: dict[str, Any] = field(default_factory=dict)
    interrupts: list[Any] = field(default_factory=list)
    summary: Sequence[Any] = ()
    success: bool = True
    error: str | None = None


class Runs(Protocol):
    """Where a tool call's run runs: `start` a graph's run, `answer` a paused one (an answer that does not fit, or
    a thread with nothing to resume, raises `invalid_params`); each reports a node as it finishes. `visible` says
    whether the caller (the request of `ctx`, the SDK's request context) may see a thread at all."""

    async def visible(self, thread_id: str, ctx: Any) -> bool: ...

    async def start(
        self, assistant: Assistant, state: dict[str, Any], thread_id: str | None, progress: _Progress
    ) -> Leg: ...

    async def answer(self, assistant: Assistant, thread_id: str, answer: Any, progress: _Progress) -> Leg: ...


class LocalRuns:
    """Runs in this process, through the graph's `astream` (`agentmap mcp`: one client, every thread its own)."""

    async def visible(self, thread_id: str, ctx: Any) -> bool:
        return True

    async def start(
        self, assistant: Assistant, state: dict[str, Any], thread_id: str | None, progress: _Progress
    ) -> Leg:
        app = assistant.app if thread_id else assistant.stateless
        return await _stream(app, state, thread_id, progress)

    async def answer(self, assistant: Assistant, thread_id: str, answer: Any, progress: _Progress) -> Leg:
        """Continue the paused thread on the revision it runs (`Thread.app`), whatever the file holds now."""
        thread = assistant.app.thread(thread_id)
        try:
            run_input = await thread.arun_input(answer)
            app = await asyncio.to_thread(lambda: thread.app)  # compiled by arun_input already
        except AgentMapError as err:
            raise invalid_params(err) from None
        return await _stream(app, run_input, thread_id, progress)


async def _stream(app: CompiledWorkflow, run_input: Any, thread_id: str | None, progress: _Progress) -> Leg:
    """One leg of a run through `astream`; an error that stops the run is the leg's `error`."""
    config: Any = {"configurable": {"thread_id": thread_id}} if thread_id else {}
    tracker = app.new_tracker()
    final: dict[str, Any] = {}
    interrupts: list[Any] = []
    stream = app.astream(run_input, config, tracker=tracker, stream_mode=["values", "updates"])
    try:
        async with aclosing(stream) as chunks:  # closed on the client's cancellation: the graph stops after its step
            async for mode, chunk in chunks:
                if mode == "values":
                    final = dict(chunk)
                    interrupts = list(final.pop("__interrupt__", ())) or interrupts
                elif isinstance(chunk, dict):
                    if "__interrupt__" in chunk:
                        interrupts = list(chunk["__interrupt__"])
                    for node in chunk:
                        if node != "__interrupt__":
                            await progress.finished(node)
    except Exception as err:  # the run stopped (a router naming no node, the recursion limit, ...)
        _log.debug("a run of graph %r stopped", app.name, exc_info=err)
        return Leg(thread_id, error=_why(err))
    return Leg(thread_id, final, interrupts, tracker.summary, tracker.update_graph_success())


def _why(err: Exception) -> str:
    """An error that stopped a run, in one paragraph."""
    if isinstance(err, AgentMapError):
        return f"{err.message} ({err.hint})" if err.hint else err.message
    return f"{type(err).__name__}: {' '.join(str(err).split())}"


class _Progress:
    """Progress notifications of one tool call (none when the client sent no progress token)."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.token = getattr(ctx.meta, "progressToken", None) if ctx.meta else None
        self.done = 0

    async def finished(self, node: str) -> None:
        if self.token is None:
            return
        self.done += 1
        await self.ctx.session.send_progress_notification(
            self.token, float(self.done), message=f"{node} finished", related_request_id=str(self.ctx.request_id)
        )


def _finished(assistant: Assistant, leg: Leg) -> types.CallToolResult:
    from mcp import types

    from agentmap.server._encode import jsonable

    state = jsonable({**leg.values, "graph_success": leg.success})
    text = reply(assistant, leg.values, leg.summary, leg.success)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structuredContent=state, isError=not leg.success
    )


def _stopped(assistant: Assistant, why: str) -> types.CallToolResult:
    """The result of a run an error stopped: its message in one paragraph (the traceback only in the debug log)."""
    from mcp import types

    text = f"graph {assistant.graph_id!r} stopped: {why}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)


def _paused(
    assistant: Assistant, final: dict[str, Any], interrupts: Sequence[Any], thread_id: str
) -> types.CallToolResult:
    from mcp import types

    from agentmap.server._encode import jsonable

    questions = [
        {"id": i.id, **(i.value if isinstance(i.value, Mapping) else {"question": i.value})} for i in interrupts
    ]
    asked = "; ".join(f"{q.get('node', '?')} asks: {q.get('question', '')}" for q in questions)
    stop = "" if asked.endswith((".", "?", "!")) else "."  # a question keeps its own mark: not `?.`
    text = (
        f"graph {assistant.graph_id!r} paused: {asked}{stop} Answer with the {RESUME_TOOL!r} tool: "
        f'{{"thread_id": "{thread_id}", "answer": ...}}'
    )
    content = {"status": "paused", "thread_id": thread_id, "questions": jsonable(questions), "state": jsonable(final)}
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structuredContent=content)


def _still_paused(
    assistant: Assistant, final: dict[str, Any], interrupts: Sequence[Any], thread_id: str, refused: str
) -> types.CallToolResult:
    """A tool error after `ASKS` elicited answers that did not fit: the run stays paused, to answer with `resume`."""
    from mcp import types

    paused = _paused(assistant, final, interrupts, thread_id)
    text = (
        f"graph {assistant.graph_id!r} stays paused: {ASKS} answers did not fit, the last: {refused}. Answer with the "
        f'{RESUME_TOOL!r} tool: {{"thread_id": "{thread_id}", "answer": ...}}'
    )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structuredContent=paused.structuredContent, isError=True
    )


def invalid_params(message: str | AgentMapError, *, where: str | None = None) -> Exception:
    """A JSON-RPC "invalid params" error: the call, not the run, was wrong (its code and hint in `data`); `where`
    names the argument at fault ahead of the message."""
    from mcp import types
    from mcp.shared.exceptions import McpError

    before = f"{where}: " if where else ""
    if isinstance(message, AgentMapError):
        data = {"code": str(message.code), **({"hint": message.hint} if message.hint else {})}
        text = f"{message.message} ({message.hint})" if message.hint else message.message
        return McpError(types.ErrorData(code=types.INVALID_PARAMS, message=before + text, data=data))
    return McpError(types.ErrorData(code=types.INVALID_PARAMS, message=before + message))


def build_server(graphs: McpGraphs) -> Server[Any, Any]:
    """The MCP server of `graphs` (transport-free: `server.run(read, write, options)`)."""
    from mcp import types
    from mcp.server.lowlevel import Server

    server: Server[Any, Any] = Server("agentmap", version=__version__)

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return graphs.tools()

    async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
        # our own handler, not the SDK's decorator: a bad call is a JSON-RPC error, not a failed run
        result = await graphs.call(server, request.params.name, request.params.arguments or {})
        return types.ServerResult(result)

    server.request_handlers[types.CallToolRequest] = call_tool
    return server
