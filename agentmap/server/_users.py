"""Each request's user, and the one question every route asks before it touches a resource.

The `Users` middleware (inside the `Guard`, so the API key, the hosts and the size limits come first) authenticates
every request but the public paths with the server's `Authorization` (`--auth`), answers a refusal in the API's error
shape, and gives the request a `Caller`. A route, `/mcp`, `/a2a` and the AG-UI endpoint get it (`caller_of`,
`caller_in`) and ask it `decide(resource, action, value)` before each operation, as LangGraph's server calls its
`@auth.on` handlers: the handler may edit `value` (the route uses what it left), refuse (the route's answer is the
refusal) or return a filter, which the route hands to the store. Every decision is an entry of the audit log
(`--audit`), written once the request's answer has a status.

Without `--auth` the `Caller` has no user and `decide` allows everything (and, without `--audit`, costs nothing).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import anyio.from_thread
from fastapi import Depends, Request
from starlette.routing import Match

from agentmap.server._models import ApiError
from agentmap.server._security import error_body

if TYPE_CHECKING:
    from agentmap.server._audit import Audit
    from agentmap.server._auth import Action, Authorization, AuthUser, Resource
    from agentmap.server._filters import Filter

__all__ = ["CALLER", "Caller", "CallerOf", "Users", "caller_in", "caller_of"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CALLER = "agentmap.caller"
"""The key of a request's `Caller` in its ASGI scope's `state`."""

_EVENTS = {
    "create": "created",
    "read": "read",
    "update": "updated",
    "delete": "deleted",
    "search": "searched",
    "create_run": "started",
    "put": "wrote",
    "get": "read",
    "list_namespaces": "listed",
}
_IDS = ("thread_id", "run_id", "cron_id", "assistant_id", "namespace", "key")


class Caller:
    """Who sent a request, and the server's answer to what they ask to do.

    Args:
        user: The user `authenticate` returned; None without `--auth`.
        authorization: The server's `Auth` handlers; None without `--auth`.
        audit: The audit log; None without `--audit`.
        request: What the audit log says of the request (address, method, path, request id).
    """

    def __init__(
        self,
        user: AuthUser | None = None,
        authorization: Authorization | None = None,
        audit: Audit | None = None,
        request: dict[str, Any] | None = None,
    ) -> None:
        self.user = user
        self.authorization = authorization
        self.audit = audit
        self._request = request or {}
        self._held: list[dict[str, Any]] = []
        self._status: int | None = None

    @property
    def identity(self) -> str | None:
        """The user's identity (None without `--auth`): what quotas count by."""
        return self.user.identity if self.user is not None else None

    async def decide(self, resource: Resource, action: Action, value: dict[str, Any]) -> Filter | None:
        """Whether this caller may do `action` on `resource` (`value`: what LangGraph hands the handler for it,
        which the handler may edit); the filter the store must apply, or None.

        Raises:
            ApiError: The handler refused (403, its own status) or failed (500).
        """
        if self.authorization is None or self.user is None:
            if self.audit is not None:
                self._record(resource, action, value, allowed=True)
            return None
        try:
            found = await self.authorization.decide(self.user, resource, action, value)
        except ApiError:
            if self.audit is not None:
                self._record(resource, action, value, allowed=False)
            raise
        if self.audit is not None:
            self._record(resource, action, value, allowed=True)
        return found

    def decide_now(self, resource: Resource, action: Action, value: dict[str, Any]) -> Filter | None:
        """`decide` from a route running in a worker thread (its handler runs on the event loop)."""
        if self.authorization is None or self.user is None or self.authorization.handler(resource, action) is None:
            if self.audit is not None:
                self._record(resource, action, value, allowed=True)
            return None
        return anyio.from_thread.run(self.decide, resource, action, value)

    def started(self, status: int) -> None:
        """The request's answer began with `status`: its decisions so far go to the audit log, later ones at once."""
        self._status = status
        held, self._held = self._held, []
        for entry in held:
            self._write(entry)

    def _record(self, resource: Resource, action: Action, value: dict[str, Any], *, allowed: bool) -> None:
        assert self.audit is not None
        event = _EVENTS.get(action, action)
        if action == "create_run" and (value.get("kwargs") or {}).get("command"):
            event = "answered"
        elif action == "update" and value.get("action") == "interrupt":
            event = "cancelled"
        entry: dict[str, Any] = {
            "at": datetime.now(UTC).isoformat(),
            "identity": self.identity,
            **self._request,
            "event": event,
            "resource": resource,
            "action": action,
            "allowed": allowed,
        }
        for name in _IDS:
            if value.get(name) is not None:
                entry[name] = list(value[name]) if name == "namespace" else value[name]
        if self.audit.content:
            kwargs = value.get("kwargs") or {}
            content = {k: kwargs[k] for k in ("input", "command") if kwargs.get(k) is not None}
            if action == "put" and "value" in value:
                content["value"] = value["value"]
            if content:
                entry["content"] = content
        if self._status is None:
            self._held.append(entry)
        else:
            self._write(entry)

    def _write(self, entry: dict[str, Any]) -> None:
        assert self.audit is not None
        self.audit.write({**entry, "status": self._status})


def caller_in(scope: Scope) -> Caller:
    """The `Caller` the `Users` middleware gave the request of `scope` (one allowed everything when there is none:
    a server without `--auth` and `--audit`)."""
    found = scope.get("state", {}).get(CALLER)
    return found if isinstance(found, Caller) else _NOBODY


async def caller_of(request: Request) -> Caller:
    """A route's `Caller` (the FastAPI dependency of `CallerOf`)."""
    return caller_in(request.scope)


_NOBODY = Caller()

CallerOf = Annotated[Caller, Depends(caller_of)]
"""A route's parameter: the request's `Caller` (`def route(thread_id: str, caller: CallerOf)`)."""


class Users:
    """ASGI middleware: authenticate each request of the API (`--auth`), give it its `Caller`, and hand its audit
    entries to the log once its answer has a status.

    Args:
        app: The application behind it.
        authorization: The server's `Auth` handlers (None: no user is asked for).
        audit: The audit log (None: none kept).
        public: Whether a path is served to anyone (the viewer's page and files, the health check).
        routes: The application's routes, to match a request's path parameters when a handler asks for them.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        authorization: Authorization | None,
        audit: Audit | None,
        public: Callable[[str], bool],
        routes: Sequence[Any] = (),
    ) -> None:
        self.app = app
        self._authorization = authorization
        self._audit = audit
        self._public = public
        self._routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self._authorization is None and self._audit is None):
            await self.app(scope, receive, send)
            return
        if self._public(scope["path"]) or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        user = None
        if self._authorization is not None:
            try:
                user = await self._authorization.authenticate(scope, lambda: self._path_params(scope))
            except ApiError as err:
                await _refuse(send, err, scope)
                return
            scope["user"] = user  # Starlette's `request.user`, and what the A2A SDK reads
        caller = Caller(user, self._authorization, self._audit, _described(scope) if self._audit else None)
        scope.setdefault("state", {})[CALLER] = caller
        if self._audit is None:
            await self.app(scope, receive, send)
            return
        started = [False]

        async def heard(message: Message) -> None:
            if message["type"] == "http.response.start" and not started[0]:
                started[0] = True
                caller.started(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, heard)
        finally:
            if not started[0]:
                caller.started(500)

    def _path_params(self, scope: Scope) -> dict[str, str]:
        for route in self._routes:
            match, child = route.matches(scope)
            if match == Match.FULL:
                return {k: str(v) for k, v in child.get("path_params", {}).items()}
        return {}


def _described(scope: Scope) -> dict[str, Any]:
    """What the audit log keeps of a request: where it came from, what it asked, its id, and by which protocol."""
    client = scope.get("client")
    path = str(scope["path"])
    via = next((name for name in ("mcp", "a2a", "agui") if path == f"/{name}" or path.startswith(f"/{name}/")), "http")
    return {
        "address": client[0] if client else None,
        "method": scope["method"],
        "path": path,
        "via": via,
        "request_id": scope.get("state", {}).get("request_id"),
    }


async def _refuse(send: Send, err: ApiError, scope: Scope) -> None:
    body = error_body(err.code, err.message, hint=err.hint, request_id=scope.get("state", {}).get("request_id"))
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (err.headers or {}).items()]
    await send({"type": "http.response.start", "status": err.status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
