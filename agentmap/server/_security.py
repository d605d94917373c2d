"""What stands in front of every route: request ids and access logs, who may reach the server from a web page
(`Host`, `Origin`, JSON bodies, a per-launch token: `_reach.py`), the API key, the size limits of the headers and
the body.

One plain ASGI middleware, so streamed responses pass through untouched; the studio stands behind it too. Errors
are JSON documents with AgentMap's error codes: `{"code", "message", "detail", "hint", "request_id"}` (`message`
is what `langgraph-sdk` shows in its exceptions).
"""

from __future__ import annotations

import hmac
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from agentmap.errors import ConfigError, ErrorCode
from agentmap.server._reach import Reach, is_loopback

__all__ = [
    "MAX_HEADERS",
    "PUBLIC_PATHS",
    "Guard",
    "error_body",
    "is_loopback",
    "require_key",
    "server_public",
    "too_large",
]

_log = logging.getLogger("agentmap.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_HEADERS = 65_536
"""The most bytes a request's headers may take (names and values): beyond, 413 before anything reads them (a 1 MB
token sent to an auth handler, say)."""

PUBLIC_PATHS = ("/", "/health", "/ok", "/docs", "/openapi.json", "/favicon.ico")
"""Paths served without the API key: the viewer's page and files, the health check, the API's description."""


def server_public(path: str) -> bool:
    """Whether `agentmap serve` answers `path` without the API key: `PUBLIC_PATHS` and the viewer's files."""
    return path in PUBLIC_PATHS or path.startswith("/viewer/")


def require_key(host: str, api_key: str | None, *, auth: bool = False) -> None:
    """Refuse to listen beyond this machine without an API key (or auth handlers, `auth`, which ask every request
    who sends it).

    Raises:
        ConfigError: `host` is not loopback and neither is set.
    """
    if not api_key and not auth and not is_loopback(host):
        raise ConfigError(
            f"agentmap serve refuses to listen on {host} without an API key: anyone who reaches the port could "
            "run your workflows",
            code=ErrorCode.API_KEY_REQUIRED,
            hint="set a key in an environment variable and name it: AGENTMAP_API_KEY=... agentmap serve ... "
            "--api-key-env AGENTMAP_API_KEY, or give auth handlers with --auth auth.py:my_auth (or listen on "
            "127.0.0.1)",
        )


def error_body(code: str, message: str, *, hint: str | None = None, request_id: str | None = None) -> dict[str, Any]:
    """The JSON document of an error response."""
    body: dict[str, Any] = {"code": code, "message": message, "detail": message}
    if hint:
        body["hint"] = hint
    if request_id:
        body["request_id"] = request_id
    return body


class Guard:
    """ASGI middleware: a request id on every request and response, an access log line, who may reach the server
    from a web page, the token and API key, a body limit.

    Args:
        app: The application behind it.
        api_key: The key every non-public request must carry (`X-Api-Key` or `Authorization: Bearer`); None: open.
        max_body: The largest request body accepted, in bytes.
        reach: The hosts a request may name, the origins that may write, the token (see `_reach.py`).
        public: Whether a path is served without the token and the key (the page and its files).
        bearer_key: Whether the key may come as `Authorization: Bearer KEY` (not when auth handlers read that
            header: `agentmap serve --auth`).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        api_key: str | None,
        max_body: int,
        reach: Reach | None = None,
        public: Callable[[str], bool] = server_public,
        bearer_key: bool = True,
    ) -> None:
        self.app = app
        self._key = api_key.encode() if api_key else None
        self._max = max_body
        self._reach = reach or Reach()
        self._public = public
        self._bearer = bearer_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        given = headers.get("x-request-id", "")
        request_id = given if given.replace("-", "").isalnum() and len(given) <= 64 else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status = [0]

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            refusal = self._refuse(scope, headers)
            if refusal is not None:
                await _send_json(send_with_id, refusal[0], {**refusal[1], "request_id": request_id})
                return
            if "content-length" not in headers and scope["method"] in ("POST", "PUT", "PATCH"):
                buffered = await self._buffered(receive)  # a chunked body: count it before the app reads it
                if buffered is None:
                    await _send_json(send_with_id, 413, {**too_large(self._max), "request_id": request_id})
                    return
                receive = buffered
            await self.app(scope, receive, send_with_id)
        finally:
            _log.info(
                "request_id=%s %s %s %s %.1fms",
                request_id,
                scope["method"],
                scope["path"],
                status[0],
                (time.perf_counter() - started) * 1000,
            )

    def _refuse(self, scope: Scope, headers: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
        size = sum(len(name) + len(value) for name, value in scope.get("headers", ()))
        if size > MAX_HEADERS:
            return 413, error_body(
                ErrorCode.HEADERS_TOO_LARGE,
                f"the request's headers take {size} bytes, more than the server accepts ({MAX_HEADERS})",
                hint="send a shorter token or cookie",
            )
        refused = self._reach.refusal(scope["method"], headers, scope.get("server"))
        if refused is not None:
            return refused[0], error_body(refused[1], refused[2], hint=refused[3])
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self._max:
            return 413, too_large(self._max)
        preflight = scope["method"] == "OPTIONS" and "access-control-request-method" in headers  # never keyed
        if preflight or self._public(scope["path"]):
            return None
        refused = self._reach.token_refusal(headers)
        if refused is not None:
            return refused[0], error_body(refused[1], refused[2], hint=refused[3])
        if self._key is None:
            return None
        given = headers.get("x-api-key") or (_bearer(headers.get("authorization", "")) if self._bearer else "")
        if given and hmac.compare_digest(given.encode(), self._key):
            return None
        return 401, error_body(
            "unauthorized",
            "missing or wrong API key" if given else "this server needs an API key",
            hint="send it as the X-Api-Key header (langgraph-sdk: get_client(url=..., api_key=...))"
            + (" or as Authorization: Bearer KEY" if self._bearer else ""),
        )

    async def _buffered(self, receive: Receive) -> Receive | None:
        """The whole body read ahead (None when it is over the limit), replayed to the app."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if len(body) > self._max:
                return None
            if not message.get("more_body", False):
                break
        sent = [False]

        async def replay() -> Message:
            if not sent[0]:
                sent[0] = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        return replay


def too_large(limit: int) -> dict[str, Any]:
    """The error document of a body over the limit."""
    return error_body(
        "body-too-large",
        f"the request body is larger than the server accepts ({limit} bytes)",
        hint="send a smaller input, or start the server with a larger --max-body",
    )


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _bearer(value: str) -> str:
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""
