"""`agentmap batch --llm-batch --budget USD`: the calls a batch may still place in provider jobs.

A provider bills every request of a job it runs, and a job's answers come back only when it ends: the budget is
therefore held when calls are placed in jobs, not when they are answered. What the batch has committed is what its
checkpoint store records, whichever run of the batch made it (so a batch killed and run again counts it once):

- every model call of the journal that was answered, at the price paid (a job's answer at the batch price, with
  its cached input tokens; a call made directly at its own price);
- every call placed in a job that has not answered it yet, at its estimate: its prompt's characters / 4 as tokens
  at the batch input price, and its output at the mean output of the answers that model gave so far in this
  batch, or, before any, at the request's `max_tokens` (the most it can cost).

Queued calls are placed oldest first while their estimates fit in what is left; the others stay queued in the
journal, their rows waiting: the batch stops at its budget, and a run with a higher budget places them (a call is
never in two jobs). Calls of a model without a price are never held.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentmap.agents._journal_rows import CallKey
from agentmap.agents.costs import Price, Usage
from agentmap.agents.journal_entries import QueuedCall, answered_calls

__all__ = ["Committed", "committed", "estimate", "within"]


@dataclass(frozen=True)
class Committed:
    """What a batch's store says it has committed: spent on answered calls, and estimated for calls in jobs.

    Attributes:
        spent: What the answered model calls cost, in USD, at the prices paid.
        pending: The estimates of the calls placed in jobs and not yet answered.
        outputs: By model: (calls answered, their output tokens), for the estimates.
    """

    spent: float
    pending: float
    outputs: Mapping[str, tuple[int, int]]

    @property
    def total(self) -> float:
        return self.spent + self.pending


def committed(saver: Any, placed: Iterable[QueuedCall]) -> Committed:
    """What the batch of `saver`'s store has committed, `placed` being its queued calls that are in live jobs."""
    spent = 0.0
    outputs: dict[str, tuple[int, int]] = {}
    for call in answered_calls(saver):
        cost = call.usage.get("cost")
        spent += float(cost) if isinstance(cost, (int, float)) else 0.0
        if not call.failed and "output_tokens" in call.usage:
            calls, tokens = outputs.get(call.name, (0, 0))
            outputs[call.name] = (calls + 1, tokens + int(call.usage["output_tokens"]))
    pending = sum(estimate(call, outputs) or 0.0 for call in placed)
    return Committed(spent, pending, outputs)


def estimate(call: QueuedCall, outputs: Mapping[str, tuple[int, int]]) -> float | None:
    """What `call` will cost at most (see the module's docstring); None for a model without a price."""
    request = call.request
    paid = request.price if request is not None else ()
    if request is None or len(paid) < 2 or paid[0] is None or paid[1] is None:
        return None
    body = request.body
    chars = sum(len(text) for key in ("system", "messages", "tools") for text in _texts(body.get(key)))
    answered, tokens = outputs.get(call.name, (0, 0))
    if answered:
        output = -(-tokens // answered)
    else:
        cap = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        output = int(cap) if isinstance(cap, (int, float)) else 0
    price = Price(paid[0], paid[1], *paid[2:4])
    return Usage(-(-chars // 4), output).cost(price)


def within(
    limit: float, queued: Sequence[QueuedCall], placed: set[tuple[CallKey, str]], saver: Any
) -> tuple[list[QueuedCall], list[QueuedCall], Committed]:
    """The calls of `queued` not yet `placed` that fit in what `limit` leaves, oldest first; those held; what the
    batch has committed once the first are placed."""
    live = [call for call in queued if (call.key, call.digest) in placed]
    done = committed(saver, live)
    left = limit - done.total
    added = 0.0
    fits: list[QueuedCall] = []
    held: list[QueuedCall] = []
    for call in queued:
        if (call.key, call.digest) in placed:
            continue
        cost = estimate(call, done.outputs)
        if cost is None or (not held and cost <= left):
            fits.append(call)
            left -= cost or 0.0
            added += cost or 0.0
        else:
            held.append(call)
    return fits, held, Committed(done.spent, done.pending + added, done.outputs)


def _texts(value: Any) -> Iterable[str]:
    """Every text of a request part: the strings of a message list, its blocks, a system prompt, tool schemas."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
