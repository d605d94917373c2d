"""The `/store` endpoints: items that outlive a thread, in the store kept beside the checkpoints.

`client.store.put_item/get_item/delete_item/search_items/list_namespaces` of langgraph-sdk. The store is
`agentmap.runtime.items.item_store` of `--checkpoint` (SQLite on one machine, PostgreSQL shared by
every replica); the served graphs get the same store, so nodes read and write it (`store_reader` /
`store_writer`, or LangGraph's `get_store()` in a custom agent). See csv_specs/serve.md, "The store".

Each route asks the caller's `@auth.on.store` handler (`put`, `get`, `delete`, `search`, `list_namespaces`) first,
as LangGraph's server does: the namespace (and key) it leaves are the ones used (`(user, *namespace)`, say).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Response
from pydantic import Field, field_validator

from agentmap.errors import ErrorCode
from agentmap.server._bodies import api_router
from agentmap.server._models import ApiError, _Body, check_json
from agentmap.server._users import CallerOf

__all__ = ["item_routes"]

_LABEL_RULE = "a namespace is a list of 1 to 10 labels, each 1 to 256 characters without a dot"


def _checked_namespace(labels: list[str], *, empty: bool = False) -> list[str]:
    if (not labels and not empty) or len(labels) > 10:
        raise ValueError(_LABEL_RULE)
    for label in labels:
        if not isinstance(label, str) or not 0 < len(label) <= 256 or "." in label:
            raise ValueError(f"{_LABEL_RULE} ({label!r} is not)")
    return labels


class ItemPut(_Body):
    """`PUT /store/items`."""

    namespace: list[str]
    key: str = Field(min_length=1, max_length=1024)
    value: dict[str, Any]
    index: bool | list[str] | None = None
    ttl: float | None = None

    _namespace = field_validator("namespace")(lambda cls, v: _checked_namespace(v))


class ItemDelete(_Body):
    """`DELETE /store/items`."""

    namespace: list[str]
    key: str = Field(min_length=1, max_length=1024)

    _namespace = field_validator("namespace")(lambda cls, v: _checked_namespace(v))


class ItemSearch(_Body):
    """`POST /store/items/search`."""

    namespace_prefix: list[str] = Field(default_factory=list)
    filter: dict[str, Any] | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)
    query: str | None = None

    _prefix = field_validator("namespace_prefix")(lambda cls, v: _checked_namespace(v, empty=True))


class NamespaceList(_Body):
    """`POST /store/namespaces`."""

    prefix: list[str] | None = None
    suffix: list[str] | None = None
    max_depth: int | None = Field(None, ge=1)
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0)


def _namespace(value: dict[str, Any], key: str = "namespace") -> tuple[str, ...]:
    """The namespace an auth handler left in `value` (a list or tuple of texts)."""
    found = value.get(key)
    if isinstance(found, list | tuple) and all(isinstance(label, str) for label in found):
        return tuple(found)
    raise ApiError(
        500,
        ErrorCode.AUTH_FAILED,
        f"the server's store handler left the {key} as {type(found).__name__}, not a list of texts",
        hint="an @auth.on.store handler sets value['namespace'] to a tuple of texts",
    )


def _stored(call: Any, *args: Any, **kwargs: Any) -> Any:
    """A call of the store; a namespace it refuses (a label with a dot: an identity an auth handler put in) is 422."""
    from langgraph.store.base import InvalidNamespaceError

    try:
        return call(*args, **kwargs)
    except InvalidNamespaceError as exc:
        raise ApiError(422, "bad-request", f"the store refuses the namespace: {exc}", hint=_LABEL_RULE) from None


def item_routes(store: Any) -> APIRouter:
    """The `/store` routes over `store` (a LangGraph `BaseStore`)."""
    router = api_router(prefix="/store")

    @router.put("/items", status_code=204)
    def put_item(body: ItemPut, caller: CallerOf) -> Response:
        if body.ttl is not None:
            raise ApiError(422, "not-supported", "ttl is not supported by agentmap serve's store", hint="leave it out")
        check_json(body.value, "value")
        value = {"namespace": tuple(body.namespace), "key": body.key, "value": body.value, "index": body.index}
        caller.decide_now("store", "put", value)
        _stored(store.put, _namespace(value), str(value["key"]), value["value"], index=False)
        return Response(status_code=204)

    @router.get("/items")
    def get_item(
        caller: CallerOf,
        key: str = Query(min_length=1),
        namespace: str = Query(""),
        refresh_ttl: bool | None = None,
    ) -> dict[str, Any] | None:
        labels = namespace.split(".") if namespace else []
        try:
            _checked_namespace(labels)
        except ValueError as exc:
            raise ApiError(422, "bad-request", f"namespace {namespace!r}: {exc}") from None
        value = {"namespace": tuple(labels), "key": key}
        caller.decide_now("store", "get", value)
        item = _stored(store.get, _namespace(value), str(value["key"]))
        return None if item is None else item.dict()

    @router.delete("/items", status_code=204)
    def delete_item(body: ItemDelete, caller: CallerOf) -> Response:
        value = {"namespace": tuple(body.namespace), "key": body.key}
        caller.decide_now("store", "delete", value)
        _stored(store.delete, _namespace(value), str(value["key"]))
        return Response(status_code=204)

    @router.post("/items/search")
    def search_items(body: ItemSearch, caller: CallerOf) -> dict[str, Any]:
        if body.query:
            raise ApiError(
                422,
                "not-supported",
                "query (a search by meaning) needs an embedding index, which agentmap serve's store has not",
                hint="search by namespace_prefix and filter (exact values of the item's fields)",
            )
        value = {
            "namespace": tuple(body.namespace_prefix),
            "filter": body.filter,
            "limit": body.limit,
            "offset": body.offset,
            "query": body.query,
        }
        caller.decide_now("store", "search", value)
        found = _stored(
            store.search, _namespace(value), filter=value["filter"], limit=value["limit"], offset=value["offset"]
        )
        return {"items": [item.dict() for item in found]}

    @router.post("/namespaces")
    def list_namespaces(body: NamespaceList, caller: CallerOf) -> dict[str, Any]:
        value = {
            "namespace": tuple(body.prefix) if body.prefix else None,
            "suffix": tuple(body.suffix) if body.suffix else None,
            "max_depth": body.max_depth,
            "limit": body.limit,
            "offset": body.offset,
        }
        caller.decide_now("store", "list_namespaces", value)
        prefix = _namespace(value) if value.get("namespace") is not None else None
        suffix = _namespace(value, "suffix") if value.get("suffix") is not None else None
        found = _stored(
            store.list_namespaces,
            prefix=prefix or None,
            suffix=suffix or None,
            max_depth=value["max_depth"],
            limit=value["limit"],
            offset=value["offset"],
        )
        return {"namespaces": [list(namespace) for namespace in found]}

    return router
