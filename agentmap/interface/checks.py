"""Checks on what a run did, not only on what it said: its final state and its trajectory.

`expected_state` cells hold conditions in a small expression language, parsed with `ast` and checked against
an allow-list when the scenarios file is loaded; they are evaluated by walking the tree, never with `eval`:

* a path into the final state: `status`, `booking.status`, `items[0]`, `booking["status"]`;
* literals: strings, numbers, `True`, `False`, `None`, lists and tuples of literals, `-1`;
* comparisons `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`; `and`, `or`, `not`; `len(path)`.

A path standing alone (`booking.confirmation`) means "the key exists and is not None". Anything else
(attribute access on a value, other calls, arithmetic and exponents, imports, comprehensions, lambdas)
is refused at load with the cell located.

`expected_trajectory` cells list `|`-separated steps: a node name (`Lookup`), or a tool call with optional
arguments (`search(city="Paris")`); `trajectory_match` says how the run's steps must match them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentmap._pysource import parse_expression

__all__ = [
    "MATCH_MODES",
    "ExpressionError",
    "Step",
    "check_state",
    "match_trajectory",
    "parse_condition",
    "parse_trajectory",
]

MATCH_MODES = ("exact", "in_order", "any_order", "subset", "superset")
"""How a run's trajectory must match the expected one (see `match_trajectory`)."""

_MAX_LENGTH = 1000
_MAX_DEPTH = 30
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: bool(a == b),
    ast.NotEq: lambda a, b: bool(a != b),
    ast.Lt: lambda a, b: bool(a < b),
    ast.LtE: lambda a, b: bool(a <= b),
    ast.Gt: lambda a, b: bool(a > b),
    ast.GtE: lambda a, b: bool(a >= b),
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class ExpressionError(ValueError):
    """A cell that is not a valid condition or trajectory; the message says what is not allowed."""


def parse_condition(text: str) -> ast.expr:
    """Parse an `expected_state` condition and check it against the allow-list.

    Raises:
        ExpressionError: When the text is not a condition of the language.
    """
    if len(text) > _MAX_LENGTH:
        raise ExpressionError(f"the condition is longer than {_MAX_LENGTH} characters")
    try:
        tree = parse_expression(text.strip())
    except SyntaxError as exc:
        raise ExpressionError(f"not a condition: {exc.msg}") from None
    _allowed(tree, 0)
    return tree


def _allowed(node: ast.AST, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ExpressionError(f"the condition nests deeper than {_MAX_DEPTH} levels")
    if isinstance(node, ast.BoolOp | ast.Compare):
        if isinstance(node, ast.Compare) and any(type(op) not in _COMPARE for op in node.ops):
            raise ExpressionError("only ==, !=, <, <=, >, >=, in and not in compare values (not `is`)")
        parts = node.values if isinstance(node, ast.BoolOp) else [node.left, *node.comparators]
        for part in parts:
            _allowed(part, depth + 1)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _allowed(node.operand, depth + 1)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        if not (isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int | float)):
            raise ExpressionError("a sign goes only before a number")
    elif isinstance(node, ast.Constant):
        if not isinstance(node.value, str | int | float | bool | type(None)):
            raise ExpressionError(f"{type(node.value).__name__} literals are not allowed")
    elif isinstance(node, ast.List | ast.Tuple):
        for item in node.elts:
            _allowed(item, depth + 1)
    elif isinstance(node, ast.Call):
        _allowed_call(node)
    elif isinstance(node, ast.Name | ast.Attribute | ast.Subscript):
        _path(node)
    else:
        raise ExpressionError(f"{_describe(node)} is not allowed in a condition")


def _allowed_call(node: ast.Call) -> None:
    if not (isinstance(node.func, ast.Name) and node.func.id == "len"):
        raise ExpressionError("the only call allowed is len(...)")
    if len(node.args) != 1 or node.keywords:
        raise ExpressionError("len takes exactly one value")
    _path(node.args[0])


def _path(node: ast.AST) -> list[str | int]:
    """The keys of a path (`a.b[0]["c"]`) into the state; anything else is refused."""
    if isinstance(node, ast.Name):
        keys: list[str | int] = [node.id]
    elif isinstance(node, ast.Attribute):
        keys = [*_path(node.value), node.attr]
    elif isinstance(node, ast.Subscript):
        try:
            value: Any = ast.literal_eval(node.slice)
        except (ValueError, TypeError, SyntaxError):
            value = None
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise ExpressionError("a subscript must be a string key or a whole number: items[0], booking['status']")
        keys = [*_path(node.value), value]
    else:
        raise ExpressionError(f"{_describe(node)} is not a path into the state (attribute access is only on keys)")
    for key in keys:
        if isinstance(key, str) and key.startswith("__"):
            raise ExpressionError(f"{key!r}: names starting with __ are not allowed")
    return keys


def _describe(node: ast.AST) -> str:
    names = {
        ast.BinOp: "arithmetic",
        ast.Lambda: "a lambda",
        ast.ListComp: "a comprehension",
        ast.SetComp: "a comprehension",
        ast.DictComp: "a comprehension",
        ast.GeneratorExp: "a comprehension",
        ast.NamedExpr: "an assignment",
        ast.IfExp: "an if-expression",
        ast.JoinedStr: "an f-string",
    }
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return "an exponent (**)"
    return names.get(type(node), type(node).__name__)


class _Missing(Exception):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def check_state(condition: str, state: Mapping[str, Any]) -> str | None:
    """Evaluate one condition against a final state; return why it fails, or None when it holds."""
    try:
        tree = parse_condition(condition)
        holds = _truth(tree, state)
    except _Missing as missing:
        return f"{condition}: {missing.path} is not in the final state"
    except ExpressionError as exc:
        return f"{condition}: {exc}"
    except (TypeError, ValueError) as exc:
        return f"{condition}: cannot be evaluated ({exc})"
    if holds:
        return None
    facts = []
    for node in _outer_paths(tree):
        try:
            facts.append(f"{_show(_path(node))} is {_value(node, state)!r}")
        except _Missing as missing:
            facts.append(f"{missing.path} is not in the final state")
    return f"{condition}: false" + (f" ({'; '.join(dict.fromkeys(facts))})" if facts else "")


def _outer_paths(node: ast.AST) -> list[ast.expr]:
    """The paths a condition reads, outermost only (`a.b`, not also `a`), for the message of a false one."""
    if isinstance(node, ast.Name | ast.Attribute | ast.Subscript):
        return [node]
    children = node.args if isinstance(node, ast.Call) else list(ast.iter_child_nodes(node))
    return [path for child in children for path in _outer_paths(child)]


def _truth(node: ast.expr, state: Mapping[str, Any]) -> bool:
    if isinstance(node, ast.Name | ast.Attribute | ast.Subscript):
        try:
            return _value(node, state) is not None
        except _Missing:
            return False
    return bool(_value(node, state))


def _value(node: ast.expr, state: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_truth(v, state) for v in node.values)
        return any(_truth(v, state) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            return not _truth(node.operand, state)
        return ast.literal_eval(node)
    if isinstance(node, ast.Compare):
        left = _value(node.left, state)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _value(right_node, state)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(item, state) for item in node.elts]
    if isinstance(node, ast.Call):
        return len(_value(node.args[0], state))
    keys = _path(node)
    current: Any = state
    for at, key in enumerate(keys):
        try:
            current = current[key]
        except (KeyError, IndexError, TypeError):
            raise _Missing(_show(keys[: at + 1])) from None
    return current


def _show(keys: Sequence[str | int]) -> str:
    text = str(keys[0])
    for key in keys[1:]:
        text += f"[{key}]" if isinstance(key, int) else f".{key}"
    return text


@dataclass(frozen=True)
class Step:
    """One expected step: a node, or a tool call whose arguments must include `args`.

    Attributes:
        name: The node's or tool's name.
        tool: True for a tool call (written `name(...)`).
        args: The arguments the call must have had (others may be there too).
    """

    name: str
    tool: bool = False
    args: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        if not self.tool:
            return self.name
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.args)})"

    def matches(self, actual: Step) -> bool:
        """True when `actual` (a node or call the run made) is this step."""
        if actual.tool != self.tool or actual.name != self.name:
            return False
        given = dict(actual.args)
        return all(key in given and given[key] == value for key, value in self.args)


def parse_trajectory(text: str) -> tuple[Step, ...]:
    """Parse an `expected_trajectory` cell: `|`-separated node names and tool calls `tool(arg=value)`.

    Raises:
        ExpressionError: When a step is malformed (an argument that is not `name=literal`, an empty step).
    """
    if len(text) > _MAX_LENGTH:
        raise ExpressionError(f"the trajectory is longer than {_MAX_LENGTH} characters")
    steps: list[Step] = []
    for raw in _split(text):
        item = raw.strip()
        if not item:
            raise ExpressionError("an empty step (two | in a row, or one at an end)")
        if "(" not in item:
            steps.append(Step(item))
            continue
        name, _, rest = item.partition("(")
        if not rest.endswith(")") or not name.strip():
            raise ExpressionError(f"{item!r}: write a tool call as tool(arg=value, ...)")
        try:
            call = parse_expression(f"f({rest[:-1]})")
        except SyntaxError as exc:
            raise ExpressionError(f"{item!r}: {exc.msg}") from None
        assert isinstance(call, ast.Call)
        if call.args or any(k.arg is None for k in call.keywords):
            raise ExpressionError(f"{item!r}: arguments are written name=value")
        args: list[tuple[str, Any]] = []
        for keyword in call.keywords:
            try:
                args.append((str(keyword.arg), ast.literal_eval(keyword.value)))
            except (ValueError, SyntaxError):
                raise ExpressionError(f"{item!r}: the value of {keyword.arg} must be a literal") from None
        steps.append(Step(name.strip(), tool=True, args=tuple(args)))
    return tuple(steps)


def _split(text: str) -> list[str]:
    """Split on `|` outside parentheses and quotes."""
    parts, current, depth, quote = [], "", 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += char
    return [*parts, current]


def match_trajectory(expected: Sequence[Step], actual: Sequence[Step], mode: str) -> str | None:
    """Compare a run's steps with the expected ones; return why they do not match, or None.

    Node steps are compared with the run's nodes and tool steps with its tool calls, each in the given mode:
    `exact` (the same steps in the same order), `in_order` (the expected steps in this order, others between
    allowed), `any_order` (the same steps in any order), `subset` (every step of the run is an expected one),
    `superset` (every expected step is in the run, in any order).
    """
    for tool in (False, True):
        want = [s for s in expected if s.tool == tool]
        have = [s for s in actual if s.tool == tool]
        if not want:  # a trajectory of nodes only says nothing about tool calls, and the other way round
            continue
        problem = _compare(want, have, mode)
        if problem is not None:
            kind = "tool calls" if tool else "nodes"
            shown = ", ".join(map(str, have)) or "none"
            return f"{kind} {problem} ({mode}; the run's {kind}: {shown})"
    return None


def _compare(want: Sequence[Step], have: Sequence[Step], mode: str) -> str | None:
    if mode == "exact":
        if len(want) != len(have) or not all(w.matches(h) for w, h in zip(want, have, strict=True)):
            return f"are not exactly {' > '.join(map(str, want)) or 'none'}"
        return None
    if mode == "in_order":
        position = 0
        for step in want:
            while position < len(have) and not step.matches(have[position]):
                position += 1
            if position == len(have):
                return f"lack {step} in order"
            position += 1
        return None
    paired = _pairs(want, have)
    missing = [str(w) for i, w in enumerate(want) if i not in paired]
    extra = [str(h) for j, h in enumerate(have) if j not in paired.values()]
    if mode in ("any_order", "superset") and missing:
        return f"lack {', '.join(missing)}"
    if mode in ("any_order", "subset") and extra:
        return f"include unexpected {', '.join(extra)}"
    return None


def _pairs(want: Sequence[Step], have: Sequence[Step]) -> dict[int, int]:
    """A largest pairing of expected steps with the run's steps that match them (augmenting paths)."""
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j, step in enumerate(have):
            if j not in seen and want[i].matches(step):
                seen.add(j)
                if j not in owner or place(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(want)):
        place(i, set())
    return {i: j for j, i in owner.items()}
