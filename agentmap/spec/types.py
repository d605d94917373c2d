"""A node's Context `schema`: the JSON types of state keys it reads, for whoever asks a caller for them.

`{"schema": {"qty": "integer", "item": {"type": "string", "enum": ["tea", "cake"]}}}` types `qty` and `item`;
`agentmap mcp` puts them in a tool's input schema (csv_specs/mcp.md). `agentmap validate` reports a `schema`
that is not such an object, or that names a key the node does not read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["JSON_TYPES", "declared_types", "schema_problem"]

JSON_TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")


def declared_types(context: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The JSON Schema of each key the Context `schema` types (a type name becomes `{"type": name}`)."""
    schema = context.get("schema")
    if not isinstance(schema, Mapping):
        return {}
    return {str(key): {"type": value} if isinstance(value, str) else dict(value) for key, value in schema.items()}


def schema_problem(context: Mapping[str, Any], reads: Sequence[str]) -> str | None:
    """What is wrong with the Context `schema` of a node reading `reads`, or None."""
    schema = context.get("schema")
    if schema is None:
        return None
    if not isinstance(schema, Mapping):
        example = '{"qty": "integer"}'
        return f'Context "schema" must be an object of state keys to JSON types, e.g. {example}, not {schema!r}'
    for key, value in schema.items():
        if key not in reads:
            known = ", ".join(reads) or "none"
            return f'Context "schema" types {key!r}, which the node does not read (Input_Fields: {known})'
        kind = value.get("type", "string") if isinstance(value, Mapping) else value
        kinds = kind if isinstance(kind, list) else [kind]
        if not isinstance(value, str | Mapping) or any(k not in JSON_TYPES for k in kinds):
            return (
                f'Context "schema": the type of {key!r} must be one of {", ".join(JSON_TYPES)} or a JSON Schema '
                f'object such as {{"type": "string", "enum": ["a", "b"]}}, not {value!r}'
            )
    return None
