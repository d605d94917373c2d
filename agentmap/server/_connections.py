"""How long a client may take: a connection that has not sent a whole request's headers in time is closed.

uvicorn closes a connection that stays idle after a response (`timeout_keep_alive`) and answers 503 beyond a
number of connections (`limit_concurrency`), but it waits forever for the headers of a request that arrive
slowly, or not at all: a client that opens sockets and trickles bytes (or none) would hold them for ever. The
protocol made here starts a clock when a connection opens, and again when the first bytes of a next request
arrive; the request's headers must be complete before it runs out, or the connection is closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["http_protocol"]


def http_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools when installed, else h11) with a `header_timeout`-second clock."""
    base: type[Any]
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class TimedProtocol(base):  # type: ignore[misc]
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
