"""A user's filter: what an auth handler returns to narrow what its user sees, checked once and read by SQL.

LangGraph's `Auth` handlers return a metadata filter (`{"owner": "user1"}`, `{"owner": {"$eq": "user1"}}`,
`{"members": {"$contains": "user1"}}` or a list under `$contains`: each element must be there; several keys: all
of them). `Filter.of` checks that shape once (`BadFilter` otherwise: the handler's mistake, answered 500); the store
turns it into conditions of its own queries (`Database.matching`: `json_each` in SQLite, `jsonb` in PostgreSQL), so
another user's thread is not found, on every replica, without being read first. A key the store does not index is
filtered as well, by reading each row's metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["BadFilter", "Filter", "Term", "Value"]

Value = str | int | float | bool | None
"""What a filter compares: a JSON scalar."""


class BadFilter(ValueError):
    """A handler's result that is no filter LangGraph knows (the message says what is wrong)."""


@dataclass(frozen=True, slots=True)
class Term:
    """One key of a filter: `eq` (the metadata's value is `values[0]`) or `contains` (the metadata's value is a list
    holding each of `values`)."""

    key: str
    op: Literal["eq", "contains"]
    values: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class Filter:
    """A metadata filter: every term must hold."""

    terms: tuple[Term, ...]

    @classmethod
    def of(cls, result: Mapping[Any, Any]) -> Filter:
        """The filter a handler returned (a dict), checked.

        Raises:
            BadFilter: A key that is no text, an operator other than `$eq` and `$contains`, a value that is no JSON
                scalar (or, under `$contains`, a list of them).
        """
        terms = []
        for key, wanted in result.items():
            if not isinstance(key, str):
                raise BadFilter(f"a filter's keys are metadata keys (text), not {key!r}")
            if isinstance(wanted, Mapping):
                if len(wanted) != 1 or next(iter(wanted)) not in ("$eq", "$contains"):
                    given = ", ".join(repr(op) for op in wanted) or "no operator"
                    raise BadFilter(f"filter key {key!r}: {given}; the operators are $eq and $contains, one per key")
                op, operand = next(iter(wanted.items()))
                if op == "$contains":
                    values = tuple(operand) if isinstance(operand, list | tuple) else (operand,)
                    terms.append(Term(key, "contains", tuple(_scalar(key, v) for v in values)))
                    continue
                wanted = operand
            terms.append(Term(key, "eq", (_scalar(key, wanted),)))
        return cls(tuple(terms))

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """Whether `metadata` passes (for what no table holds: the assistants)."""
        for term in self.terms:
            if term.key not in metadata:
                return False
            found = metadata[term.key]
            if term.op == "eq" and not _same(found, term.values[0]):
                return False
            if term.op == "contains" and not (
                isinstance(found, list) and all(any(_same(f, v) for f in found) for v in term.values)
            ):
                return False
        return True


def _scalar(key: str, value: Any) -> Value:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise BadFilter(f"filter key {key!r}: compare with text, a number, true/false or null, not {type(value).__name__}")


def _same(found: Any, wanted: Value) -> bool:
    """JSON equality as the store's queries see it: `true` is no `1`, `1` is `1.0`."""
    if isinstance(found, bool) or isinstance(wanted, bool):
        return type(found) is type(wanted) and found == wanted
    if isinstance(found, int | float) and isinstance(wanted, int | float):
        return found == wanted
    return type(found) is type(wanted) and found == wanted
