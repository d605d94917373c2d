"""Reading YAML: the one reader of every YAML text AgentMap reads (workflow files, `agentmap.yaml`, the storage
config, the prompt registry, a Context cell written as a YAML mapping).

PyYAML's safe loader, bounded so that a small file cannot take the machine: its aliases (`*name`) may repeat at most
`MAX_REPEATED` values in all (the "billion laughs", nine lines of aliases of aliases, would otherwise stand for a
billion values), a value may nest at most `MAX_DEPTH` deep, and a number may have at most as many digits as Python
reads. Each refusal is PyYAML's own `MarkedYAMLError`, with the line and column, so every caller's handling of a YAML
error reports it. Needs PyYAML: import this module where the yaml extra is checked.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.events import AliasEvent

__all__ = ["MAX_DEPTH", "MAX_REPEATED", "load"]

MAX_REPEATED = 100_000
"""Values the aliases of one document may repeat, in all (each alias counts the values of what it names)."""
MAX_DEPTH = 100
"""How deep lists and mappings may nest."""


class _BoundedLoader(yaml.SafeLoader):
    """`yaml.SafeLoader`, counting what aliases repeat and how deep values nest while composing."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._values = 0  # values composed so far, each alias counting what it repeats
        self._repeated = 0
        self._depth = 0
        self._sizes: dict[int, int] = {}  # an anchored node's values, by id

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in the stubs
            node = self.anchors.get(event.anchor)
            if node is not None:
                size = self._sizes.get(id(node))
                if size is None:
                    raise ComposerError(
                        None,
                        None,
                        f"the alias *{event.anchor} is inside the value it names (a value that holds itself)",
                        event.start_mark,
                    )
                self._values += size
                self._repeated += size
                if self._repeated > MAX_REPEATED:
                    raise ComposerError(
                        None,
                        None,
                        f"the aliases of this file repeat more than {MAX_REPEATED:,} values (*{event.anchor} here): "
                        "write the values out, or use fewer aliases of aliases",
                        event.start_mark,
                    )
            return super().compose_node(parent, index)
        event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in the stubs
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise ComposerError(None, None, f"values here nest more than {MAX_DEPTH} deep", event.start_mark)
        start = self._values
        self._values += 1
        node = super().compose_node(parent, index)
        self._depth -= 1
        if event.anchor is not None:
            self._sizes[id(node)] = self._values - start
        return node

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except ValueError as exc:  # a number of more digits than Python reads, and the like
            raise ConstructorError(None, None, f"cannot read this value: {exc}", node.start_mark) from None


def load(text: str) -> Any:
    """The value of one YAML document, read as `yaml.safe_load` reads it, within the bounds above.

    Raises:
        yaml.YAMLError: The text is not YAML, or goes beyond a bound (a `MarkedYAMLError`: line and column).
    """
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
