"""The JSON writer for deep final states: the same document whichever encoder writes a part of it."""

from __future__ import annotations

import json
import sys
from types import MappingProxyType
from typing import Any

from agentmap.cli._jsonout import iter_json


class _Odd:
    def __str__(self) -> str:
        return "odd!"


def _nest(value: Any, depth: int) -> Any:
    for i in range(depth):
        value = {f"k{i}": value, "list": [i, (i, "t")]}
    return value


def _read(text: str) -> Any:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # only to read the document back here
    try:
        return json.loads(text)
    finally:
        sys.setrecursionlimit(limit)


def test_values_below_the_flat_depth_are_written_as_near_the_top() -> None:
    cycle: dict[str, Any] = {"a": []}
    cycle["a"].append(cycle)
    leaf = {
        "proxy": MappingProxyType({"k": [1]}),
        "object": _Odd(),
        "keys": {(1, 2): 3, None: "n", True: "t", 2: 2.5},
        "cycle": cycle,
        "text": "é",
    }
    shallow = _read("".join(iter_json(leaf)))
    deep = _read("".join(iter_json(_nest(leaf, 40))))
    for i in reversed(range(40)):
        assert deep.pop("list") == [i, [i, "t"]]
        deep = deep[f"k{i}"]
    assert deep == shallow
    assert shallow["proxy"] == {"k": [1]} and shallow["object"] == "odd!" and shallow["text"] == "é"
    assert shallow["keys"] == {"(1, 2)": 3, "null": "n", "true": "t", "2": 2.5}
    assert shallow["cycle"] == {"a": ["<cycle>"]}


def test_a_document_deeper_than_the_recursion_limit_is_written_whole() -> None:
    document = _nest("bottom", 3 * sys.getrecursionlimit())
    text = "".join(iter_json(document))
    depth = 3 * sys.getrecursionlimit()
    assert text.startswith(f'{{\n  "k{depth - 1}": {{\n') and text.count("\n") < depth  # compact below the top
    value = _read(text)
    for i in reversed(range(depth)):
        value = value[f"k{i}"]
    assert value == "bottom"
