"""Webhooks: a run's `webhook` URL is POSTed the run when it ends or pauses, signed, retried, off the run loop.

The URL must be on a host the server allows (`--webhook-host`); it is checked when the run is accepted and
kept in the run's record, so whichever replica ends the run calls it. A delivery is retried with backoff
(`ATTEMPTS` tries) on a network error, a timeout, 408, 429 or a 5xx; it lives in the memory of the replica that
ended the run (a replica that dies mid-retry loses it). With a secret, every delivery is signed:
`X-AgentMap-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`, the timestamp in
`X-AgentMap-Timestamp` (Unix seconds), so a receiver can refuse a replayed or forged body.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from agentmap.server._encode import dumps
from agentmap.server._models import ApiError
from agentmap.server._store import now

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
    if not any(_matches(host, allowed.strip().lower()) for allowed in hosts):
        raise ApiError(
            422,
            "bad-request",
            f"webhook host {host!r} is not allowed by this server",
            hint="start agentmap serve with --webhook-host "
            + host
            + (f" (allowed now: {', '.join(hosts)})" if hosts else " (no webhook host is allowed now)"),
        )
    return url


def _matches(host: str, allowed: str) -> bool:
    if allowed.startswith("*."):
        return host.endswith(allowed[1:])
    return host == allowed


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-AgentMap-Signature` value of a delivery: `sha256=` and the HMAC of `"<timestamp>.<body>"`."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


class Webhooks:
    """Deliveries in flight on the server's event loop (none of them blocks a run)."""

    def __init__(self, secret: str | None, *, backoff: float = 0.5, timeout: float = 10.0) -> None:
        self._secret = secret
        self._backoff = backoff
        self._timeout = timeout
        self._tasks: set[asyncio.Task[None]] = set()
        self._client: Any = None

    def send(self, url: str, run: dict[str, Any], result: dict[str, Any] | None) -> None:
        """POST `run` with its final `values` (or its `error`) to `url` in the background."""
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
        task = asyncio.get_running_loop().create_task(self._deliver(url, dumps(payload).encode()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, url: str, body: bytes) -> None:
        import httpx

        if self._client is None:  # made on the loop that uses it; redirects are not followed (another host)
            self._client = httpx.AsyncClient(timeout=self._timeout, follow_redirects=False)
        delivery = str(uuid.uuid4())
        for attempt in range(1, ATTEMPTS + 1):
            stamp = str(int(time.time()))
            headers = {"Content-Type": "application/json", "X-AgentMap-Delivery": delivery}
            headers["X-AgentMap-Timestamp"] = stamp
            if self._secret:
                headers["X-AgentMap-Signature"] = signature(self._secret, stamp, body)
            try:
                answer = await self._client.post(url, content=body, headers=headers)
                if answer.status_code < 400 or not _retried(answer.status_code):
                    if answer.status_code >= 400:
                        _log.warning("webhook %s refused the delivery: HTTP %d", url, answer.status_code)
                    return
                problem = f"HTTP {answer.status_code}"
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if attempt == ATTEMPTS:
                _log.warning("webhook %s not delivered after %d tries: %s", url, ATTEMPTS, problem)
                return
            await asyncio.sleep(self._backoff * 2 ** (attempt - 1))

    async def drain(self, timeout: float) -> None:
        """Let the deliveries in flight finish for up to `timeout` seconds, then drop the rest and close."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)
        for task in list(self._tasks):
            task.cancel()
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _retried(status: int) -> bool:
    return status in (408, 429) or status >= 500
