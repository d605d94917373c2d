"""An AG-UI request (`RunAgentInput`) as a run of the server (`agui.py`): the answer it gives a paused thread, or the
graph's input it carries, each checked before a run is made of it and refused naming the request's field.

- **An answer** comes in `resume` (AG-UI 1.0: one entry per waiting interrupt, its `payload` the answer) or in
  `forwardedProps.command.resume` (the channel `ag-ui-langgraph` reads; text there is read as typed text, as
  `agentmap resume` reads it). Each is checked against its question by the one answer rule (`check_answer`, then
  `Thread.run_input` when the run is made), never coerced first.
- **The input** is the graph's input keys found in `state` (the rest of `state` is what the server last sent the
  client, sent back), and the text of the newest user message for a graph with one input key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentmap.errors import AgentMapError, ErrorCode
from agentmap.protocols._tools import check_arguments, input_schema
from agentmap.protocols.a2a_messages import input_keys
from agentmap.runtime.durable import answers_for
from agentmap.server._models import THREAD_ID_RULE, ApiError, RunCreate, valid_thread_id

if TYPE_CHECKING:
    from ag_ui.core import RunAgentInput
    from langgraph.types import Interrupt

    from agentmap.server._app import Server
    from agentmap.server._filters import Filter
    from agentmap.server._graphs import Assistant

__all__ = ["MODES", "Plan", "plan_run"]

MODES = ("values", "messages-tuple", "nodes")
"""The run's stream modes the AG-UI events are made of: the state after each step, the models' tokens, the nodes."""


@dataclass(frozen=True)
class Plan:
    """What a request does: start `body` on the thread, or (no body) tell the client what the thread waits for."""

    body: RunCreate | None
    waiting: list[dict[str, Any]] = field(default_factory=list)
    """The questions a paused thread waits on, `{"id": ..., "value": question}`, when no answer was given."""
    values: dict[str, Any] = field(default_factory=dict)
    """The paused thread's state, when no answer was given."""


def plan_run(server: Server, assistant: Assistant, request: RunAgentInput, visible: Filter | None = None) -> Plan:
    """The run a request asks for, checked against the graph and the thread (reads the thread's checkpoint: call it
    in a worker thread); a thread the caller's filter `visible` hides (another user's, `--auth`) is read as none.

    Raises:
        ApiError: 422 for a field that does not fit (the thread id, the input, an answer), naming it.
    """
    thread_id = request.thread_id
    if not valid_thread_id(thread_id):
        shown = thread_id[:40].encode("utf-8", "backslashreplace").decode()
        raise ApiError(422, "bad-request", f"threadId {shown!r} is refused: {THREAD_ID_RULE}", hint="e.g. a UUID")
    given = _answer(request)
    snapshot = _snapshot(server, assistant, thread_id, visible)
    pending: tuple[Interrupt, ...] = tuple(snapshot.interrupts) if snapshot is not None else ()
    metadata = {"agui_run_id": request.run_id}
    if given is not None:
        where, answer = given
        if pending:
            _check_answer(thread_id, pending, where, answer)
        command = {"resume": answer}
        return Plan(
            RunCreate(assistant_id=assistant.assistant_id, command=command, stream_mode=list(MODES), metadata=metadata)
        )
    if snapshot is not None and pending:  # a new message skips no question: the thread's is told again (as
        waiting = [{"id": i.id, "value": i.value} for i in pending]  # ag-ui-langgraph does)
        return Plan(None, waiting, dict(snapshot.values))
    state = run_input(assistant, request)
    return Plan(
        RunCreate(
            assistant_id=assistant.assistant_id,
            input=state,
            if_not_exists="create",
            stream_mode=list(MODES),
            metadata=metadata,
        )
    )


def _snapshot(server: Server, assistant: Assistant, thread_id: str, visible: Filter | None) -> Any:
    """The thread's state (None for a thread not made yet, bound to another graph, or hidden by the caller's filter
    `visible`: the run's start refuses those), read through `server.snapshot`, as the thread routes read it: by the
    graph of the revision the thread runs, whatever its file holds now."""
    try:
        record = server.thread(thread_id, visible)
    except ApiError as err:
        if err.status == 404:
            return None
        raise
    if record.metadata.get("graph_id") not in (None, assistant.graph_id):
        return None
    return server.snapshot(record)


def _answer(request: RunAgentInput) -> tuple[str, Any] | None:
    """Where the request answers a pause and the answer as sent (`resume`: `{interrupt id: payload}`), or None."""
    props = request.forwarded_props
    command = props.get("command") if isinstance(props, Mapping) else None
    legacy: tuple[str, Any] | None = None
    if command is not None:
        if not isinstance(command, Mapping):
            raise ApiError(422, "bad-request", "forwardedProps.command must be an object", hint='{"resume": ANSWER}')
        for key in command:
            if key != "resume":
                raise ApiError(
                    422,
                    "not-supported",
                    f"forwardedProps.command.{key} is not supported by agentmap serve",
                    hint='answer a pause with forwardedProps.command = {"resume": ANSWER}, or with resume entries',
                )
        if command.get("resume") is not None:
            from agentmap.agents.questions import typed_answer

            resume = command["resume"]
            legacy = ("forwardedProps.command.resume", typed_answer(resume) if isinstance(resume, str) else resume)
    entries = list(request.resume or ())
    if entries and legacy is not None:
        raise ApiError(
            422,
            "bad-request",
            "the request answers twice: in resume and in forwardedProps.command.resume",
            hint="send the answer in one of them (resume, one entry per waiting interrupt, is AG-UI's own)",
        )
    if not entries:
        return legacy
    answers: dict[str, Any] = {}
    for n, entry in enumerate(entries):
        if entry.status != "resolved":
            raise ApiError(
                422,
                ErrorCode.BAD_ANSWER,
                f"resume[{n}].status: {entry.status!r} gives no answer, and a paused AgentMap node waits for one",
                hint='answer it: {"interruptId": ..., "status": "resolved", "payload": ANSWER}',
            )
        if entry.interrupt_id in answers:
            raise ApiError(
                422, ErrorCode.BAD_ANSWER, f"resume[{n}].interruptId: {entry.interrupt_id!r} is answered twice"
            )
        answers[entry.interrupt_id] = entry.payload
    return ("resume", answers)


def _check_answer(thread_id: str, pending: tuple[Interrupt, ...], where: str, answer: Any) -> None:
    """Refuse an answer that does not fit what the thread asks (the run's start checks it again, and claims it)."""
    from agentmap.agents.questions import check_answer

    try:
        if where == "resume":
            questions = {i.id: i.value for i in pending}
            for n, (interrupt_id, payload) in enumerate(answer.items()):
                if interrupt_id not in questions:
                    raise ApiError(
                        422,
                        ErrorCode.BAD_ANSWER,
                        f"resume[{n}].interruptId: {interrupt_id!r} is not waiting on thread {thread_id!r}",
                        hint=f"it waits for: {', '.join(questions)}",
                    )
                where = f"resume[{n}].payload"
                check_answer(questions[interrupt_id], payload)
            where = "resume"
        answers_for(pending, answer, thread_id)
    except ApiError:
        raise
    except AgentMapError as err:
        code = ErrorCode.AMBIGUOUS_RESUME if err.code == ErrorCode.AMBIGUOUS_RESUME else ErrorCode.BAD_ANSWER
        raise ApiError(422, code, f"{where}: {err.message}", hint=err.hint) from None


def run_input(assistant: Assistant, request: RunAgentInput) -> dict[str, Any]:
    """The graph's input: its input keys found in `state`, and the newest user message's text for a graph with one
    input key (it wins over the same key in `state`, which holds the last turn's value when the client sends back
    the state it was sent).

    Raises:
        ApiError: 422 naming what does not fit: `state` not an object, a part of the message that is not text, an
            input missing or of the wrong type.
    """
    keys = input_keys(assistant)
    state = request.state
    if state is not None and not isinstance(state, Mapping):
        raise ApiError(422, ErrorCode.BAD_INPUT, f"state must be an object of state keys, not {type(state).__name__}")
    given = {k: state[k] for k in keys if state is not None and k in state}
    text = _newest_text(request.messages)
    if text is not None and len(keys) == 1:
        given[keys[0]] = text
    elif text is not None and len(keys) > 1 and any(k not in given for k in keys):
        raise ApiError(
            422,
            ErrorCode.BAD_INPUT,
            f"graph {assistant.graph_id!r} takes {len(keys)} input keys ({', '.join(keys)}), so a message's text is"
            " not its input",
            hint="send them in state: " + ", ".join(f"{k!r}: ..." for k in keys),
        )
    try:
        return check_arguments(assistant.graph_id, input_schema(assistant), given)
    except AgentMapError as err:
        raise ApiError(422, ErrorCode.BAD_INPUT, err.message, hint=err.hint) from None


def _newest_text(messages: Sequence[Any]) -> str | None:
    """The text of the last message when it is the user's (None otherwise: nothing new was said)."""
    if not messages or messages[-1].role != "user":
        return None
    content = messages[-1].content
    if isinstance(content, str):
        return content
    texts = []
    for n, part in enumerate(content):
        if part.type != "text":
            raise ApiError(
                422,
                ErrorCode.BAD_INPUT,
                f"messages[{len(messages) - 1}].content[{n}]: a {part.type!r} part is not read by an AgentMap graph",
                hint="send the message as text",
            )
        texts.append(part.text)
    return "\n".join(texts)
