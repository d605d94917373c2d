"""The offline model's heuristics: which tool a message asks for, and the arguments it gives.

Deterministic and small on purpose. A tool scores by the message words found in its name (weight 3)
and description (weight 1), each weighted by how rare the word is among the bound tools, so the word
`task` shared by `add_task` and `delete_task` decides nothing while `delete` does. A few verbs count as
synonyms (`remove` -> `delete`, `show` -> `list`, ...).

Arguments are filled, per schema property in order, from:
1. `name=value` or `name: value` (quotes optional);
2. the words right after the parameter's name ("priority high", "task 3", "title is buy milk"),
   up to punctuation or another parameter's name;
3. numbers (for integer/number properties) and quoted strings (for strings), in order of appearance;
4. for the last required string still empty, the words after the ones that chose the tool
   ("add a task buy milk" -> `buy milk`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["choose_tool", "fill_arguments", "humanize"]

_VERBS = {
    "add": "create new insert make plus sum total",
    "delete": "remove erase drop",
    "list": "show view display all",
    "complete": "done finish finished completed",
    "update": "change edit rename modify",
    "search": "find lookup",
    "get": "fetch",
    "multiply": "times product",
    "subtract": "minus difference",
}
_SYNONYMS = {word: verb for verb, words in _VERBS.items() for word in words.split()}
_STOPS = """a an the to of and or for in on with my me i you is it this that be by as at from please can could
would will
return returns given use tool function value some any"""
_STOP = set(_STOPS.split())
_THRESHOLD = 2.0  # one name word shared by at most half the tools
_NUMBER = r"-?\d+(?:\.\d+)?"
_QUOTED = r"\"([^\"]*)\"|'([^']*)'|“([^”]*)”"


def humanize(name: str) -> str:
    """`add_task` / `addTask` -> `add task`."""
    return " ".join(_name_words(name))


def _name_words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[\s_\-.]+", spaced) if w]


def _norm(word: str) -> str:
    word = _SYNONYMS.get(word, word)
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return _SYNONYMS.get(word, word)


def _message_words(text: str) -> list[tuple[str, int]]:
    """(normalized word, end offset) for each word of the message."""
    return [(_norm(m.group().lower()), m.end()) for m in re.finditer(r"[A-Za-z0-9]+", text)]


def choose_tool(
    text: str, functions: Sequence[Mapping[str, Any]], *, must_call: bool = False
) -> tuple[Mapping[str, Any], set[str]] | None:
    """Return the best-matching function schema and the words that matched its name, or None.

    Args:
        text: The user's message.
        functions: OpenAI-style function schemas (`name`, `description`, `parameters`).
        must_call: Return the best tool even when nothing matches (`tool_choice="any"`).
    """
    words = {w for w, _ in _message_words(text)}
    names = [{_norm(w) for w in _name_words(str(f.get("name", "")))} for f in functions]
    descs = [
        {_norm(w.lower()) for w in re.findall(r"[A-Za-z0-9]+", str(f.get("description") or ""))} - _STOP
        for f in functions
    ]
    count = len(functions)

    def idf(word: str) -> float:
        df = sum(1 for n, d in zip(names, descs, strict=True) if word in n or word in d)
        return math.log((count + 1) / max(df, 1))

    best: tuple[float, int] | None = None
    for index, (name_words, desc_words) in enumerate(zip(names, descs, strict=True)):
        score = sum(3 * idf(w) for w in name_words & words)
        score += sum(idf(w) for w in (desc_words - name_words) & words)
        if best is None or score > best[0]:
            best = (score, index)
    if best is None or (best[0] < _THRESHOLD and not must_call):
        return None
    return functions[best[1]], names[best[1]] & words


def fill_arguments(
    text: str, parameters: Mapping[str, Any], matched_words: set[str]
) -> tuple[dict[str, Any], list[str]]:
    """Fill a JSON-schema object's properties from `text`.

    Returns:
        `(arguments, missing)`: the values found, and the required properties that stayed empty.
    """
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    required = [str(r) for r in parameters.get("required") or []]
    args: dict[str, Any] = {}
    used: set[tuple[int, int]] = set()  # spans of the message already given to an argument
    other_names = [n for name in properties for n in _variants(name)]
    for name, prop in properties.items():
        kind = _kind(prop)
        value = _explicit(text, name, kind) or _after_name(text, name, kind, other_names)
        if value is not None:
            span, raw = value
            used.add(span)
            converted = _convert(raw, kind, prop)
            if converted is not None:
                args[name] = converted
    for name, prop in properties.items():
        if name in args:
            continue
        kind = _kind(prop)
        found = _next_free(text, kind, used, prop)
        if found is not None:
            span, raw = found
            converted = _convert(raw, kind, prop)
            if converted is not None:
                used.add(span)
                args[name] = converted
    empty_strings = [n for n in required if n not in args and _kind(properties.get(n, {})) == "string"]
    if len(empty_strings) == 1:
        rest = _rest_after(text, matched_words, used)
        if rest:
            args[empty_strings[0]] = rest
    missing = [humanize(n) for n in required if n not in args]
    return args, missing


def _kind(prop: Any) -> str:
    if not isinstance(prop, Mapping):
        return "string"
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind is None:
        for option in prop.get("anyOf") or []:
            if isinstance(option, Mapping) and option.get("type") not in (None, "null"):
                return str(option["type"])
        return "string"
    return str(kind)


def _variants(name: str) -> list[str]:
    words = _name_words(name)
    variants = [" ".join(words), name.lower()]
    if len(words) > 1:
        variants += [words[-1], words[0]]
    return list(dict.fromkeys(v for v in variants if v not in _STOP))


def _explicit(text: str, name: str, kind: str) -> tuple[tuple[int, int], str] | None:
    pattern = rf"(?i)\b{re.escape(name)}\s*[=:]\s*(?:{_QUOTED}|([^\s,;]+))"
    match = re.search(pattern, text)
    if match is None:
        return None
    raw = next(g for g in match.groups() if g is not None)
    return match.span(), raw


def _after_name(text: str, name: str, kind: str, others: list[str]) -> tuple[tuple[int, int], str] | None:
    for variant in _variants(name):
        lead = rf"(?i)\b{re.escape(variant)}s?\b\s*(?:is\s+|of\s+|to\s+|#\s*|no\.?\s*)?"
        if kind in ("integer", "number"):
            match = re.search(lead + rf"({_NUMBER})\b", text)
        elif kind == "boolean":
            match = re.search(lead + r"(true|false|yes|no|on|off)\b", text)
        elif kind == "string":
            stop = "|".join(re.escape(o) for o in others if o != variant) or "$^"
            match = re.search(lead + rf"(?:{_QUOTED}|((?:(?!\b(?:{stop})\b)[^,;.!?\"'])+))", text)
        else:
            match = None
        if match is not None:
            raw = next((g for g in match.groups() if g is not None), "").strip()
            if raw:
                return match.span(), raw
    return None


def _overlaps(span: tuple[int, int], used: set[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in used)


def _next_free(text: str, kind: str, used: set[tuple[int, int]], prop: Any) -> tuple[tuple[int, int], str] | None:
    if kind in ("integer", "number"):
        pattern = rf"(?<![\w.]){_NUMBER}\b"
    elif kind == "string":
        enum = prop.get("enum") if isinstance(prop, Mapping) else None
        pattern = r"(?i)\b(" + "|".join(re.escape(str(e)) for e in enum) + r")\b" if enum else _QUOTED
    else:
        return None
    for match in re.finditer(pattern, text):
        if not _overlaps(match.span(), used):
            raw = next((g for g in match.groups() if g is not None), match.group())
            return match.span(), raw
    return None


def _rest_after(text: str, matched_words: set[str], used: set[tuple[int, int]]) -> str:
    """The first run of words after the ones that chose the tool, outside spans already used."""
    ends = [end for word, end in _message_words(text) if word in matched_words]
    if not ends:
        return ""
    cuts = sorted((s, e) for s, e in used if e > max(ends))
    position, chunks = max(ends), []
    for start, end in cuts:
        chunks.append(text[position : max(start, position)])
        position = max(position, end)
    chunks.append(text[position:])
    lead = r"^\W*(?:(?:a|an|the|to|called|named|titled|that|for|in|at|on|of|about)\s+)*"
    for chunk in chunks:
        rest = re.sub(lead, "", chunk, flags=re.I).strip().rstrip(".!?").strip()
        if rest:
            return rest
    return ""


def _convert(raw: str, kind: str, prop: Any) -> Any:
    if kind == "integer":
        try:
            return int(float(raw))
        except ValueError:
            return None
    if kind == "number":
        try:
            return float(raw)
        except ValueError:
            return None
    if kind == "boolean":
        return raw.lower() in ("true", "yes", "on")
    enum = prop.get("enum") if isinstance(prop, Mapping) else None
    if enum:
        for option in enum:
            if str(option).lower() == raw.lower():
                return option
        return None
    return raw
