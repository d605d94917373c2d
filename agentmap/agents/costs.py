"""What model calls cost: tokens as the provider reports them, a price table, a run's spending and its budget.

The LLM adapter measures each model call it really makes (a call the journal replays costs nothing new) and
adds it to the node's tally (`tally()`, opened by the LLM agent around its work: the node's `input_tokens`,
`output_tokens`, `cached_tokens`, `cache_write_tokens`, `cost`, `replayed_calls`, `cache_hits`) and to the run's meter
(`Meter`, in the run's config under `METER_KEY`: what the run spent, its budget, the models it warned about). The
prices are `prices.py`'s table. Here because the agents room holds the call journal, which keeps each call's tokens
and cost, and the runtime makes the meter.
"""

from __future__ import annotations

import contextvars
import logging
import math
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agentmap.agents.prices import DEFAULT_PRICES, PRICES_DATE, Price, price_of, price_table
from agentmap.errors import AgentMapError, ErrorCode

__all__ = [
    "DEFAULT_PRICES",
    "METER_KEY",
    "PRICES_DATE",
    "BudgetExceeded",
    "Meter",
    "Price",
    "Tally",
    "Usage",
    "is_budget",
    "price_of",
    "price_table",
    "tally",
]

METER_KEY = "agentmap_meter"
_logger = logging.getLogger("agentmap.costs")


@dataclass(frozen=True)
class Usage:
    """The tokens of one model call, as its provider reported them.

    `input_tokens` is all of the prompt: the part read from the provider's prompt cache (`cached_tokens`), the part
    written to it (`cache_write_tokens`, Anthropic's `cache_creation_input_tokens`) and the rest.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    @classmethod
    def of(cls, reply: Any) -> Usage:
        """The usage a langchain-core `AIMessage` carries (`usage_metadata`; its `input_token_details` name the
        cache reads and writes, the writes also by lifetime); zeros when it has none."""
        usage = getattr(reply, "usage_metadata", None) or {}
        details = usage.get("input_token_details") or {}
        by_lifetime = sum(int(details.get(k) or 0) for k in _CACHE_WRITE_KEYS)
        return cls(
            int(usage.get("input_tokens", 0)),
            int(usage.get("output_tokens", 0)),
            int(details.get("cache_read") or 0),
            by_lifetime or int(details.get("cache_creation") or 0),
        )

    def cost(self, price: Price) -> float:
        """What these tokens cost at `price`, in USD: the input read from the cache at the cached price, the input
        written to it at the cache-write price, the rest of the input at the input price (a price the table does
        not give is the input price); `price.in_batch()` for a call billed at the batch price."""
        cached = price.input if price.cached_input is None else price.cached_input
        written = price.input if price.cache_write is None else price.cache_write
        fresh = max(self.input_tokens - self.cached_tokens - self.cache_write_tokens, 0)
        return (
            fresh * price.input
            + self.cached_tokens * cached
            + self.cache_write_tokens * written
            + self.output_tokens * price.output
        ) / 1e6


_CACHE_WRITE_KEYS = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")
"""langchain-anthropic's cache writes by lifetime (its `cache_creation` is then 0)."""


def is_budget(value: object) -> bool:
    """Whether `value` can be a budget: a finite number of US dollars above zero (True and False are not numbers;
    NaN and infinity, which JSON and YAML can spell, are not amounts)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 < value < math.inf


class BudgetExceeded(AgentMapError, RuntimeError):
    """The next model call would take the run (or the node) past its budget; the run stops before it.

    The run is saved up to the node that stopped (with a thread): `agentmap resume ID --budget MORE` continues.
    """

    default_code = ErrorCode.BUDGET_EXCEEDED
    exit_code = 6
    stops_run = True  # not a node failure: no Failure_Next, the run ends here (agents/_bridge.py)


@dataclass
class Meter:
    """One run's spending: what its model calls cost, its budget, the unpriced models it has warned about.

    Args:
        limit: The run's budget in USD (None: no limit).
        spent: What the run (or the thread it continues) has spent already.
    """

    limit: float | None = None
    spent: float = 0.0
    warned: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, cost: float) -> None:
        """Count a call's cost."""
        with self._lock:
            self.spent += cost

    def unpriced(self, model: str) -> None:
        """Warn, once per run, that `model` has no price: its calls are counted in tokens, not in dollars."""
        with self._lock:
            if model in self.warned:
                return
            self.warned.add(model)
        _logger.warning(
            "model %r has no price: its tokens are counted, its cost is not (add it to llm.prices in agentmap.yaml, "
            "USD per million tokens; see csv_specs/llm.md)",
            model,
        )


@dataclass
class Tally:
    """One node execution's model calls: tokens and cost of the calls made, and how many were replayed."""

    node: str = ""
    limit: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    calls: int = 0
    replayed: int = 0
    cache_hits: int = 0
    unpriced: set[str] = field(default_factory=set)

    def metadata(self) -> dict[str, Any]:
        """What the node records (`input_tokens`, `output_tokens`, `cached_tokens`, `cache_write_tokens`,
        `total_tokens`, `cost`, `replayed_calls`, `cache_hits`, `unpriced_models`); nothing when it made no call."""
        if not self.calls and not self.replayed and not self.cache_hits:
            return {}
        data: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }
        if self.cost is not None:
            data["cost"] = round(self.cost, 8)
        if self.replayed:
            data["replayed_calls"] = self.replayed
        if self.cache_hits:
            data["cache_hits"] = self.cache_hits
        if self.unpriced:
            data["unpriced_models"] = sorted(self.unpriced)
        return data


_TALLY: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("agentmap_cost_tally", default=None)


@contextmanager
def tally(node: str, limit: float | None = None) -> Iterator[Tally]:
    """Count the model calls made inside this block as one node execution's (`limit`: the node's budget)."""
    current = Tally(node, limit)
    token = _TALLY.set(current)
    try:
        yield current
    finally:
        _TALLY.reset(token)


def meter() -> Meter | None:
    """The meter of the run whose node is running here (None outside a run AgentMap started)."""
    if "langchain_core.runnables.config" not in sys.modules:
        return None  # no run has started in this process
    from agentmap._langgraph import current_config

    found = (current_config().get("configurable") or {}).get(METER_KEY)
    return found if isinstance(found, Meter) else None


def check(
    model: str,
    price: Price | None,
    prompt_chars: int,
    fallback_limit: float | None,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> None:
    """Stop before a call whose prompt alone would take the run or the node past its budget: its characters / 4
    as tokens, of which `cached_tokens` (what the model's previous call held in the provider's prompt cache) at
    the cached price, `cache_write_tokens` (what the call will write to it) at the cache-write price and the rest
    at the input price, the prices the call will be billed at.

    Raises:
        BudgetExceeded: With what was spent, the limit and how to continue.
    """
    if price is None:
        return
    tokens = -(-prompt_chars // 4)  # rounded up
    read = min(cached_tokens, tokens)
    estimate = Usage(tokens, 0, read, min(cache_write_tokens, tokens - read)).cost(price)
    node = _TALLY.get()
    run = meter()
    limit = run.limit if run is not None and run.limit is not None else fallback_limit
    spent = run.spent if run is not None else 0.0
    where = f"node {node.node!r}" if node is not None and node.node else "the run"
    if limit is not None and spent + estimate > limit:
        raise BudgetExceeded(
            f"{where} stopped before calling {model!r}: the run has spent ${spent:.4f} of its ${limit:.4f} budget, "
            f"and this call's prompt alone would cost about ${estimate:.4f}",
            hint="raise the budget and continue the thread: agentmap resume THREAD --budget MORE",
        )
    if node is not None and node.limit is not None and (node.cost or 0.0) + estimate > node.limit:
        raise BudgetExceeded(
            f"node {node.node!r} stopped before calling {model!r}: it has spent ${node.cost or 0.0:.4f} of its "
            f"${node.limit:.4f} budget (Context budget), and this call's prompt alone would cost about "
            f"${estimate:.4f}",
            hint='raise the node\'s Context {"budget": ...} and continue the thread with agentmap resume THREAD',
        )


def record(model: str, usage: Usage, price: Price | None) -> float | None:
    """Count a call made for real: in the node's tally and the run's meter; its cost (None: unpriced)."""
    cost = None if price is None else usage.cost(price)
    node = _TALLY.get()
    run = meter()
    if node is not None:
        node.calls += 1
        node.input_tokens += usage.input_tokens
        node.output_tokens += usage.output_tokens
        node.cached_tokens += usage.cached_tokens
        node.cache_write_tokens += usage.cache_write_tokens
        if cost is not None:
            node.cost = (node.cost or 0.0) + cost
        else:
            node.unpriced.add(model)
    if run is not None and cost is not None:
        run.add(cost)
    if cost is None:
        if run is not None:
            run.unpriced(model)
        else:
            _logger.debug("model %r has no price", model)
    return cost


def replayed() -> None:
    """Count a call the journal answered: it costs nothing new."""
    node = _TALLY.get()
    if node is not None:
        node.replayed += 1


def cache_hit() -> None:
    """Count a call the LLM response cache answered: no tokens, no cost."""
    node = _TALLY.get()
    if node is not None:
        node.cache_hits += 1
