"""chat, ask, eval run, serve: a workflow as a conversational agent, and a conversation with it."""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap.interface.agent_config import AgentConfig
    from agentmap.runtime.options import CompileOptions
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["active_agent_target", "agent_for", "ask", "chat_loop", "load_active_agent", "resolve_agent_config"]


def active_agent_target() -> str:
    """chat, ask, serve: the active agent's `FILE[::GRAPH]` (`$AGENTMAP_AGENT`), empty when none is set."""
    from agentmap.interface.agent import active_agent_target

    return active_agent_target()


def load_active_agent(path: str | os.PathLike[str] | None = None) -> Callable[..., Any]:
    """chat, ask: the agent of a Python file exposing `run_agent` (the active agent when None), or the error
    saying none is set."""
    from agentmap.interface.agent import load_active_agent

    return load_active_agent(path)


def agent_for(workflow: str | os.PathLike[str] | CompiledWorkflow, *, options: CompileOptions) -> Callable[..., Any]:
    """chat, ask, eval run: a workflow as a `run_agent` agent (its state keys as `interface.agent.agent_for`
    finds them), compiled with the settings' `options`."""
    from agentmap.interface.agent import agent_for

    return agent_for(workflow, options=options)


def resolve_agent_config(config: Mapping[str, Any] | None = None) -> AgentConfig:
    """chat, ask: check `--agent-config` once, before the first turn."""
    from agentmap.interface.agent_config import resolve_agent_config

    return resolve_agent_config(config)


def ask(
    agent: Callable[..., Any],
    prompt: str,
    *,
    as_json: bool = False,
    memory: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> Coroutine[Any, Any, str]:
    """ask: one prompt to the agent, its reply as text (the whole output as JSON with `as_json`), awaited by the
    command."""
    from agentmap.interface.chat import ask

    return ask(agent, prompt, as_json=as_json, memory=memory, config=config)


if TYPE_CHECKING:  # the real signature, for the type checker; the call below forwards to it
    from agentmap.interface.chat import chat_loop
else:

    def chat_loop(*args: Any, **kwargs: Any) -> Any:
        """chat: the conversation on the terminal until /exit or Ctrl-D (its log written to `log_path`), awaited by
        the command."""
        from agentmap.interface.chat import chat_loop

        return chat_loop(*args, **kwargs)
