"""Who calls, and what they may do: a `langgraph_sdk.Auth` object's handlers, called as LangGraph's server calls them.

`agentmap serve --auth auth.py:my_auth` (`load_auth`, `_auth_load.py`) gives an `Authorization`. Its `authenticate`
turns a request into an `AuthUser` with the user's `@auth.authenticate` handler (given the parameters it names:
`request`, `headers`, `authorization`, `path`, `method`, `query_params`, `path_params`, `scope`); its `decide` calls
the most specific `@auth.on` handler of a resource and action (resource and action, the resource, the action, then
the global one; none: allowed), which may edit the value it is given, return `False` (403), or a filter
(`_filters.Filter`) the store applies in its queries. A handler's `Auth.exceptions.HTTPException` is that status; an
`AssertionError` is 403 (401 from `authenticate`), as LangGraph's server answers; anything else is a 500 whose log
line names the handler, never what the request carried, and the request is refused.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from typing import Any, Literal

from langgraph_sdk.auth.exceptions import HTTPException
from langgraph_sdk.auth.types import AuthContext
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request

from agentmap.errors import ErrorCode
from agentmap.server._encode import jsonable
from agentmap.server._filters import BadFilter, Filter
from agentmap.server._models import ApiError, ProtocolCode

__all__ = ["PARAMETERS", "Action", "AuthUser", "Authorization", "BadHandler", "Resource"]

_log = logging.getLogger("agentmap.server")

PARAMETERS = ("request", "headers", "authorization", "path", "method", "query_params", "path_params", "scope")
"""What an `authenticate` handler may name, as LangGraph's server passes them."""

Scope = MutableMapping[str, Any]

Resource = Literal["threads", "assistants", "crons", "store"]
"""What LangGraph's handlers are registered on (a thread's runs are the thread's: `threads`)."""
Action = Literal["create", "read", "update", "delete", "search", "create_run", "put", "get", "list_namespaces"]
"""What is done to a resource (`create_run` of threads; `put`, `get`, `list_namespaces` of the store)."""


class BadHandler(ValueError):
    """An `authenticate` handler names a parameter LangGraph does not pass (found when the file is loaded)."""


class AuthUser(Mapping[str, Any]):
    """The user an `authenticate` handler returned, as LangGraph hands it on (`ctx.user` of the `@auth.on` handlers,
    `config["configurable"]["langgraph_auth_user"]` of a run): every field by key or attribute (`user["org"]`,
    `user.org`), `identity` (text), `display_name` (the identity unless given), `is_authenticated` (true unless
    given) and `permissions` (a list). Its fields are JSON, so a run taken over by another replica gets the same
    user."""

    __slots__ = ("_fields",)

    def __init__(self, fields: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_fields", dict(fields))

    @property
    def identity(self) -> str:
        """Who the user is (what filters and quotas key on)."""
        return str(self._fields["identity"])

    @property
    def display_name(self) -> str:
        """A name to show: the handler's `display_name`, else the identity."""
        return str(self._fields.get("display_name") or self.identity)

    @property
    def is_authenticated(self) -> bool:
        """True unless the handler said otherwise."""
        return bool(self._fields.get("is_authenticated", True))

    @property
    def permissions(self) -> list[str]:
        """The handler's `permissions` (none: an empty list)."""
        return [str(p) for p in self._fields.get("permissions") or ()]

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("an AuthUser is read only")

    def __reduce__(self) -> tuple[Any, ...]:
        return AuthUser, (self._fields,)

    def __repr__(self) -> str:
        return f"AuthUser(identity={self.identity!r})"

    def to_json(self) -> dict[str, Any]:
        """Its fields, as a run's record keeps them."""
        return dict(self._fields)

    @classmethod
    def of(cls, returned: Any) -> AuthUser:
        """The user an `authenticate` handler returned: a text (the identity), a mapping with `identity`, an object
        with an `identity` attribute, or `(permissions, user)`.

        Raises:
            TypeError: None of these, or an identity that is no text (or empty).
        """
        permissions = None
        if isinstance(returned, tuple) and len(returned) == 2:
            permissions, returned = returned
        if isinstance(returned, str):
            fields: dict[str, Any] = {"identity": returned}
        elif isinstance(returned, Mapping):
            fields = dict(returned)
        elif hasattr(returned, "identity"):
            dumped = getattr(returned, "model_dump", None) or getattr(returned, "dict", None)
            fields = dict(dumped()) if callable(dumped) else {}
            for name in ("identity", "display_name", "is_authenticated", "permissions"):
                if hasattr(returned, name):
                    fields[name] = getattr(returned, name)
        else:
            raise TypeError(f"it returned a {type(returned).__name__}, not a user (a text, or a dict with 'identity')")
        if not isinstance(fields.get("identity"), str) or not fields["identity"]:
            raise TypeError("the user it returned has no identity (a non-empty text)")
        if permissions is not None:
            fields["permissions"] = list(permissions)
        return cls(jsonable(fields))


class _Headers(dict[bytes, bytes]):
    """The request's headers as LangGraph passes them (`dict[bytes, bytes]`, lower-case names), also found by a text
    name (`headers.get("x-api-key")`, as LangGraph's documents write it)."""

    def __getitem__(self, key: bytes | str) -> bytes:
        return super().__getitem__(key.encode("latin-1") if isinstance(key, str) else key)

    def get(self, key: bytes | str, default: Any = None) -> Any:
        return super().get(key.encode("latin-1") if isinstance(key, str) else key, default)

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.encode("latin-1") if isinstance(key, str) else key)


class Authorization:
    """A loaded `langgraph_sdk.Auth` object: `authenticate` a request, `decide` an operation.

    Args:
        auth: The `Auth` object.
        source: Where it came from (`auth.py:my_auth`), for the log.
    """

    def __init__(self, auth: Any, source: str) -> None:
        self.auth = auth
        self.source = source
        self._authenticate: Callable[..., Any] = auth._authenticate_handler
        self._wants = _parameters(self._authenticate)
        self._handlers: dict[tuple[Resource, Action], Callable[..., Awaitable[Any]] | None] = {}

    async def authenticate(self, scope: Scope, path_params: Callable[[], dict[str, str]]) -> AuthUser:
        """The user of the request `scope` (`path_params()` gives its path's parameters, matched on demand).

        Raises:
            ApiError: The handler refused (its status), or failed (500, named in the log).
        """
        handler = self._authenticate
        arguments = {name: _argument(name, scope, path_params) for name in self._wants}
        try:
            if inspect.iscoroutinefunction(handler):
                returned = await handler(**arguments)
            else:
                returned = await run_in_threadpool(handler, **arguments)
        except Exception as exc:
            raise self._refusal(handler, exc, 401) from None
        try:
            return AuthUser.of(returned)
        except TypeError as exc:
            raise self._failed(handler, str(exc)) from None

    def handler(self, resource: Resource, action: Action) -> Callable[..., Awaitable[Any]] | None:
        """The handler LangGraph calls for `resource` and `action`: the most specific one (resource and action, the
        resource, the action, any), or the global one; None: no handler, so allowed."""
        key = (resource, action)
        if key not in self._handlers:
            registered: dict[tuple[str, str], list[Any]] = self.auth._handlers
            found = next((registered[k][-1] for k in (key, (resource, "*"), ("*", action)) if k in registered), None)
            if found is None and ("*", "*") in registered:
                found = registered[("*", "*")][-1]
            if found is None and self.auth._global_handlers:
                found = self.auth._global_handlers[-1]
            self._handlers[key] = found
        return self._handlers[key]

    async def decide(self, user: AuthUser, resource: Resource, action: Action, value: dict[str, Any]) -> Filter | None:
        """Call the handler of `resource` and `action` with `value` (which it may edit); the filter it returned.

        Raises:
            ApiError: 403 (`False`, an `AssertionError`), the status of its `HTTPException`, or 500 (it raised
                anything else, or returned what is no answer).
        """
        handler = self.handler(resource, action)
        if handler is None:
            return None
        context = AuthContext(user=user, permissions=user.permissions, resource=resource, action=action)
        try:
            result = await handler(ctx=context, value=value)
        except Exception as exc:
            raise self._refusal(handler, exc, 403, f"{resource}.{action}") from None
        if result is None or result is True:
            return None
        if result is False:
            raise ApiError(
                403, ErrorCode.FORBIDDEN, f"{resource}.{action} is not allowed for this user", hint=_FORBIDDEN
            )
        if not isinstance(result, Mapping):
            raise self._failed(handler, f"it returned a {type(result).__name__}, not a filter, True, False or None")
        try:
            return Filter.of(result)
        except BadFilter as exc:
            raise self._failed(handler, f"it returned no filter: {exc}") from None

    def _refusal(self, handler: Any, exc: Exception, asserted: int, what: str = "authenticate") -> ApiError:
        """What a handler's exception answers: its `HTTPException`'s status, `asserted` for an `AssertionError`, else
        a 500 (the log names the handler and the exception's type, not its message: it may quote the request)."""
        if isinstance(exc, HTTPException):
            code: ErrorCode | ProtocolCode = (
                "unauthorized"
                if exc.status_code == 401
                else ErrorCode.FORBIDDEN
                if exc.status_code == 403
                else "http-error"
            )
            hint = _FORBIDDEN if exc.status_code == 403 else _SIGN_IN if exc.status_code == 401 else None
            return ApiError(exc.status_code, code, str(exc.detail), hint=hint, headers=exc.headers)
        if isinstance(exc, AssertionError):
            if asserted == 401:
                return ApiError(401, "unauthorized", str(exc) or "not authenticated", hint=_SIGN_IN)
            return ApiError(
                403, ErrorCode.FORBIDDEN, str(exc) or f"{what} is not allowed for this user", hint=_FORBIDDEN
            )
        return self._failed(handler, f"it raised {type(exc).__name__}{_raised_at(exc)}")

    def _failed(self, handler: Any, why: str) -> ApiError:
        name = getattr(handler, "__qualname__", repr(handler))
        _log.error("the auth handler %s of %s failed: %s; the request was refused (500)", name, self.source, why)
        return ApiError(
            500,
            ErrorCode.AUTH_FAILED,
            "the server's auth handler failed, so the request was refused",
            hint="the server's log names the handler; the request id finds the line",
        )


_FORBIDDEN = "the server's auth handlers decide what each user may do (csv_specs/serve.md, Users and permissions)"
_SIGN_IN = "send the credentials the server's auth handler expects (usually Authorization: Bearer TOKEN)"


def _raised_at(exc: BaseException) -> str:
    """` at file:line` of the innermost frame the exception passed (no message: it may quote the request)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else ""


def _parameters(handler: Callable[..., Any]) -> tuple[str, ...]:
    """The parameters of `PARAMETERS` that `handler` names.

    Raises:
        BadHandler: It needs one LangGraph does not pass.
    """
    signature = inspect.signature(handler)
    for name, parameter in signature.parameters.items():
        if (
            name not in PARAMETERS
            and parameter.default is parameter.empty
            and parameter.kind
            not in (
                parameter.VAR_KEYWORD,
                parameter.VAR_POSITIONAL,
            )
        ):
            raise BadHandler(
                f"its authenticate handler {handler.__qualname__} needs {name!r}, which LangGraph does not pass "
                f"(it passes {', '.join(PARAMETERS)})"
            )
    return tuple(name for name in signature.parameters if name in PARAMETERS)


def _argument(name: str, scope: Scope, path_params: Callable[[], dict[str, str]]) -> Any:
    if name == "request":
        return Request(scope)
    if name == "headers":
        return _Headers(scope.get("headers", ()))
    if name == "authorization":
        found = dict(scope.get("headers", ())).get(b"authorization")
        return found.decode("latin-1") if found is not None else None
    if name == "query_params":
        return QueryParams(scope.get("query_string", b""))
    if name == "path_params":
        return path_params()
    if name == "scope":
        return scope
    return scope[name]  # path, method
