"""The hierarchical assistant's agents: Router -> domain agents in parallel -> Synthesizer (seed 001).

A *domain* is a sub-folder of the tool root holding Python tool files (`extensions/<domain>/*.py`); its
public functions are its tools. Each role's model comes from `config["model_overrides"]` (`router`,
`domain`, `synth`), else the node's Context `model`, else `offline`.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.callbacks.manager import adispatch_custom_event

from agentmap.agents.base import BaseAgent
from agentmap.agents.registry import agent, import_file
from agentmap.agents.tools import LocalToolExecutor, as_tool
from agentmap.errors import ConfigError
from agentmap.interface.agent_config import AgentConfig, resolve_agent_config
from agentmap.interface.tracing import PROBLEM_EVENT

_WORD = re.compile(r"[a-z]{4,}")


def _config(inputs: Mapping[str, Any]) -> AgentConfig:
    value = inputs.get("agent_config")
    return value if isinstance(value, AgentConfig) else resolve_agent_config(value or {})


def _model(role: str, config: AgentConfig, context: Mapping[str, Any]) -> str:
    return config.model_overrides.get(role) or str(context.get("model") or "offline")


def _domains(root: Path) -> dict[str, list[Any]]:
    """Each sub-folder with Python files, and the public functions those files define."""
    if not root.is_dir():
        raise ConfigError(f"tool_root {root} is not a folder", hint="Set config tool_root or AGENTMAP_TOOL_ROOT.")
    found: dict[str, list[Any]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        tools: list[Any] = []
        for file in sorted(folder.glob("*.py")):
            if file.name.startswith("_"):
                continue
            module = import_file(file, prefix=f"assistant_{folder.name}")
            own = [
                obj
                for name, obj in vars(module).items()
                if callable(obj) and not name.startswith("_") and getattr(obj, "__module__", "") == module.__name__
            ]
            tools += [as_tool(obj) for obj in own]
        if tools:
            found[folder.name] = tools
    return found


class _Domains(BaseAgent):
    def _root(self, config: AgentConfig) -> Path:
        """`tool_root` from config or the environment (relative to the working folder), else the Context's
        (relative to the workflow's folder)."""
        if config.tool_root:
            return Path(config.tool_root).resolve()
        root = Path(str(self.context.get("tool_root") or "extensions"))
        return root if root.is_absolute() else self.environment.base_dir / root


class DomainRouterAgent(_Domains):
    """`domain_router`: picks the domains a message needs (all of them when none stands out)."""

    async def aprocess(self, inputs: dict[str, Any]) -> list[str]:
        """Return the chosen domain names, restricted to `only_domains`."""
        config = _config(inputs)
        available = _domains(self._root(config))
        if config.only_domains is not None:
            unknown = [d for d in config.only_domains if d not in available]
            if unknown:
                raise ConfigError(
                    f"only_domains names {', '.join(map(repr, unknown))}, which is not a domain under "
                    f"{self._root(config)}; the domains are {', '.join(available) or 'none'}",
                    hint="only_domains lists sub-folder names of tool_root.",
                )
            available = {k: v for k, v in available.items() if k in config.only_domains}
        model = _model("router", config, self.context)
        self.record_metadata(model=model)
        prompt = str(inputs.get("prompt") or "")
        from agentmap.llm.models import resolve_model

        listing = "\n".join(f"- {name}: " + ", ".join(t.name for t in tools) for name, tools in available.items())
        reply = await resolve_model(model).ainvoke(
            f"Which of these domains does the request need? Answer with their names.\n{listing}\n\nRequest: {prompt}"
        )
        named = [
            d
            for d in available
            if re.search(rf"\b{re.escape(d)}\b", str(reply.content).split("Request:")[-1], re.IGNORECASE)
        ]
        if not named:  # a vague answer: fall back to the words of the tools' names and descriptions
            words = set(_WORD.findall(prompt.lower()))
            named = [
                d
                for d, tools in available.items()
                if words
                & set(_WORD.findall(" ".join(f"{t.name.replace('_', ' ')} {t.description}" for t in tools).lower()))
            ]
        return named or list(available)


class DomainAgentsAgent(_Domains):
    """`domain_agents`: runs one tool-using agent per chosen domain, in parallel, each with a time limit."""

    async def aprocess(self, inputs: dict[str, Any]) -> list[dict[str, Any]]:
        """Return one result per domain: `domain`, `status` (ok, timeout, error), `reply`, `duration_secs`."""
        config = _config(inputs)
        available = _domains(self._root(config))
        chosen = [d for d in (inputs.get("domains") or []) if d in available]
        model = _model("domain", config, self.context)
        self.record_metadata(model=model)
        message = str(inputs.get("prompt") or "")
        if inputs.get("memory"):
            message = f"{message}\n\nContext: {inputs['memory']}"
        history = [m for m in inputs.get("chat_history") or [] if isinstance(m, Mapping)]
        jobs = [self._guarded(d, available[d], message, history, model, config) for d in chosen]
        return list(await asyncio.gather(*jobs))

    async def _guarded(
        self,
        domain: str,
        tools: list[Any],
        message: str,
        history: list[Mapping[str, Any]],
        model: str,
        config: AgentConfig,
    ) -> dict[str, Any]:
        started = time.perf_counter()
        work = _answer(tools, message, history, model)
        if config.execution_mode == "threads":
            work = asyncio.to_thread(asyncio.run, work)
        try:
            reply = await asyncio.wait_for(work, config.domain_timeout_secs)
        except TimeoutError:
            seconds = config.domain_timeout_secs or 0
            note = f"the {domain} domain did not answer within {seconds:g} seconds"
            await adispatch_custom_event(  # not a tool call: run_agent reports it in errors and timings
                PROBLEM_EVENT,
                {
                    "source": f"domain:{domain}",
                    "error": f"timeout: {note}",
                    "duration_secs": round(time.perf_counter() - started, 6),
                },
            )
            return {"domain": domain, "status": "timeout", "reply": note, "duration_secs": seconds}
        except Exception as exc:
            return {
                "domain": domain,
                "status": "error",
                "reply": f"the {domain} domain failed: {exc}",
                "duration_secs": round(time.perf_counter() - started, 6),
            }
        return {
            "domain": domain,
            "status": "ok",
            "reply": reply,
            "duration_secs": round(time.perf_counter() - started, 6),
        }


async def _answer(tools: list[Any], message: str, history: list[Mapping[str, Any]], model: str) -> str:
    from agentmap.contracts.engine import AgentEngineConfig, DecisionContext, Message
    from agentmap.llm.adapter import LLMAdapter
    from agentmap.llm.engine import LLMAgentEngine
    from agentmap.llm.models import resolve_model

    engine = LLMAgentEngine.from_config(
        LLMAdapter(resolve_model(model)),
        LocalToolExecutor(tools),
        "You answer with the domain's tools.",
        AgentEngineConfig(include_history_messages=len(history)),
        confirm_tools=(),
    )
    past = [
        Message(role=m["role"], content=str(m["content"])) for m in history if m.get("role") in ("user", "assistant")
    ]
    outcome = await engine.decide(
        DecisionContext(user_id="", message=message, conversation_id="assistant", message_history=past)
    )
    decision = outcome.decision
    return str(decision.response_text or decision.clarification_question or "")


class SynthesizerAgent(BaseAgent):
    """`synthesizer`: writes one reply from the domains' answers, naming any domain that did not answer."""

    async def aprocess(self, inputs: dict[str, Any]) -> str:
        """Return the final reply."""
        config = _config(inputs)
        model = _model("synth", config, self.context)
        self.record_metadata(model=model)
        results = [r for r in inputs.get("domain_results") or [] if isinstance(r, Mapping)]
        answered = [r for r in results if r.get("status") == "ok" and r.get("reply")]
        missing = [r for r in results if r.get("status") != "ok"]
        lines = [str(r["reply"]) if len(answered) == 1 else f"{r['domain']}: {r['reply']}" for r in answered]
        lines += [f"Note: {r['reply']}." for r in missing]
        draft = "\n".join(lines) or "I could not find a domain that can help with that."
        if model.split(":", 1)[0] == "offline":
            return draft  # the offline stand-in would only echo; the draft is the deterministic reply
        from agentmap.llm.models import resolve_model

        reply = await resolve_model(model).ainvoke(
            f"{self.prompt}\n\nUser request: {inputs.get('prompt')}\n\nAnswers from the domains:\n{draft}"
        )
        return str(reply.content) or draft


agent("domain_router")(DomainRouterAgent)
agent("domain_agents")(DomainAgentsAgent)
agent("synthesizer")(SynthesizerAgent)
