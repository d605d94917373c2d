"""A run's events (`values`, `messages-tuple`, `nodes`, as the server records and shares them) as AG-UI events.

- The run starts: `RUN_STARTED` (the client's `runId`; the server's run id in `metadata.agentmap.run_id`).
- A node starts, ends or pauses: `STEP_STARTED`, `STEP_FINISHED` (`stepName`: the node).
- A model's reply as it streams: `TEXT_MESSAGE_START`, a `TEXT_MESSAGE_CONTENT` per chunk, `TEXT_MESSAGE_END`.
- The state after each step: `STATE_SNAPSHOT`.
- The end: the graph's reply as a text message (unless the last streamed message said it), then `RUN_FINISHED`
  with the final state as `result`.
- A pause: a `CUSTOM` event `on_interrupt` per question (its value the question as JSON text, as `ag-ui-langgraph`
  sends it), then `RUN_FINISHED`, whose `outcome` is `interrupt` for a client that declared AG-UI 1.0.
- A failure: `RUN_ERROR` (the error's message and code; for a failed success policy, the graph's reply).
- A cancel: `RUN_FINISHED` with `outcome` `cancelled` (1.0), else `RUN_ERROR`.

Each event is built with the protocol's own models (`ag-ui-protocol`), and the stream keeps its rules (a step or a
message is closed before the run's end, never opened twice), which the AG-UI client verifies.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from agentmap.agents.questions import is_question
from agentmap.protocols._tools import reply

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent

    from agentmap.server._graphs import Assistant

__all__ = ["Translation"]

_INTERRUPT_EVENT = "on_interrupt"
"""The name of the custom event of a pause, as `ag-ui-langgraph` (and CopilotKit's `useLangGraphInterrupt`) use it."""


class Translation:
    """The AG-UI events of one run: `started`, then `event` for each of the run's events, then `finished` (or `paused`
    alone, for a thread that waits on a question with no run made)."""

    def __init__(self, assistant: Assistant, thread_id: str, run_id: str, *, versioned: bool) -> None:
        self.assistant = assistant
        self.thread_id = thread_id
        self.run_id = run_id
        self.versioned = versioned
        """The client declared an AG-UI version (1.0): it is told a pause and a cancel in `RUN_FINISHED.outcome`."""
        self.steps: Counter[str] = Counter()
        self.message: tuple[str | None, str] | None = None
        """The text message open now: the model's message id (None for one without) and the id sent."""
        self.sent: set[str] = set()
        self.last_text = ""
        self.summary: list[Any] = []

    def started(self, server_run_id: str | None) -> list[BaseEvent]:
        from ag_ui.core import PROTOCOL_VERSION, RunStartedEvent

        return [
            RunStartedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                protocol_version=PROTOCOL_VERSION if self.versioned else None,
                metadata={"agentmap": {"run_id": server_run_id}} if server_run_id else None,
            )
        ]

    def event(self, event: str, data: Any) -> list[BaseEvent]:
        """The AG-UI events of one of the run's events (none for those AG-UI has no word for)."""
        from ag_ui.core import StateSnapshotEvent

        if event == "values" and isinstance(data, Mapping):
            return [StateSnapshotEvent(snapshot={k: v for k, v in data.items() if k != "__interrupt__"})]
        if event == "messages" and isinstance(data, list) and len(data) == 2:
            return self._chunk(data[0])
        if event == "nodes" and isinstance(data, Mapping):
            return self._node(str(data.get("node")), data.get("status"))
        if event == "nodes/summary" and isinstance(data, Mapping):
            self.summary = [SimpleNamespace(**e) for e in data.get("summary", ())]
        return []

    def finished(self, result: Mapping[str, Any], *, cancelled: bool) -> list[BaseEvent]:
        """The run's last events, from what it ended with (`RunAcceptance.outcome`)."""
        from ag_ui.core import RunErrorEvent, RunFinishedEvent

        events = self._close()
        error = result.get("__error__")
        if isinstance(error, Mapping):
            return [*events, RunErrorEvent(message=str(error.get("message")), code=_code(error.get("code")))]
        values = {k: v for k, v in result.items() if k != "__interrupt__"}
        if cancelled:
            if not self.versioned:
                return [*events, RunErrorEvent(message=f"the run on thread {self.thread_id!r} was cancelled")]
            from ag_ui.core import RunFinishedCancelledOutcome

            return [*events, self._finish(RunFinishedCancelledOutcome(), values)]
        waiting = result.get("__interrupt__")
        if waiting:
            return [*events, *self._asked(waiting, values)]
        success = bool(values.get("graph_success", True))
        text = reply(self.assistant, values, self.summary, success)
        if not success:
            return [*events, RunErrorEvent(message=text)]
        if text.strip() != self.last_text.strip():
            events += self._text(str(uuid.uuid4()), text)
        return [*events, RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, result=values)]

    def paused(self, waiting: Sequence[Any], values: Mapping[str, Any]) -> list[BaseEvent]:
        """The events telling a client that the thread waits on `waiting` (`{"id": ..., "value": question}` each),
        with no run made: a run's start, the thread's state, and the end of a paused run."""
        from ag_ui.core import StateSnapshotEvent

        return [*self.started(None), StateSnapshotEvent(snapshot=dict(values)), *self._asked(waiting, values)]

    def _asked(self, waiting: Sequence[Any], values: Mapping[str, Any]) -> list[BaseEvent]:
        """The end of a run paused on `waiting`: a custom event per question, then `RUN_FINISHED`."""
        from ag_ui.core import CustomEvent, Interrupt, RunFinishedInterruptOutcome

        asked = [w for w in waiting if isinstance(w, Mapping)]
        events: list[BaseEvent] = [CustomEvent(name=_INTERRUPT_EVENT, value=json.dumps(w.get("value"))) for w in asked]
        interrupts = [
            Interrupt(
                id=str(w.get("id")),
                reason=_reason(w.get("value")),
                message=_message(w.get("value")),
                metadata={"agentmap": {"question": w.get("value")}},
            )
            for w in asked
        ]
        outcome = RunFinishedInterruptOutcome(interrupts=interrupts) if self.versioned and interrupts else None
        return [*events, self._finish(outcome, values)]

    def _finish(self, outcome: Any, values: Mapping[str, Any]) -> BaseEvent:
        from ag_ui.core import RunFinishedEvent

        return RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome, result=dict(values))

    def _node(self, node: str, status: Any) -> list[BaseEvent]:
        from ag_ui.core import StepFinishedEvent, StepStartedEvent

        if status == "running":
            self.steps[node] += 1
            return [StepStartedEvent(step_name=node)] if self.steps[node] == 1 else []
        if self.steps[node] == 0:  # an earlier run's node, told first on a resumed thread
            return []
        self.steps[node] -= 1
        return [*self._close_message(), StepFinishedEvent(step_name=node)] if self.steps[node] == 0 else []

    def _chunk(self, message: Any) -> list[BaseEvent]:
        """A model's message or chunk of one (`messages-tuple`): its text, in the message it belongs to."""
        if not isinstance(message, Mapping) or message.get("type") not in ("ai", "AIMessageChunk"):
            return []
        key = message.get("id") if isinstance(message.get("id"), str) else None
        events: list[BaseEvent] = []
        if self.message is not None and (key is None or key != self.message[0]):
            events += self._close_message()
        text = _text(message.get("content"))
        if text and self.message is None:
            sent = key if key is not None and key not in self.sent else str(uuid.uuid4())
            self.message = (key, sent)
            self.sent.add(sent)
            self.last_text = ""
            events.append(_start(sent))
        if text and self.message is not None:
            from ag_ui.core import TextMessageContentEvent

            events.append(TextMessageContentEvent(message_id=self.message[1], delta=text))
            self.last_text += text
        whole = message.get("type") == "ai" or message.get("chunk_position") == "last"
        return events + (self._close_message() if whole else [])

    def _close_message(self) -> list[BaseEvent]:
        from ag_ui.core import TextMessageEndEvent

        if self.message is None:
            return []
        sent, self.message = self.message[1], None
        return [TextMessageEndEvent(message_id=sent)]

    def _close(self) -> list[BaseEvent]:
        """End the open message and steps (a run stopped mid-step)."""
        from ag_ui.core import StepFinishedEvent

        events = self._close_message()
        events += [StepFinishedEvent(step_name=node) for node, open_ in self.steps.items() if open_]
        self.steps.clear()
        return events

    def _text(self, message_id: str, text: str) -> list[BaseEvent]:
        from ag_ui.core import TextMessageContentEvent, TextMessageEndEvent

        if not text:
            return []
        content = TextMessageContentEvent(message_id=message_id, delta=text)
        return [_start(message_id), content, TextMessageEndEvent(message_id=message_id)]


def _start(message_id: str) -> BaseEvent:
    from ag_ui.core import TextMessageStartEvent

    return TextMessageStartEvent(message_id=message_id, role="assistant")


def _text(content: Any) -> str:
    """A message's text: its content when text, else its text blocks (as LangChain's `message.text` reads them)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b["text"]) if isinstance(b, Mapping) and b.get("type") == "text" else b if isinstance(b, str) else ""
            for b in content
        )
    return ""


def _code(code: Any) -> str | None:
    return str(code) if code else None


def _reason(value: Any) -> str:
    """Why the run stopped, for a front end to choose how to ask: `agentmap:approval`, `agentmap:choice`, ..."""
    return f"agentmap:{value.get('interaction', 'any')}" if is_question(value) else "langgraph:interrupt"


def _message(value: Any) -> str | None:
    if is_question(value):
        return str(value.get("question", ""))
    return value if isinstance(value, str) else None
