"""Nodes that pause the run until someone answers: `human` and `suspend` (and `input` with `interrupt: true`).

Each builds its question with `questions.question`, hands it to LangGraph's `interrupt()`, and checks the
value the run is resumed with (`Command(resume=...)`, `agentmap run --resume`) with `check_answer`. An
answer that does not fit asks again, the refusal in the question's `error`, so the run stays paused.
A paused run needs a checkpointer; without one the node fails saying what to pass.
Context keys are documented in csv_specs/human.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem
from agentmap.agents.builtins import InputAgent, safe_format
from agentmap.agents.findings import ConfigWarning
from agentmap.agents.questions import AnswerError, check_answer, inbox_fields, question
from agentmap.agents.registry import agent

__all__ = [
    "INTERACTION_TYPES",
    "MESSAGING_KEYS",
    "HumanAgent",
    "SuspendAgent",
    "ask",
    "pauses_run",
    "require_checkpointer",
]

INTERACTION_TYPES = ("text_input", "approval", "choice", "edit", "conversation")
MESSAGING_KEYS = tuple(
    f"{event}_message{suffix}" if suffix else f"send_{event}_message"
    for event in ("suspend", "resume", "graph")
    for suffix in ("", "_template", "_topic")
)
"""The existing AgentMap's messaging Context keys of `suspend`; accepted, but nothing is sent."""


def require_checkpointer(node: str, kind: str) -> None:
    """Raise, saying what to pass, when the running graph has no checkpointer to resume a pause from.

    LangGraph pauses without one too, but then the run can never be resumed. The configurable key is
    LangGraph's own; should a release rename it, the check is skipped rather than refusing every run.
    """
    from langgraph.config import get_config

    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:  # not inside a graph run
        return
    from agentmap._langgraph import CHECKPOINTER_KEY

    if CHECKPOINTER_KEY in configurable and configurable[CHECKPOINTER_KEY] is None:
        raise RuntimeError(
            f"{kind} node {node!r} pauses the run for an answer and needs a checkpointer to resume it: pass "
            'checkpointer="memory" or "runs.db" to agentmap.compile, or --checkpoint runs.db to agentmap run'
        )


def pauses_run(agent_class: type[BaseAgent], context: Mapping[str, Any]) -> bool:
    """Whether a node of `agent_class` with `context` pauses the run for an answer (so needs a checkpointer).

    `human` and `suspend` nodes (and their subclasses) always do; an `input` node with Context `interrupt: true`.
    """

    if issubclass(agent_class, _WaitingAgent):
        return True
    return issubclass(agent_class, InputAgent) and context.get("interrupt") is True


def ask(payload: dict[str, Any]) -> Any:
    """Pause with `payload` (a `question(...)`) and return the checked answer.

    An answer that does not fit pauses again with the same question plus `error` (what was wrong and what
    fits), until one fits.
    """
    from langgraph.types import interrupt

    require_checkpointer(str(payload.get("node")), str(payload.get("kind")))
    current = payload
    while True:
        answer = interrupt(current)
        try:
            return check_answer(payload, answer)
        except AnswerError as exc:
            current = {**payload, "error": f"{exc.message}; {exc.hint}" if exc.hint else exc.message}
            current.update(inbox_fields(current))  # the agent inbox's description tells the error too


def _prompt_text(agent: BaseAgent, inputs: Mapping[str, Any], fallback: str) -> str:
    if not agent.prompt:
        return fallback

    try:
        return safe_format(agent.prompt, inputs).strip()
    except (KeyError, ValueError, IndexError):
        return agent.prompt.strip()  # as the existing AgentMap did: the prompt as written


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


class _WaitingAgent(BaseAgent):
    """What `human` and `suspend` share: they always pause, and `timeout_seconds` is theirs to show."""

    own_timeout = True  # timeout_seconds is how long the person may take, shown with the question

    @classmethod
    def may_pause(cls, context: Mapping[str, Any]) -> bool:
        """Always: the node waits for an answer."""
        return True


@agent("human")
class HumanAgent(_WaitingAgent):
    """Pauses the run for a person's answer, checked against the kind of question.

    Context:
        interaction_type: `text_input` (default), `approval`, `choice` (with `options`), `edit` (the first
            input is the text to edit), `conversation`.
        options: The answers a `choice` allows.
        timeout_seconds: How long the answer may take; shown with the question (nothing wakes a paused run).
        default_action / default_option: The answer an empty answer (`""`, or `null`) takes.
        on_reject: `fail` makes a rejected approval fail the node (take Failure_Next); by default a
            rejection is an answer like any other and writes false.
    """

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> Sequence[ConfigProblem]:
        """Known interaction type, options for a choice, a positive timeout, a default that fits."""
        problems: list[ConfigProblem] = []
        kind = str(context.get("interaction_type", "text_input")).strip().lower()
        if kind not in INTERACTION_TYPES:
            problems.append(
                ConfigWarning(
                    f"unknown interaction_type {context.get('interaction_type')!r}; text_input is assumed "
                    f"(use one of {', '.join(INTERACTION_TYPES)})"
                )
            )
            kind = "text_input"
        options = context.get("options", [])
        if not isinstance(options, list):
            problems.append(f'Context options must be a list, e.g. ["agile", "lean"], not {options!r}')
        elif kind == "choice" and not options:
            problems.append(
                'a choice needs Context options, e.g. {"interaction_type": "choice", "options": ["a", "b"]}'
            )
        timeout = context.get("timeout_seconds")
        if timeout is not None and not _is_number(timeout):
            problems.append(f"Context timeout_seconds must be a positive number of seconds, not {timeout!r}")
        if context.get("on_reject") not in (None, "fail", "continue"):
            problems.append(f'Context on_reject must be "fail" or "continue", not {context.get("on_reject")!r}')
        default = cls._default(context)
        if default is not None and isinstance(options, list):
            try:
                check_answer(question("", "human", "", interaction=kind, options=options), default)
            except AnswerError as exc:
                problems.append(
                    ConfigWarning(f"the default answer {default!r} does not fit, so it is ignored: {exc.hint}")
                )
        return problems

    @staticmethod
    def _default(context: Mapping[str, Any]) -> Any:
        return context.get("default_option", context.get("default_action"))

    def question_for(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The question this node asks for `inputs`."""
        kind = str(self.context.get("interaction_type", "text_input")).strip().lower()
        kind = kind if kind in INTERACTION_TYPES else "text_input"
        extra: dict[str, Any] = {}
        options = self.context.get("options") if kind == "choice" else None
        if self.context.get("timeout_seconds") is not None:
            extra["timeout_seconds"] = self.context["timeout_seconds"]
        default = self._default(self.context)
        if default is not None:
            try:
                check_answer(question(self.name, "human", "", interaction=kind, options=options or ()), default)
                extra["default"] = default
            except AnswerError:
                pass  # reported by validate as ignored
        if kind == "edit" and inputs:
            extra["value"] = next(iter(inputs.values()))
        text = _prompt_text(self, inputs, f"{self.name}: your answer?")
        return question(self.name, "human", text, interaction=kind, options=options or (), **extra)

    def process(self, inputs: dict[str, Any]) -> Any:
        """Pause, then return the answer: text, the chosen option, or true/false for an approval."""
        payload = self.question_for(inputs)
        answer = ask(payload)
        if payload["interaction"] != "approval":
            return answer
        approved = bool(answer["approved"])
        if not approved and self.context.get("on_reject") == "fail":
            raise RuntimeError(f"{self.name!r} was rejected" + (f": {answer['note']}" if answer.get("note") else ""))
        return approved if set(answer) == {"approved"} else answer


@agent("suspend")
class SuspendAgent(_WaitingAgent):
    """Pauses the run until an external event resumes it, and returns whatever the resumer sent.

    Context:
        reason / external_ref: Shown with the question (what is awaited, and from where).
        send_suspend_message, send_resume_message, send_graph_message and their `_template` / `_topic`
        keys: accepted for existing workflows; AgentMap has no notifier, so nothing is sent (validation
        warns; the paused run's question is how the waiting party learns of it).
    """

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> Sequence[ConfigProblem]:
        """Warn that messaging keys send nothing."""
        asked = [key for key in MESSAGING_KEYS if key in context]
        if not asked:
            return []
        return [
            ConfigWarning(
                f"Context {', '.join(asked)}: no notifier is configured, so no message is sent when the run pauses "
                "or resumes; whoever resumes it learns of the pause from the run's question (agentmap run prints it)"
            )
        ]

    def process(self, inputs: dict[str, Any]) -> Any:
        """Pause, then return the value the run was resumed with, unchanged."""
        extra: dict[str, Any] = {k: self.context[k] for k in ("reason", "external_ref") if k in self.context}
        asked = [key for key in MESSAGING_KEYS if key.startswith("send_") and key in self.context]
        if asked:
            extra["not_sent"] = asked
        text = _prompt_text(self, inputs, f"{self.name} waits for an external event")
        return ask(question(self.name, "suspend", text, interaction="event", **extra))
