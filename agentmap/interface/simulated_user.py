"""Simulated users: a model plays a scenario's `persona` toward its `goal`, one conversation per trial.

A scenario row with a `goal` is a simulated-user scenario (see csv_specs/evaluation.md, "Simulated users").
The runner asks the user for a message, sends it to the agent, checks `stop_when` on the reply (a quoted
phrase the agent says) or on the final state (a condition of the `expected_state` language), and goes on until
the goal is reached, the user says it is done, or `max_turns` user messages were sent.

Any configured model can play the user (`--user-model`, or the scenario's `user_model` cell). The `offline`
model follows a scripted policy derived from the goal, so demos and tests run anywhere:

1. The goal is cut into sentences (at `.`, `!`, `?` or `;`). Its first sentence is the request; the others are
   facts the user knows.
2. Turn 1 sends the request.
3. Later turns, after the agent's reply: with no `stop_when`, a reply that asks nothing (no `?`) ends the
   conversation (the user is done). Otherwise the user sends a fact not sent yet: the one sharing the most
   words with the reply when it asks a question, else the next in order.
4. With every fact sent, it is done when there is no `stop_when`; else it repeats the request, `I still need
   this: <request>`, until `stop_when` holds or `max_turns` is reached.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

from agentmap.interface.checks import check_state
from agentmap.llm.adapter import LLMAdapter
from agentmap.llm.models import build_model, model_spec

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = ["DEFAULT_MAX_TURNS", "DONE", "SimulatedUser", "UserPlayer", "make_player", "stop_reached"]

DEFAULT_MAX_TURNS = 10
"""User messages a simulated conversation may send when the scenario gives no `max_turns`."""

DONE = "DONE"
"""What an LLM playing the user answers, alone, once its goal is reached."""

_INSTRUCTIONS = """\
You are playing a user talking to an AI assistant, to test the assistant. Stay in character.
Persona: {persona}
Your goal: {goal}
Write only your next message to the assistant, in the first person, as this user would. Give the facts of your
goal when the assistant asks for them. Once your goal is reached, reply with exactly {done} and nothing else."""
_OPENING = "(The assistant is waiting for your first message.)"
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_WORD = re.compile(r"\w+")


class SimulatedUser(BaseModel):
    """What a simulated user plays: the scenario's `persona`, `goal`, `max_turns`, `stop_when`, `user_model`.

    Attributes:
        goal: What the user wants; the offline policy takes its request and facts from it.
        persona: Who the user is (for an LLM user; the offline policy ignores it).
        max_turns: The most user messages; a conversation that reaches it without the goal fails.
        stop_when: A quoted phrase the agent says (`"booking is confirmed"`) or a state condition; empty: the
            user decides when it is done.
        user_model: The model playing the user (`provider:model`); empty: `--user-model`, else `offline`.
    """

    model_config = ConfigDict(frozen=True)

    goal: str
    persona: str = ""
    max_turns: int = DEFAULT_MAX_TURNS
    stop_when: str = ""
    user_model: str = ""

    @property
    def phrase(self) -> str | None:
        """The phrase of a quoted `stop_when`, or None when it is a state condition (or empty)."""
        text = self.stop_when
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            return text[1:-1]
        return None


def stop_reached(user: SimulatedUser, reply: str, state: Mapping[str, Any] | None) -> bool:
    """True when the scenario's `stop_when` holds after the agent's `reply` (and its final `state`)."""
    if not user.stop_when:
        return False
    phrase = user.phrase
    if phrase is not None:
        return phrase.casefold() in reply.casefold()
    return state is not None and check_state(user.stop_when, state) is None


class UserPlayer(Protocol):
    """Plays the user: the next message given the conversation so far, or None when the user is done."""

    async def next_message(self, turns: Sequence[tuple[str, str]]) -> str | None: ...


class _OfflineUser:
    """The scripted policy of the module docstring."""

    def __init__(self, user: SimulatedUser) -> None:
        sentences = [s.strip() for s in _SENTENCE.split(user.goal.strip()) if s.strip()]
        self.request = sentences[0] if sentences else user.goal.strip()
        self.facts = sentences[1:]
        self.open_ended = not user.stop_when

    async def next_message(self, turns: Sequence[tuple[str, str]]) -> str | None:
        if not turns:
            return self.request
        sent = {text for role, text in turns if role == "user"}
        reply = turns[-1][1]
        asks = "?" in reply
        if self.open_ended and not asks:
            return None
        left = [fact for fact in self.facts if fact not in sent]
        if not left:
            return None if self.open_ended else f"I still need this: {self.request}"
        if not asks:
            return left[0]
        words = set(_WORD.findall(reply.casefold()))
        return max(left, key=lambda fact: len(words & set(_WORD.findall(fact.casefold()))))


class _LLMUser:
    """A chat model playing the persona; its reply `DONE` ends the conversation."""

    def __init__(self, user: SimulatedUser, model: Any) -> None:

        self.user = user
        self._adapter = LLMAdapter(model)

    def messages(self, turns: Sequence[tuple[str, str]]) -> list[BaseMessage]:
        """The messages sent to the model: the roles swapped, so the model speaks as the user."""
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

        persona = self.user.persona or "an ordinary user"
        messages: list[BaseMessage] = [
            SystemMessage(_INSTRUCTIONS.format(persona=persona, goal=self.user.goal, done=DONE)),
            HumanMessage(_OPENING),
        ]
        for role, text in turns:
            messages.append(AIMessage(text) if role == "user" else HumanMessage(text))
        return messages

    async def next_message(self, turns: Sequence[tuple[str, str]]) -> str | None:
        reply = await self._adapter.ainvoke(self.messages(turns))
        text = reply.text.strip()
        return None if text.strip(" .!\"'").upper() == DONE or not text else text


def make_player(user: SimulatedUser, default_model: str | None, settings: Mapping[str, Any] | None) -> UserPlayer:
    """The player for one trial: the scripted policy for `offline`, else the configured chat model.

    Raises:
        ConfigError: When the model cannot be built (unknown provider, missing extra or API key).
    """

    spec = model_spec(user.user_model or default_model or "offline", settings=settings)
    if spec.provider == "offline":
        return _OfflineUser(user)
    return _LLMUser(user, build_model(spec))
