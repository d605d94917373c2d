"""JSON for any final state LangGraph accepted, and a short preview of it for the terminal.

`json.dumps` recurses once per level of nesting (a chain of 1,000 echo nodes nests 1,000 deep) and, with an
indent, its pure-Python encoder costs time in proportion to the depth for every value it writes. `iter_json`
walks the document with an explicit stack instead: indented like `json.dumps(indent=2)` near the top, compact
below `flat_depth`, so a deep document is written in time and space proportional to its size. Below
`flat_depth` each container is first handed to the C encoder whole (compact, so no indent cost); only one it
refuses (nested past the recursion limit, a cycle, a key or mapping type it writes differently) is walked here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["MAX_ITEMS", "MAX_STRING", "depth_exceeds", "iter_json", "preview"]

MAX_STRING = 300
"""Characters of a string value the terminal view shows (`--full` shows all)."""
MAX_ITEMS = 20
"""Items of a list or mapping the terminal view shows."""
_MAX_PREVIEW_DEPTH = 8


def _scalar(value: Any) -> str | None:
    if value is None or isinstance(value, bool | int | float | str):
        return json.dumps(value, ensure_ascii=False)
    return None


def _key(key: Any) -> str:
    text = key if isinstance(key, str) else (json.dumps(key) if key is None or isinstance(key, bool) else str(key))
    return json.dumps(text, ensure_ascii=False)


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests lists and mappings more than `limit` deep (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class _Walk(Exception):
    """A value the C encoder would write differently from `iter_json`: walk it instead."""


def _as_text(item: Any) -> str:
    if isinstance(item, Mapping):  # a mapping that is not a dict: the C encoder would write str() of it
        raise _Walk
    return str(item)


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_as_text)


def _compact(item: Any) -> str | None:
    """`item` written by the C encoder, or None where `iter_json` must walk it."""
    try:
        return _COMPACT.encode(item)
    except (_Walk, RecursionError, ValueError, TypeError):  # too deep, a cycle, a key JSON cannot hold
        return None


_RETRY_AFTER = 64


def iter_json(value: Any, *, indent: int = 2, flat_depth: int = 32) -> Iterator[str]:
    """The JSON text of `value` in pieces; objects JSON cannot hold are written with `str`, cycles as a string.

    Args:
        value: The document.
        indent: Spaces per level, as `json.dumps(indent=...)`.
        flat_depth: Below this depth, containers are written on one line.
    """
    # A frame: [items iterator, is mapping, depth, items written, id of the container, depth its items may be
    # handed to the C encoder from]. After the encoder refused a container, its items are walked for the next
    # `_RETRY_AFTER` levels: a document nested far past the recursion limit is not offered to it at every level.
    stack: list[list[Any]] = []
    open_ids: set[int] = set()

    def start(item: Any, depth: int, compact_from: int) -> str:
        text = _scalar(item)
        if text is not None:
            return text
        is_map = isinstance(item, Mapping)
        if not is_map and not isinstance(item, list | tuple):
            return json.dumps(str(item), ensure_ascii=False)
        if id(item) in open_ids:
            return json.dumps("<cycle>")
        if not item:
            return "{}" if is_map else "[]"
        if depth >= compact_from:
            whole = _compact(item)
            if whole is not None:
                return whole
            compact_from = depth + _RETRY_AFTER
        open_ids.add(id(item))
        stack.append([iter(item.items()) if is_map else iter(item), is_map, depth, 0, id(item), compact_from])
        return "{" if is_map else "["

    yield start(value, 0, flat_depth + 1)
    done: Any = object()
    while stack:
        frame = stack[-1]
        entry: Any = next(frame[0], done)
        pretty = frame[2] < flat_depth
        if entry is done:
            stack.pop()
            open_ids.discard(frame[4])
            closer = "}" if frame[1] else "]"
            yield ("\n" + " " * (indent * frame[2]) + closer) if pretty else closer
            continue
        lead = "," if frame[3] else ""
        frame[3] += 1
        if pretty:
            lead += "\n" + " " * (indent * (frame[2] + 1))
        if frame[1]:
            key, item = entry
            lead += _key(key) + (": " if pretty else ":")
        else:
            item = entry
        yield lead + start(item, frame[2] + 1, frame[5])


def preview(value: Any, *, max_string: int = MAX_STRING, max_items: int = MAX_ITEMS) -> Any:
    """A copy of `value` cut for a terminal: long strings, long lists and mappings, and deep nesting shortened."""

    def cut(item: Any, depth: int) -> Any:
        if isinstance(item, str):
            if len(item) <= max_string:
                return item
            return f"{item[:max_string]}… ({len(item):,} characters; --full shows all)"
        if isinstance(item, Mapping | list | tuple) and depth >= _MAX_PREVIEW_DEPTH:
            return "… (nested deeper; --full shows all)"
        if isinstance(item, Mapping):
            shown = {str(k): cut(v, depth + 1) for k, v in list(item.items())[:max_items]}
            if len(item) > max_items:
                shown["…"] = f"{len(item) - max_items:,} more keys; --full shows all"
            return shown
        if isinstance(item, list | tuple):
            items = [cut(v, depth + 1) for v in list(item)[:max_items]]
            if len(item) > max_items:
                items.append(f"… {len(item) - max_items:,} more items; --full shows all")
            return items
        if item is None or isinstance(item, bool | int | float):
            return item
        return cut(str(item), depth)

    return cut(value, 0)
