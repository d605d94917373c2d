"""Asking an MCP client to answer a paused node's question (elicitation), for `mcp.py`'s tool calls.

Each pending question is asked as a one-field form (`_tools.answer_schema`); the form's values, as the client sent
them, are checked by `check_answer`, the rule of every channel: one that does not fit is asked again with the
reason before the question, `ASKS` times at most.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentmap.protocols._tools import answer_from_form, answer_schema

__all__ = ["ASKS", "Answer", "Asked", "elicit"]

ASKS = 3
"""Elicitations per question before the run is left paused for the `resume` tool."""


@dataclass
class Answer:
    """An answer the client gave (`value` may be None: an empty answer that takes the question's default)."""

    value: Any


@dataclass
class Asked:
    """What elicitation got: the checked answer, or none (the client cannot or would rather not answer now), or
    `refused`: the last refusal after `ASKS` answers that did not fit."""

    answer: Answer | None = None
    refused: str | None = None


async def elicit(ctx: Any, interrupts: Sequence[Any]) -> Asked:
    """The answers to the pending questions from the client (by interrupt id when several), each form's values
    checked by `check_answer` as the client sent them; one that does not fit is asked again with the reason."""
    from mcp import types

    from agentmap.agents.questions import AnswerError, check_answer

    if not ctx.session.check_client_capability(types.ClientCapabilities(elicitation=types.ElicitationCapability())):
        return Asked()
    answers: dict[str, Any] = {}
    for pending in interrupts:
        question = _question(pending.value)
        asked = str(question.get("question") or "Your answer?")
        message, refused = asked, ""
        for _ in range(ASKS):
            result = await ctx.session.elicit_form(message, answer_schema(question), related_request_id=ctx.request_id)
            if result.action != "accept":
                return Asked()
            try:
                answers[pending.id] = check_answer(pending.value, answer_from_form(question, result.content))
                break
            except AnswerError as err:
                refused = f"{err.message} ({err.hint})" if err.hint else err.message
                message = f"{refused}\n{asked}"
        else:
            return Asked(refused=refused)
    return Asked(Answer(next(iter(answers.values())) if len(answers) == 1 else answers))


def _question(value: Any) -> dict[str, Any]:
    """A paused node's question as a dict (an `interrupt()` of a custom agent may pass any value)."""
    return dict(value) if isinstance(value, Mapping) else {"question": value}
