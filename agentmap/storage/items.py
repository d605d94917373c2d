"""`store_reader` and `store_writer`: items in the store that outlives a thread (LangGraph's store).

A node names a `namespace` (a list of labels, or labels separated by dots; `{field}` is filled in from the
node's inputs) and a `key`. The store is the one the graph was compiled with: `agentmap serve` and
`agentmap run` give the store kept beside the checkpoints (`--checkpoint`), Python passes
`agentmap.compile(..., store=agentmap.item_store("runs.db"))`. Context keys: csv_specs/storage.md, "The store".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem
from agentmap.agents.builtins import safe_format
from agentmap.agents.registry import agent

__all__ = ["StoreReaderAgent", "StoreWriterAgent"]


def _labels(context: Mapping[str, Any]) -> list[str]:
    namespace = context.get("namespace")
    return [str(label) for label in namespace] if isinstance(namespace, list) else str(namespace or "").split(".")


def _check(context: Mapping[str, Any]) -> list[ConfigProblem]:
    namespace = context.get("namespace")
    if not namespace or not all(_labels(context)):
        return ['Context needs "namespace": a list of labels such as ["users", "{user_id}"] (or "users.{user_id}")']
    if isinstance(namespace, list) and any("." in label for label in _labels(context)):
        return ['a "namespace" label cannot hold a dot: write the labels as separate items of the list']
    return []


class _StoreAgent(BaseAgent):
    def store(self) -> Any:
        from langgraph.config import get_store

        found = get_store()
        if found is None:
            raise RuntimeError(
                f"{self.name!r} needs the store, and the graph was compiled without one: agentmap run and "
                'agentmap serve give it; in Python pass agentmap.compile(..., store=agentmap.item_store("runs.db"))'
            )
        return found

    def where(self, inputs: Mapping[str, Any]) -> tuple[tuple[str, ...], str | None]:
        """The namespace and key, with `{field}` filled in from the inputs (an input `key` wins)."""
        namespace = tuple(safe_format(label, dict(inputs)) for label in _labels(self.context))
        key = inputs.get("key") or self.context.get("key")
        return namespace, None if key is None else safe_format(str(key), dict(inputs))


@agent("store_reader")
class StoreReaderAgent(_StoreAgent):
    """Reads an item's value from the store, or with no `key` every value of the namespace (a list).

    Context:
        namespace: Where the item lives (required).
        key: The item's key (also an input `key`); without one, the node returns every value in the namespace.
        default: The result when the item does not exist (otherwise None).
        limit: At most this many values when reading a whole namespace (default 100).
    """

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the item's value, the namespace's values, or the default."""
        namespace, key = self.where(inputs)
        if key is None:
            limit = int(self.context.get("limit", 100))
            return [item.value for item in self.store().search(namespace, limit=limit)]
        item = self.store().get(namespace, key)
        return self.context.get("default") if item is None else item.value

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        """A namespace is required."""
        return _check(context)


@agent("store_writer")
class StoreWriterAgent(_StoreAgent):
    """Writes its inputs to the store as one item (an input holding an object is stored as it is).

    Context:
        namespace: Where the item lives (required).
        key: The item's key (also an input `key`; required).
    """

    def process(self, inputs: dict[str, Any]) -> Any:
        """Store the value and return it."""
        namespace, key = self.where(inputs)
        if not key:
            raise ValueError(f'{self.name!r} has no key to write under: give Context "key" or an input `key`')
        values = {name: value for name, value in inputs.items() if name != "key"}
        only = next(iter(values.values())) if len(values) == 1 else None
        value = dict(only) if isinstance(only, Mapping) else values
        self.store().put(namespace, key, value)
        return value

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        """A namespace is required."""
        return _check(context)
