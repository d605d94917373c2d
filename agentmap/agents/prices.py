"""What a model's tokens cost: the price table (the providers' published prices, dated), its overrides from
`llm.prices` in agentmap.yaml, and the price of a model looked up by its name.

A `Price` holds every price a provider bills a call at: input, output, input read from its prompt cache, input
written to that cache, and the input and output prices of its batch API. `Usage.cost` (costs.py) prices one
call's tokens; a call billed at the batch price is priced at `price.in_batch()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from agentmap.errors import ConfigError

__all__ = ["DEFAULT_PRICES", "PRICES_DATE", "Price", "price_of", "price_table"]

PRICES_DATE = "2026-11-28"
"""The day the default table was last checked (Anthropic's prices, against its price page; OpenAI's and Google's
are those of 2026-11-01: csv_specs/llm.md, "Prices")."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens.

    Attributes:
        input: Input (prompt) tokens.
        output: Output tokens.
        cached_input: Input read from the provider's prompt cache; None: the input price.
        cache_write: Input written to the provider's prompt cache (Anthropic: 1.25x input for its 5-minute
            cache); None: the input price (OpenAI and Google write their caches for free).
        batch_input: Input sent through the provider's batch API; None: no batch price known (the input price).
        batch_output: Output of a batch request; None: the output price.
    """

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None
    batch_input: float | None = None
    batch_output: float | None = None

    def in_batch(self) -> Price:
        """The price of a call made through the provider's batch API: its batch input and output prices, and its
        cached and cache-write prices with the same discount (the providers' batch discount applies to cache
        reads and writes too); this price when no batch price is known."""
        if self.batch_input is None and self.batch_output is None:
            return self
        batch_input = self.input if self.batch_input is None else self.batch_input
        scale = batch_input / self.input if self.input else 1.0
        return Price(
            batch_input,
            self.output if self.batch_output is None else self.batch_output,
            None if self.cached_input is None else self.cached_input * scale,
            None if self.cache_write is None else self.cache_write * scale,
        )


def _anthropic(input: float, output: float, read: float | None = None, write: float | None = None) -> Price:
    """An Anthropic model's price: 5-minute cache writes at 1.25x input, reads at 0.1x (unless the model's
    price page says otherwise), the Message Batches API at half the input and output prices."""
    read = round(input * 0.1, 6) if read is None else read
    write = round(input * 1.25, 6) if write is None else write
    return Price(input, output, read, write, input / 2, output / 2)


def _halved(input: float, output: float, cached_input: float) -> Price:
    """An OpenAI or Google model's price: cache writes free, the batch API at half the input and output prices."""
    return Price(input, output, cached_input, None, input / 2, output / 2)


DEFAULT_PRICES: Mapping[str, Price] = {
    # OpenAI (platform.openai.com pricing; the Batch API: 50% off input and output)
    "gpt-4o": _halved(2.50, 10.00, 1.25),
    "gpt-4o-mini": _halved(0.15, 0.60, 0.075),
    "gpt-4.1": _halved(2.00, 8.00, 0.50),
    "gpt-4.1-mini": _halved(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _halved(0.10, 0.40, 0.025),
    "o3-mini": _halved(1.10, 4.40, 0.55),
    "o4-mini": _halved(1.10, 4.40, 0.275),
    # Anthropic (platform.claude.com pricing: base input, 5m cache writes, cache hits, output; Batch API 50%)
    "claude-3-haiku": _anthropic(0.25, 1.25, 0.03, 0.30),
    "claude-3-5-haiku": _anthropic(0.80, 4.00),
    "claude-haiku-4-5": _anthropic(1.00, 5.00),
    "claude-3-5-sonnet": _anthropic(3.00, 15.00),
    "claude-3-7-sonnet": _anthropic(3.00, 15.00),
    "claude-sonnet-4": _anthropic(3.00, 15.00),
    "claude-sonnet-5": _anthropic(2.00, 10.00),
    "claude-opus-4": _anthropic(15.00, 75.00),
    "claude-opus-4-5": _anthropic(5.00, 25.00),
    "claude-opus-4-6": _anthropic(5.00, 25.00),
    "claude-opus-4-7": _anthropic(5.00, 25.00),
    "claude-opus-4-8": _anthropic(5.00, 25.00),
    "claude-opus-5": _anthropic(5.00, 25.00),
    "claude-opus-5-5": _anthropic(4.00, 20.00, 0.20),
    # Google (ai.google.dev pricing; Batch Mode: 50% off input and output)
    "gemini-2.0-flash": _halved(0.10, 0.40, 0.025),
    "gemini-2.5-flash": _halved(0.30, 2.50, 0.075),
    "gemini-2.5-pro": _halved(1.25, 10.00, 0.31),
}
"""List prices (csv_specs/llm.md, "Prices"); `llm.prices` in the config overrides and extends them."""

PRICE_FIELDS = tuple(f.name for f in fields(Price))
_PRICE_HINT = (
    "e.g. llm: {prices: {my-model: {input: 0.5, output: 1.5, cached_input: 0.05, cache_write: 0.625, "
    "batch_input: 0.25, batch_output: 0.75}}} (USD per million tokens; input and output are required)"
)


def price_table(overrides: Any) -> dict[str, Price]:
    """The default prices with `llm.prices` (model -> `{input, output, cached_input, cache_write, batch_input,
    batch_output}`) laid over them. An entry is the model's whole price: a price it leaves out is the input (or
    output) price, as for a model no table knows.

    Raises:
        ConfigError: An entry is not a mapping of non-negative numbers with `input` and `output`.
    """
    table = dict(DEFAULT_PRICES)
    if overrides in (None, {}):
        return table
    if not isinstance(overrides, Mapping):
        raise ConfigError("llm.prices must map model names to prices", hint=_PRICE_HINT)
    for model, entry in overrides.items():
        numbers = dict(entry) if isinstance(entry, Mapping) else None
        if (
            numbers is None
            or not {"input", "output"} <= set(numbers) <= set(PRICE_FIELDS)
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in numbers.values())
        ):
            raise ConfigError(
                f"llm.prices.{model} is not a price: {entry!r} (give input and output, and any of cached_input, "
                "cache_write, batch_input, batch_output: non-negative USD per million tokens)",
                hint=_PRICE_HINT,
            )
        table[str(model)] = Price(**{k: float(v) for k, v in numbers.items()})
    return table


def price_of(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of `model`: its own entry, else the longest entry it is a dated version of (`gpt-4o-2024-08-06`
    is `gpt-4o`), with a `provider:` or `provider/` prefix ignored; None when unknown."""
    for name in (model, model.split(":", 1)[-1], model.rsplit("/", 1)[-1]):
        if name in prices:
            return prices[name]
    bare = model.split(":", 1)[-1].rsplit("/", 1)[-1]
    known = [k for k in prices if bare.startswith(k + "-")]
    return prices[max(known, key=len)] if known else None
