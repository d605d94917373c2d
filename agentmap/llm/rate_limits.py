"""One request-rate limiter per model provider, shared by every model of that provider in this process.

`llm.rate_limit` (requests per second; `agentmap batch --rate-limit 5/s` sets it) makes `build_model` hand
each chat model langchain-core's `InMemoryRateLimiter` for its provider, so all the nodes and rows of a
batch that call one provider share one budget and do not drown in HTTP 429 replies.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.rate_limiters import InMemoryRateLimiter

__all__ = ["provider_limiter"]

_LIMITERS: dict[tuple[str, float], InMemoryRateLimiter] = {}
_LOCK = threading.Lock()


def provider_limiter(provider: str, requests_per_second: float) -> InMemoryRateLimiter:
    """The limiter shared by every model of `provider` limited to `requests_per_second`."""
    from langchain_core.rate_limiters import InMemoryRateLimiter

    key = (provider, float(requests_per_second))
    with _LOCK:
        limiter = _LIMITERS.get(key)
        if limiter is None:
            # a bucket of one: no burst at the start, requests evenly spaced
            limiter = InMemoryRateLimiter(
                requests_per_second=key[1], check_every_n_seconds=min(0.05, 0.1 / key[1]), max_bucket_size=1
            )
            _LIMITERS[key] = limiter
        return limiter
