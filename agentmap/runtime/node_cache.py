"""Context `cache` on any node: LangGraph's `CachePolicy`, kept in a file, and its hits in the run's summary.

A node whose Context has `{"cache": {"ttl": 3600}}` gets a LangGraph `CachePolicy`: a later run that gives it
the same inputs (the state keys it reads) takes its recorded update instead of running it. The key is the
node's row (type, Prompt, Context, fields) and its inputs, so a changed row never answers from an old entry.
The entries live in `.agentmap/node_cache.db` under the working folder (in `$AGENTMAP_STATE_DIR` when set;
LangGraph's SQLite cache, read with the checkpoints' allow-list serializer), so they outlive the process. A
failed node's update is never kept; `--no-cache` (`configurable["no_cache"]`) turns the cache off for a run.
Node types that call a model give `cache` their own meaning (the LLM response cache: csv_specs/llm.md) and do
not get a policy. csv_specs/format.md documents the key.
"""

from __future__ import annotations

import contextvars
import json
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap._paths import state_file

if TYPE_CHECKING:
    from langgraph.cache.base import BaseCache
    from langgraph.types import CachePolicy

    from agentmap.runtime.tracking import ExecutionTracker
    from agentmap.spec.models import NodeSpec

__all__ = ["DEFAULT_FILE", "cache_hits", "cache_problem", "node_cache", "policy_for", "without_cache"]

DEFAULT_FILE = Path(".agentmap") / "node_cache.db"

OnHit = Callable[[str, Any], None]
_ON_HIT: contextvars.ContextVar[OnHit | None] = contextvars.ContextVar("agentmap_node_cache_hit", default=None)
_CACHES: dict[Path, BaseCache[Any]] = {}
_LOCK = threading.Lock()


def cache_problem(value: Any, where: str) -> str | None:
    """What is wrong with a `cache` setting (`where`: `Context cache` or `llm.cache`); None when it is good.

    Good: absent, `false` (off), or an object `{"ttl": SECONDS}` with a positive number of seconds.
    """
    if value is None or value is False:
        return None
    if not isinstance(value, Mapping):
        return f'{where} must be an object such as {{"ttl": 3600}} (or false), got {value!r}'
    unknown = sorted(set(value) - {"ttl"})
    if unknown:
        return f'{where} takes only "ttl" (seconds), not {", ".join(map(repr, unknown))}'
    ttl = value.get("ttl")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < math.inf:  # NaN: no number
        return f'{where} "ttl" must be a positive number of seconds, got {ttl!r}'
    return None


def policy_for(node: NodeSpec, reads: Sequence[str] | None) -> CachePolicy[Any] | None:
    """The `CachePolicy` a node's Context `cache` asks for, or None (no `cache`, `false`, or a bad value).

    Args:
        reads: The state keys the node's agent reads, or None when it may read the whole state (the key is then
            the whole state).
    """
    value = node.context.get("cache")
    if not isinstance(value, Mapping) or cache_problem(value, "Context cache"):
        return None
    from langgraph.types import CachePolicy

    from agentmap.agents.journal import digest  # the journal's request digest; imported only for a cached node

    row = digest(
        {
            "type": node.agent_type,
            "prompt": node.prompt,
            "context": node.context,
            "reads": None if reads is None else list(reads),
            "outputs": list(node.outputs),
        }
    )
    keys = None if reads is None else tuple(reads)

    def key(state: Any) -> str:
        values = dict(state) if keys is None else {k: state.get(k) for k in keys}
        return row + json.dumps(values, sort_keys=True, default=repr, ensure_ascii=False)

    return CachePolicy(key_func=key, ttl=max(1, round(float(value["ttl"]))))


def node_cache() -> BaseCache[Any]:
    """The node cache (`node_cache.db` of AgentMap's own folder: `$AGENTMAP_STATE_DIR`, else `.agentmap/` of the
    working folder), one per file and process."""
    path = state_file("node_cache.db", os.getcwd())
    with _LOCK:
        if path not in _CACHES:
            path.parent.mkdir(parents=True, exist_ok=True)
            _CACHES[path] = _cache_class()(path=str(path))
        return _CACHES[path]


def _cache_class() -> Callable[..., BaseCache[Any]]:
    from langgraph.cache.sqlite import SqliteCache

    from agentmap.runtime._serializer import safe_serializer

    class NodeCache(SqliteCache[Any]):
        """LangGraph's SQLite cache that keeps only finished nodes' updates and reports each hit to the run."""

        def __init__(self, *, path: str) -> None:
            super().__init__(path=path, serde=safe_serializer())

        def get(self, keys: Any) -> dict[Any, Any]:
            found = super().get(keys)
            report = _ON_HIT.get()
            if report is not None:
                for (namespace, _), writes in found.items():
                    report(namespace[-1], dict(writes))
            return found

        def set(self, mapping: Any) -> None:
            kept = {key: entry for key, entry in mapping.items() if not _failed(entry[0])}
            if kept:
                super().set(kept)

    return NodeCache


def _failed(writes: Any) -> bool:
    return any(channel == "last_action_success" and value is False for channel, value in writes)


def cache_hits(graph: Any, tracker: ExecutionTracker) -> AbstractContextManager[None]:
    """Within the block, each node of `graph` the node cache answers is recorded in `tracker` (`record_cached`)."""
    return nullcontext() if getattr(graph, "cache", None) is None else _hits_to(tracker.record_cached)


@contextmanager
def _hits_to(on_hit: OnHit) -> Iterator[None]:
    token = _ON_HIT.set(on_hit)
    try:
        yield
    finally:
        try:
            _ON_HIT.reset(token)
        except ValueError:  # an async generator closed from another context than the one that started it
            _ON_HIT.set(None)


def without_cache(configurable: dict[str, Any]) -> dict[str, Any]:
    """The run's configurable with the node cache turned off (`--no-cache`)."""
    from agentmap._langgraph import CACHE_KEY  # None there turns the graph's cache off for the run

    return {**configurable, CACHE_KEY: None}
