"""How long a client may take: a connection that has not sent a whole request's headers in time is closed.

uvicorn closes a connection that stays idle after a response (`timeout_keep_alive`) and answers 503 beyond a
number of connections (`limit_concurrency`), but it waits forever for the headers of a request that arrive
slowly, or not at all: a client that opens sockets and trickles bytes (or none) would hold them for ever. The
protocol made here starts a clock when a connection opens, and again when the first bytes of a next request
arrive; the request's headers must be complete before it runs out, or the connection is closed.

The two answers uvicorn gives itself, before the app sees a request (400 to bytes that are no HTTP request, 503
beyond the connection limit), are sent here in the API's error shape (`error_body`), as every other error.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from agentmap.server._security import error_body

__all__ = ["http_protocol"]

_log = logging.getLogger("agentmap.server")


def http_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools when installed, else h11) with a `header_timeout`-second clock."""
    base: type[Any]
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class TimedProtocol(_JsonAnswers, base):  # type: ignore[misc]
        _clock: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._start_clock()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._waiting_for_headers():
                if self._clock is None:  # the first bytes of a next request on a kept-alive connection
                    self._start_clock()
            else:
                self._stop_clock()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_clock()
            super().connection_lost(exc)

        def _waiting_for_headers(self) -> bool:
            return self.cycle is None or bool(self.cycle.response_complete)

        def _start_clock(self) -> None:
            self._clock = self.loop.call_later(header_timeout, self._too_slow)

        def _stop_clock(self) -> None:
            if self._clock is not None:
                self._clock.cancel()
                self._clock = None

        def _too_slow(self) -> None:
            self._clock = None
            if self._waiting_for_headers() and not self.transport.is_closing():
                self.transport.close()

    return TimedProtocol


class _JsonAnswers:
    """What uvicorn's protocol answers itself, in the API's error shape (mixed in before uvicorn's protocol class)."""

    connections: Any
    tasks: Any
    transport: Any
    limit_concurrency: int | None
    _app: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limit, self.limit_concurrency = self.limit_concurrency, None  # answered by `app` below, in JSON

    @property
    def app(self) -> Any:
        """The application, or the busy answer when the connection limit is reached: uvicorn asks for it once per
        request, where it would pick its own plain-text 503."""
        limit = self._limit
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            _log.warning("exceeded the connection limit (%s): answered 503", limit)
            return _busy
        return self._app

    @app.setter
    def app(self, value: Any) -> None:
        self._app = value

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to bytes that are no HTTP request (the connection closes after it)."""
        message = f"the server cannot read this HTTP request ({msg.rstrip('.')})"
        body = _json(error_body("bad-request", message, hint=_HTTP_HINT))
        head = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\n"
        self.transport.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        self.transport.close()


_HTTP_HINT = "send an HTTP/1.1 request: its request line, headers and a body matching its Content-Length"


def _json(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


async def _busy(scope: Any, receive: Any, send: Any) -> None:
    """The answer beyond `--max-connections` (uvicorn's own is plain text)."""
    body = _json(
        error_body(
            "busy",
            "the server has as many open connections as it serves at once (--max-connections)",
            hint="try again in a moment; a client holding idle connections open can close them",
        )
    )
    length = b"%d" % len(body)
    headers = [(b"content-type", b"application/json"), (b"content-length", length), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
