"""The `llm_planner` agent type: an orchestrator's planner that asks a chat model for the plan.

`LLMPlanner` implements the orchestration `Planner` interface (`async plan(goal, request)`): it shows
the model the goal and the tools it may use, asks for a JSON plan (`{"steps": [{"tool": ..., "inputs":
{...}}]}`), and checks it: a reply that is not valid JSON, a malformed step or a tool that is not
offered is a `PlanningError`, which the planner agent answers as a VALIDATION error naming the problem.
The tools are also bound to the model, so a model may answer with tool calls instead (one step per
call, in order); that is how the deterministic `offline` stand-in plans.

`LLMPlannerAgent` is the `AgentProtocol` face (`PlannerAgent` with an `LLMPlanner`); as a CSV node it
reads Context `model` (and the other model options of the `llm` type), `tools` (names, or
`{name: description}`) and/or `workers` (nodes of the same graph whose Tool_Source / Available_Tools
are the tools), and its Prompt as extra planning instructions. See csv_specs/orchestration.md.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentmap.agents.registry import agent
from agentmap.agents.tool_sources import build_tool_executor, split_names
from agentmap.contracts.io import AgentRequest, describe_validation_error
from agentmap.llm.adapter import LLMAdapter, LLMRateLimitError, LLMTimeoutError, open_tool_schema
from agentmap.llm.agents import model_call_problems, node_adapter
from agentmap.llm.models import build_model, choose_model, model_options, model_problems
from agentmap.orchestration.planner import PlannerAgent, PlanningError, PlanStep

if TYPE_CHECKING:
    from agentmap.agents.base import AgentEnvironment, BaseAgent

__all__ = ["PLANNER_INSTRUCTIONS", "LLMPlanner", "LLMPlannerAgent", "parse_plan"]

PLANNER_INSTRUCTIONS = """You plan how to reach a goal with the tools listed below.
Answer with one JSON object and nothing else:
{"steps": [{"tool": "<tool name>", "inputs": {"<argument>": <value>}, "id": "<optional step name>"}]}
Rules:
- Use only the tools listed, with the arguments they take; fill the values from the goal and inputs.
- A string "${<step id>.<key>}" stands for part of an earlier step's result ("${previous}" for the whole
  previous result); a step's id defaults to its tool name.
- Keep the plan as short as the goal allows."""
"""The system message of an `LLMPlanner` (the node's Prompt and the tool list are appended)."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)
_SNIPPET = 200


def static_system(instructions: str) -> str:
    """The part of the planner's system message that is the same in every call: the planner's instructions and
    the node's (what the provider's prompt cache can hold; the tools listed after them may change per request)."""
    return "\n\n".join(p for p in (PLANNER_INSTRUCTIONS, instructions) if p)


def _describe(schema: Mapping[str, Any]) -> str:
    function = schema.get("function", schema)
    params = function.get("parameters") or {}
    props: Mapping[str, Any] = params.get("properties") or {}
    required = set(params.get("required") or ())
    args = ", ".join(f"{n}: {p.get('type', 'any')}{'' if n in required else '?'}" for n, p in props.items())
    description = " ".join(str(function.get("description") or "").split())
    return f"- {function['name']}({args}){': ' + description if description else ''}"


def _schemas(tools: Any, where: str) -> dict[str, dict[str, Any]]:
    """Tools as given (names, `{name: description}`, `a|b`, OpenAI-style schemas) -> schemas by name."""
    if isinstance(tools, str):
        tools = [t.strip() for t in tools.split("|") if t.strip()]
    if isinstance(tools, Mapping):
        tools = [open_tool_schema(str(n), str(d or "")) for n, d in tools.items()]
    if not isinstance(tools, Sequence):
        raise PlanningError(f"{where} must be a list of tool names or {{name: description}}, got {tools!r}")
    found: dict[str, dict[str, Any]] = {}
    for item in tools:
        schema = open_tool_schema(item) if isinstance(item, str) else item
        name = schema.get("function", {}).get("name") if isinstance(schema, Mapping) else None
        if not isinstance(name, str) or not name:
            raise PlanningError(f"{where}: {item!r} is not a tool name or an OpenAI-style tool schema")
        found[name] = dict(schema)
    return found


def parse_plan(reply: str, tools: Sequence[str]) -> list[PlanStep]:
    """Read a model's plan: JSON `{"steps": [...]}` (or a bare list), in a Markdown fence or not.

    Args:
        reply: The model's text.
        tools: The tools the plan may name.

    Raises:
        PlanningError: When the text is not valid JSON, a step is malformed, or a step names a tool
            that is not in `tools`; the message says which step and what was expected.
    """
    text = reply.strip()
    fenced = _FENCE.match(text)
    text = fenced.group(1) if fenced else text
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    try:
        data: Any = json.JSONDecoder().raw_decode(text, min(starts))[0] if starts else json.loads(text)
    except json.JSONDecodeError as exc:
        clipped = text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."
        raise PlanningError(
            f"the model's plan is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
            f'{clipped!r}; the model must answer with {{"steps": [...]}} only (say so in the planner\'s '
            "Prompt, or choose a model that follows instructions)"
        ) from None
    raw = data.get("steps") if isinstance(data, Mapping) else data
    if not isinstance(raw, list):
        raise PlanningError(
            f'the model\'s plan must be {{"steps": [...]}} with a list of steps; it gave {text[:_SNIPPET]!r}'
        )
    return check_steps(raw, tools)


def check_steps(raw: Sequence[Any], tools: Sequence[str]) -> list[PlanStep]:
    """Validate planned steps (dicts) and check every tool they name is in `tools`.

    Raises:
        PlanningError: Naming each bad step and, for an unknown tool, the close match and the tools offered.
    """
    steps: list[PlanStep] = []
    problems: list[str] = []
    for number, item in enumerate(raw, start=1):
        try:
            step = PlanStep.model_validate(item)
        except ValidationError as exc:
            problems.append(f"step {number}: {describe_validation_error(exc)}")
            continue
        problem = step.problem()
        if problem:
            problems.append(f"step {number}: {problem}")
        elif step.tool and step.tool not in tools:
            close = difflib.get_close_matches(step.tool, tools, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problems.append(f"step {number} names unknown tool '{step.tool}'{hint}")
        steps.append(step)
    if problems:
        raise PlanningError(
            "the model's plan cannot run: " + "; ".join(problems) + f"; the tools are: {', '.join(tools) or 'none'}"
        )
    return steps


class LLMPlanner:
    """A `Planner` that asks a chat model for the steps.

    Args:
        adapter: The model.
        tools: The tools plans may use: names, `{name: description}`, or OpenAI-style schemas (such as
            `LocalToolExecutor.get_tool_schemas()`). A request's `context["tools"]` adds to them.
        instructions: Extra planning instructions (a node's Prompt), appended to the system message.
        temperature: Sampling temperature of the call (0.0: plans are repeatable).
        timeout_seconds: Time limit of the call; None for the adapter's.
    """

    def __init__(
        self,
        adapter: LLMAdapter,
        tools: Any = (),
        *,
        instructions: str = "",
        temperature: float | None = 0.0,
        timeout_seconds: float | None = None,
    ) -> None:
        self.adapter = adapter
        self.tools = _schemas(tools, "tools")
        self.instructions = instructions.strip()
        self.temperature = temperature
        self.timeout_seconds = timeout_seconds

    async def tool_schemas(self, request: AgentRequest) -> dict[str, dict[str, Any]]:
        """The tools offered for `request`: the planner's, plus the request's `context["tools"]`."""
        given = request.context.get("tools")
        return {**self.tools, **(_schemas(given, "the request's context tools") if given else {})}

    async def plan(self, goal: str, request: AgentRequest) -> list[PlanStep]:
        """Ask the model for the steps reaching `goal` and check them.

        Raises:
            PlanningError: When no tools are offered, or the model's plan is invalid.
            TimeoutError: When the model does not answer in time (the orchestrator may retry).
            ConnectionError: When the provider rate-limits the call (the orchestrator may retry).
            LLMError: For other model failures.
        """
        from langchain_core.messages import HumanMessage, SystemMessage

        tools = await self.tool_schemas(request)
        if not tools:
            raise PlanningError(
                'the planner has no tools to plan with: give it Context "tools" (names) or "workers" (worker nodes)'
            )
        system = "\n\n".join((static_system(self.instructions), "Tools:\n" + "\n".join(map(_describe, tools.values()))))
        extra = {k: v for k, v in request.inputs.items() if k != "max_steps"}
        lines = [f"{k}: {v if isinstance(v, str) else json.dumps(v, default=str)}" for k, v in extra.items()]
        user = "\n".join([goal, *(["Inputs:", *lines] if lines else [])])
        try:
            reply = await self.adapter.ainvoke(
                [SystemMessage(content=system), HumanMessage(content=user)],
                tools=list(tools.values()),
                temperature=self.temperature,
                timeout_seconds=self.timeout_seconds,
            )
        except LLMTimeoutError as exc:
            raise TimeoutError(f"the planning model: {exc.message}") from exc
        except LLMRateLimitError as exc:
            raise ConnectionError(f"the planning model: {exc.message}") from exc
        names = list(tools)
        if reply.tool_calls:
            return check_steps([{"tool": c["name"], "inputs": dict(c["args"])} for c in reply.tool_calls], names)
        return parse_plan(reply.text, names)


class _NodeTools(LLMPlanner):
    """An `LLMPlanner` of a CSV node: Context `tools`, plus the tools of the worker nodes it names."""

    def __init__(self, node: BaseAgent, adapter: LLMAdapter, **kwargs: Any) -> None:
        super().__init__(adapter, node.context.get("tools") or (), **kwargs)
        self.node = node
        self.workers = _worker_names(node.context)
        self._loaded = False

    async def tool_schemas(self, request: AgentRequest) -> dict[str, dict[str, Any]]:
        if not self._loaded:
            agents = self.node.environment.agents
            for name in self.workers:
                found = agents.get(name)
                if found is None:
                    close = difflib.get_close_matches(name, list(agents), n=1)
                    raise PlanningError(
                        f"Context workers names '{name}', which is not a node of this graph"
                        + (f" (did you mean '{close[0]}'?)" if close else "")
                    )
                executor = await build_tool_executor(found.context, found.environment)
                self.tools.update(_schemas(executor.get_tool_schemas(), f"worker '{name}'"))
            self._loaded = True
        return await super().tool_schemas(request)


def _worker_names(context: Mapping[str, Any]) -> list[str]:
    return split_names(context.get("workers"))


@agent("llm_planner")
class LLMPlannerAgent(PlannerAgent):
    """The `llm_planner` agent: a `PlannerAgent` whose plans come from a chat model (`LLMPlanner`)."""

    own_cache = True  # Context `cache` is the LLM response cache (llm/cache.py)

    @classmethod
    def from_node(cls, node: BaseAgent) -> LLMPlannerAgent:
        """Build the planner of an `llm_planner` node from its Context and Prompt."""
        spec = choose_model(model_options(node.context), settings=node.environment.settings)
        planner = _NodeTools(
            node,
            node_adapter(
                build_model(spec),
                node.context,
                node.environment.settings,
                static=static_system((node.prompt or "").strip()),
            ),
            instructions=node.prompt or "",
            temperature=spec.temperature if spec.temperature is not None else 0.0,
            timeout_seconds=spec.timeout,
        )
        return cls(planner, name=node.name)

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """Check the model (package, API key), its budget and cache, and that the planner has tools to plan with."""
        problems = model_problems(model_options(context), settings=environment.settings)
        tools = context.get("tools")
        if not tools and not _worker_names(context):
            problems.append(
                'an llm_planner needs the tools it may plan with: Context "workers" (the worker nodes, e.g. '
                '["flights", "hotels"]) or "tools" (tool names, or {"name": "description"})'
            )
        elif tools:
            try:
                _schemas(tools, "Context tools")
            except PlanningError as exc:
                problems.append(str(exc))
        return problems + [str(p) for p in model_call_problems(context, environment.settings)]
