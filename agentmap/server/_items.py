"""The `/store` endpoints: items that outlive a thread, in the store kept beside the checkpoints.

`client.store.put_item/get_item/delete_item/search_items/list_namespaces` of langgraph-sdk. The store is
`agentmap.runtime.items.item_store` of `--checkpoint` (SQLite on one machine, PostgreSQL shared by
every replica); the served graphs get the same store, so nodes read and write it (`store_reader` /
`store_writer`, or LangGraph's `get_store()` in a custom agent). See csv_specs/serve.md, "The store".
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Response
from pydantic import Field, field_validator

from agentmap.server._bodies import api_router
from agentmap.server._models import ApiError, _Body, check_json

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


def item_routes(store: Any) -> APIRouter:
    """The `/store` routes over `store` (a LangGraph `BaseStore`)."""
    router = api_router(prefix="/store")

    @router.put("/items", status_code=204)
    def put_item(body: ItemPut) -> Response:
        if body.ttl is not None:
            raise ApiError(422, "not-supported", "ttl is not supported by agentmap serve's store", hint="leave it out")
        check_json(body.value, "value")
        store.put(tuple(body.namespace), body.key, body.value, index=False)
        return Response(status_code=204)

    @router.get("/items")
    def get_item(
        key: str = Query(min_length=1), namespace: str = Query(""), refresh_ttl: bool | None = None
    ) -> dict[str, Any] | None:
        labels = namespace.split(".") if namespace else []
        try:
            _checked_namespace(labels)
        except ValueError as exc:
            raise ApiError(422, "bad-request", f"namespace {namespace!r}: {exc}") from None
        item = store.get(tuple(labels), key)
        return None if item is None else item.dict()

    @router.delete("/items", status_code=204)
    def delete_item(body: ItemDelete) -> Response:
        store.delete(tuple(body.namespace), body.key)
        return Response(status_code=204)

    @router.post("/items/search")
    def search_items(body: ItemSearch) -> dict[str, Any]:
        if body.query:
            raise ApiError(
                422,
                "not-supported",
                "query (a search by meaning) needs an embedding index, which agentmap serve's store has not",
                hint="search by namespace_prefix and filter (exact values of the item's fields)",
            )
        found = store.search(tuple(body.namespace_prefix), filter=body.filter, limit=body.limit, offset=body.offset)
        return {"items": [item.dict() for item in found]}

    @router.post("/namespaces")
    def list_namespaces(body: NamespaceList) -> dict[str, Any]:
        found = store.list_namespaces(
            prefix=tuple(body.prefix) if body.prefix else None,
            suffix=tuple(body.suffix) if body.suffix else None,
            max_depth=body.max_depth,
            limit=body.limit,
            offset=body.offset,
        )
        return {"namespaces": [list(namespace) for namespace in found]}

    return router
