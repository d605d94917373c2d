"""Graph values as JSON, the way LangGraph's server writes them (interrupts as `{"value", "id"}`, messages as dicts)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

__all__ = ["dumps", "jsonable"]


def jsonable(value: Any) -> Any:
    """`value` with every part JSON can hold; other objects become their `repr`."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if type(value).__name__ == "Interrupt" and hasattr(value, "value"):
        return {"value": jsonable(value.value), "id": getattr(value, "id", None)}
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return jsonable(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return repr(value)


def dumps(value: Any) -> str:
    """`value` as compact JSON text."""
    return json.dumps(jsonable(value), ensure_ascii=False, separators=(",", ":"))
