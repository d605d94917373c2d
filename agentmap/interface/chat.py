"""What `agentmap chat` and `agentmap ask` do, as plain functions the command line calls.

```python
agent = resolve_agent("graphs/llm_offline.csv")          # or None: the ACTIVE_AGENT_PATH agent
print(await ask(agent, "reverse the text hello"))         # one turn
log = await chat_loop(agent, input, print)                # many turns, history kept
```
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from agentmap.contracts.conversation import ConversationLog, RunMetadata, StopReason, Turn
from agentmap.interface.agent import agent_for, load_active_agent
from agentmap.interface.agent_calls import agent_error_text, as_async_agent, reply_text
from agentmap.interface.history import format_chat_history
from agentmap.interface.logs import write_log

__all__ = ["DEFAULT_MAX_TURNS", "EXIT_COMMANDS", "ask", "chat_loop", "resolve_agent"]

DEFAULT_MAX_TURNS = 100
"""How many user messages a chat takes when no limit is given; the log's `max_turns` is always the real limit."""

EXIT_COMMANDS = ("/exit", "/quit", "exit", "quit")
"""Lines that end a chat session (as does end of input, Ctrl-D)."""


def resolve_agent(target: str | os.PathLike[str] | None = None) -> Callable[..., Any]:
    """Return the agent to talk to: a workflow `FILE[::GRAPH]`, a Python agent file, or the active agent.

    Raises:
        ConfigError: When `target` is None and `ACTIVE_AGENT_PATH` is unset or unusable.
        WorkflowFileError, GraphNotFoundError, WorkflowValidationError: When the workflow cannot be compiled.
    """
    if target is None:
        return load_active_agent()
    text = str(target)
    return load_active_agent(text) if text.partition("::")[0].endswith(".py") else agent_for(text)


async def ask(
    agent: Callable[..., Any],
    prompt: str,
    *,
    as_json: bool = False,
    chat_history: str | None = None,
    memory: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> str:
    """Ask one question; return the text to print (the reply, or the whole output as JSON).

    Args:
        agent: A `run_agent` function.
        prompt: The user message.
        as_json: Return the agent's full output (`content`, `response_time_secs`, `traces`, ...) as JSON.
        chat_history: Earlier turns in the `user: ...` / `assistant: ...` line format.
        memory: Extra context.
        config: Per-call overrides (csv_specs/run_agent.md config keys).
    """
    result = await as_async_agent(agent)(
        prompt, chat_history=chat_history, memory=memory, config=dict(config) if config is not None else None
    )
    if as_json:
        data = result if isinstance(result, Mapping) else {"content": reply_text(result)}
        return json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return reply_text(result) or ""


async def chat_loop(
    agent: Callable[..., Any],
    input_fn: Callable[[str], str] = input,
    output_fn: Callable[[str], object] = print,
    *,
    memory: str | None = None,
    config: Mapping[str, Any] | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    log_path: str | os.PathLike[str] | None = None,
    prompt: str = "you> ",
) -> ConversationLog:
    """Talk with `agent` until the user leaves; every turn sees the conversation so far.

    Args:
        agent: A `run_agent` function.
        input_fn: Reads the user's next line (given the prompt); EOFError or KeyboardInterrupt end the chat.
        output_fn: Shows a reply (or an error) to the user.
        memory: Extra context passed on every turn.
        config: Per-call overrides passed on every turn.
        max_turns: End after this many user messages (the log's `max_turns`).
        log_path: Also write the session as a conversation log here (`mode: interactive`).
        prompt: The input prompt.

    Returns:
        The conversation, as a log (`stop_reason` `user_exit` or `max_turns`).
    """
    call = as_async_agent(agent)
    history: list[tuple[str, str]] = []
    turns: list[Turn] = []
    reason = StopReason.USER_EXIT
    started = datetime.now()
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    while len(history) // 2 < max_turns:
        try:
            line = input_fn(prompt)
        except (EOFError, KeyboardInterrupt):
            break
        message = line.strip()
        if not message:
            continue
        if message.lower() in EXIT_COMMANDS:
            break
        turns.append(Turn(role="user", timestamp=datetime.now(), text=message))
        try:
            result = await call(
                message,
                chat_history=format_chat_history(history) or None,
                memory=memory,
                config=dict(config) if config is not None else None,
            )
            reply = reply_text(result)
        except Exception as exc:
            reply = None
            error = agent_error_text(exc)
        else:
            error = "Error: the agent returned no reply."
        text = reply if reply and reply.strip() else error
        output_fn(text)
        turns.append(Turn(role="assistant", timestamp=datetime.now(), text=text))
        history += [("user", message), ("assistant", text)]
    else:
        reason = StopReason.MAX_TURNS
    log = ConversationLog(
        metadata=RunMetadata(
            session_id=f"chat_{started:%Y%m%dT%H%M%S}",
            mode="interactive",
            scenario="chat",
            max_turns=max_turns,
            stop_reason=str(reason),
        ),
        turns=tuple(turns),
    )
    if log_path is not None:
        write_log(log_path, log)
    return log
