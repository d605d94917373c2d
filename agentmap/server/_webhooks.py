"""Webhooks: a run's `webhook` URL is POSTed the run when it ends or pauses, signed, retried, off the run loop.

The URL must be on a host the server allows (`--webhook-host`); it is checked when the run is accepted and
kept in the run's record, so whichever replica ends the run calls it. A delivery is retried with backoff
(`ATTEMPTS` tries) on a network error, a timeout, 408, 429 or a 5xx. When a delivery is next due is kept in
the run's record, written with its end: any replica makes the next try, so a replica that dies mid-retry
loses nothing (a receiver may get a try twice: `X-AgentMap-Delivery`, the run id, tells them apart). With a
secret, every delivery is signed: `X-AgentMap-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`,
the timestamp in `X-AgentMap-Timestamp` (Unix seconds), so a receiver can refuse a replayed or forged body.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from agentmap.server._encode import dumps
from agentmap.server._models import ApiError
from agentmap.server._reach import host_matches
from agentmap.server._records import now

__all__ = ["ATTEMPTS", "Webhooks", "check_webhook", "signature"]

ATTEMPTS = 5
"""Tries per delivery (the first and four retries)."""

_log = logging.getLogger("agentmap.server")


def check_webhook(url: str, hosts: Sequence[str]) -> str:
    """`url` itself when it is an http(s) URL on an allowed host (`host`, or `*.domain` for its subdomains).

    Raises:
        ApiError: 422 `bad-request` naming the `webhook` field and the rule it breaks.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:  # a bracketed host that is no IPv6 address, a port that is no number
        host = ""
    if not host or parts.scheme not in ("http", "https") or not host:
        raise ApiError(422, "bad-request", f"webhook {url!r} is not an http:// or https:// URL", hint="send a full URL")
    if not any(host_matches(host, allowed.strip().lower()) for allowed in hosts):
        raise ApiError(
            422,
            "bad-request",
            f"webhook host {host!r} is not allowed by this server",
            hint="start agentmap serve with --webhook-host "
            + host
            + (f" (allowed now: {', '.join(hosts)})" if hosts else " (no webhook host is allowed now)"),
        )
    return url


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-AgentMap-Signature` value of a delivery: `sha256=` and the HMAC of `"<timestamp>.<body>"`."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


class Webhooks:
    """How deliveries are made: the body of a run's delivery, and one try at a time (the run manager keeps
    the schedule in the run store)."""

    def __init__(self, secret: str | None, *, timeout: float = 10.0) -> None:
        self._secret = secret
        self.timeout = timeout
        """Seconds a receiver has to answer one try."""
        self._client: Any = None

    @staticmethod
    def body(run: dict[str, Any], result: dict[str, Any] | None) -> bytes:
        """The JSON body of a delivery: `run` with its final `values` (and `interrupts`), or its `error`."""
        payload: dict[str, Any] = dict(run)
        result = dict(result or {})
        error = result.pop("__error__", None)
        if error is not None:
            payload["error"] = error
        else:
            payload["values"] = result
            if result.get("__interrupt__"):
                payload["interrupts"] = result["__interrupt__"]
        payload["webhook_sent_at"] = now()
        return dumps(payload).encode()

    async def attempt(self, url: str, body: bytes, delivery: str) -> bool:
        """One try at POSTing `body` to `url`; False when it should be tried again (no answer, 408, 429, 5xx)."""
        import httpx

        if self._client is None:  # made on the loop that uses it; redirects are not followed (another host)
            self._client = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False)
        stamp = str(int(time.time()))
        headers = {"Content-Type": "application/json", "X-AgentMap-Delivery": delivery}
        headers["X-AgentMap-Timestamp"] = stamp
        if self._secret:
            headers["X-AgentMap-Signature"] = signature(self._secret, stamp, body)
        try:
            answer = await self._client.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            _log.info("webhook %s not reached: %s: %s", url, type(exc).__name__, exc)
            return False
        if answer.status_code >= 400:
            _log.warning("webhook %s answered HTTP %d", url, answer.status_code)
        return answer.status_code < 400 or not _retried(answer.status_code)

    def backoff(self, tries: int) -> float | None:
        """Seconds before the next try after `tries` failed ones (0.5, 1, 2, 4); None: give up."""
        return None if tries >= ATTEMPTS else 0.5 * 2 ** (tries - 1)

    async def close(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _retried(status: int) -> bool:
    return status in (408, 429) or status >= 500
