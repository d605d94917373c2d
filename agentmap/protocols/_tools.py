"""A served graph as a tool any agent protocol can offer: its description, input schema, arguments and reply.

Protocol-neutral: the MCP adapter (`protocols/mcp.py`) turns these into the SDK's types. A graph's tool takes the
keys a caller must give (the server's `input_keys`: read by some node, written by none), typed where a node's
Context declares them:

```
GraphName,Node,AgentType,Context,Input_Fields,Output_Field
Quote,Price,echo,"{""schema"": {""qty"": ""integer"", ""item"": {""enum"": [""tea"", ""cake""]}}}",item|qty,quote
```
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agentmap.agents.state import parse_input_field
from agentmap.errors import AgentMapError, ConfigError, ErrorCode
from agentmap.spec.types import declared_types
from agentmap.spec.validation import SYSTEM_KEYS

if TYPE_CHECKING:
    from agentmap.server._graphs import Assistant

__all__ = [
    "ArgumentError",
    "answer_from_form",
    "answer_schema",
    "check_answer_fits",
    "check_arguments",
    "describe",
    "input_schema",
    "reply",
]


class ArgumentError(AgentMapError, ValueError):
    """A tool call's arguments do not fit its input schema (a missing, unknown or mistyped argument)."""

    default_code = ErrorCode.BAD_INPUT
    exit_code = 2


def describe(assistant: Assistant) -> str:
    """The graph's Description cells (nodes in order) and the first row's Context `description`."""
    nodes = assistant.app.spec.nodes
    first = nodes[0].context.get("description") if nodes else None
    parts = [str(first)] if isinstance(first, str) and first.strip() else []
    parts += [f"{n.name}: {n.description}" for n in nodes if n.description]
    return "\n".join(parts) or f"Runs graph {assistant.app.name} from {assistant.app.spec.file}."


def input_schema(assistant: Assistant) -> dict[str, Any]:
    """JSON Schema of the tool's arguments: each input key, typed from a node's Context `schema` or else from the
    `input_model` of its agent (a pydantic model: the field the node reads the key as), required unless the type
    has a `default`."""
    declared: dict[str, Any] = {}
    for node in assistant.app.spec.nodes:
        for key, value in declared_types(node.context).items():
            declared.setdefault(key, value)
    defs: dict[str, Any] = {}
    for node in assistant.app.spec.nodes:
        for key, value in _model_types(assistant.app.agents.get(node.name), node.inputs, defs).items():
            declared.setdefault(key, value)
    keys = [k for k in assistant.input_keys if k not in SYSTEM_KEYS]  # a failure path's `errors` is not an argument
    properties = {key: declared.get(key, {"type": "string"}) for key in keys}
    required = [key for key, prop in properties.items() if "default" not in prop]
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {**schema, "$defs": defs} if defs else schema


def _model_types(agent: object, inputs: Sequence[str], defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of each state key a node reads as a field of its agent's `input_model` (the model's nested
    definitions added to `defs`, which its fields refer to as `#/$defs/...`)."""
    model = getattr(type(agent), "input_model", None)
    if model is None:
        return {}
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ConfigError(
            f"agent class {type(agent).__name__}: input_model must be a pydantic model class, not {model!r}",
            code=ErrorCode.BAD_CONFIG,
            hint="input_model = MyInputs, where class MyInputs(pydantic.BaseModel) declares the inputs it reads",
        )
    schema = model.model_json_schema()
    defs.update(schema.get("$defs", {}))
    fields: Mapping[str, Any] = schema.get("properties", {})
    return {key: fields[param] for key, param in map(parse_input_field, inputs) if param in fields}


def check_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as a run's input (with the defaults of those not given), or `ArgumentError` naming the
    argument that does not fit.

    Raises:
        ArgumentError: A required argument is missing, an argument is unknown or of the wrong type.
    """
    import jsonschema

    properties: Mapping[str, Any] = schema.get("properties", {})
    defs = {"$defs": schema["$defs"]} if "$defs" in schema else {}  # what an `input_model` field refers to
    for key in schema.get("required", ()):
        if key not in arguments:
            raise ArgumentError(
                f"tool {tool!r}: missing required argument {key!r}", hint=f"required: {', '.join(schema['required'])}"
            )
    for key, value in arguments.items():
        if key not in properties:
            known = ", ".join(properties) or "none"
            raise ArgumentError(f"tool {tool!r} has no argument {key!r}", hint=f"arguments: {known}")
        text = json.dumps({**properties[key], **defs}, sort_keys=True)
        error = jsonschema.exceptions.best_match(_validator(text).iter_errors(value))
        if error is not None:
            raise ArgumentError(
                f"tool {tool!r}: argument {key!r}: {error.message}",
                hint=f"schema of {key!r}: {json.dumps(properties[key])}",
            )
    defaults = {key: prop["default"] for key, prop in properties.items() if "default" in prop}
    return {**defaults, **arguments}


@functools.lru_cache(maxsize=256)
def _validator(schema: str) -> Any:
    """A checker of one argument's JSON Schema, built once (building checks the schema itself: slow per call)."""
    import jsonschema

    parsed = json.loads(schema)
    return jsonschema.validators.validator_for(parsed)(parsed)


def reply(assistant: Assistant, state: Mapping[str, Any], summary: Sequence[Any], success: bool) -> str:
    """A short text for the run's end: the output of the last node that succeeded, or the errors."""
    if not success:
        errors = "; ".join(" ".join(str(e).split()) for e in state.get("errors") or ()) or "its success policy failed"
        return f"graph {assistant.graph_id!r} failed: {errors}"
    nodes = assistant.app.spec.by_name
    for execution in reversed(summary):
        outputs = nodes[execution.name].outputs if execution.name in nodes else ()
        if execution.success and outputs and state.get(outputs[0]) is not None:
            value = state[outputs[0]]
            return value if isinstance(value, str) else json.dumps(value, default=repr)
    return f"graph {assistant.graph_id!r} finished"


def check_answer_fits(assistant: Assistant, thread_id: str, answer: Any) -> None:
    """Refuse an answer (as the client sent it) that does not fit what the paused thread asks, before a run is
    made of it: the runtime's answer rule (`answers_for`: each answer checked against its question by
    `check_answer`, one for each when several wait). A thread that asks nothing is left to the run to report.

    Raises:
        AgentMapError: The answer does not fit (`bad-answer`, `ambiguous-resume`: the error says what would).
    """
    from agentmap.runtime.durable import answers_for

    pending = assistant.app.thread(thread_id).questions()
    if pending:
        answers_for(pending, answer, thread_id)


def answer_schema(question: Mapping[str, Any]) -> dict[str, Any]:
    """The flat form a person fills in to answer a paused node's question (MCP elicitation's schema)."""
    interaction = question.get("interaction", "any")
    text = str(question.get("question", ""))
    if interaction == "approval":
        field: dict[str, Any] = {"type": "boolean", "title": "Approve", "description": text}
        return {"type": "object", "properties": {"approved": field}, "required": ["approved"]}
    field = {"type": "string", "title": "Answer", "description": text}
    if interaction == "choice" and question.get("options"):
        field["enum"] = [str(o) for o in question["options"]]
    if interaction in ("any", "event"):
        field["description"] = f"{text} (text, or a JSON object or list)"
    default = question.get("default", question.get("value"))
    if isinstance(default, str):
        field["default"] = default
    return {"type": "object", "properties": {"answer": field}, "required": ["answer"]}


def answer_from_form(question: Mapping[str, Any], content: Mapping[str, Any] | None) -> Any:
    """The answer a filled-in `answer_schema` form gives, its values as the client sent them: `check_answer`
    (which the runtime calls before the run resumes) decides what they mean, so `{"approved": "no"}` is a
    rejection and `{"approved": "maybe"}` is refused, as on the command line. Text in the `answer` field of a
    question that takes anything is read as typed text (`typed_answer`)."""
    from agentmap.agents.questions import typed_answer

    content = content or {}
    if "approved" in content:
        return {"approved": content["approved"]}
    answer = content.get("answer")
    if question.get("interaction", "any") in ("any", "event") and isinstance(answer, str):
        return typed_answer(answer)
    return answer
