"""How the API reads a request's JSON body: through the runtime's one reader of a value from outside.

FastAPI reads a body with `json.loads`, which takes what the server cannot give back: a lone surrogate
(`"\\ud800"`, stored in a thread's metadata, then every answer listing the thread fails), objects nested until
Python's recursion limit, integers of thousands of digits. Every route of the API (`api_router`) reads its body with
`runtime.values.read_json` first: a body that is not JSON is 400 `bad-request` with its line and column, a value
that breaks a rule is 422 `bad-input` naming its place (`metadata.note`), before the route's model sees it and
before anything is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute

from agentmap.errors import ErrorCode
from agentmap.runtime.values import BadValue, read_json
from agentmap.server._models import ApiError

__all__ = ["JsonRoute", "api_router"]


def api_router(**options: Any) -> APIRouter:
    """An `APIRouter` (with FastAPI's `options`) whose routes read their bodies as `JsonRoute` does."""
    return APIRouter(route_class=JsonRoute, **options)


class JsonRoute(APIRoute):
    """A route whose JSON body is read by `read_json` before FastAPI validates it against the route's model."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def read_first(request: Request) -> Response:
            checked = _CheckedRequest(request.scope, request.receive)
            if _is_json(checked.headers.get("content-type", "")) and await checked.body():
                await checked.json()  # refused here, in the API's error shape, not as FastAPI's 400
            return await handler(checked)

        return read_first


class _CheckedRequest(Request):
    """A request whose `json()` is `read_json`'s value (FastAPI asks it for the body it validates)."""

    _checked: Any

    async def json(self) -> Any:
        if not hasattr(self, "_checked"):
            try:
                self._checked = read_json(await self.body())
            except BadValue as exc:
                problem = exc.problem
                if problem.syntax:
                    message = f"the body {problem.reason}"
                    raise ApiError(400, "bad-request", message, hint="send one JSON document") from None
                raise ApiError(422, ErrorCode.BAD_INPUT, problem.message(whole="the body"), hint=problem.hint) from None
        return self._checked


def _is_json(content_type: str) -> bool:
    """Whether FastAPI reads a body of this type as JSON (`application/json`, `application/...+json`)."""
    kind = content_type.partition(";")[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))
