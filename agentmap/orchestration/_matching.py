"""Choosing a worker by what it does: a step naming a capability goes to the best-described worker.

A worker's profile is the words of its name, its Description and its tools' names; a step's words are
those of the worker or agent it names and of its `description`. Words are compared case-free, with
common English endings removed (`searches`, `searching`, `searcher` are all `search`) and filler words
ignored. The worker sharing the most words wins; a tie, or no shared word, leaves the choice to the
plan's author. Everything is deterministic: no model, no randomness.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["WorkerMatch", "match_worker", "profile", "words"]

_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_FILLER = frozenset(
    "a an and any are as at be by can do does for from get gets in into is it its of on or that the then "  # noqa: SIM905 (a word list reads best as words)
    "this to up via what when with".split()
)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith(("sses", "ches", "shes", "xes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for ending in ("ing", "er", "ed"):
        if len(word) > len(ending) + 3 and word.endswith(ending):
            word = word[: -len(ending)]
            break
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


def words(*texts: str | None) -> dict[str, str]:
    """The meaningful words of `texts`, as `{stem: the first word with that stem}`, lower case."""
    found: dict[str, str] = {}
    for text in texts:
        for token in _WORD.findall(_CAMEL.sub(" ", text or "")):
            word = token.casefold()
            if len(word) > 1 and word not in _FILLER:
                found.setdefault(_stem(word), word)
    return found


@dataclass(frozen=True)
class WorkerMatch:
    """The outcome of matching a step's words against the workers' profiles.

    Attributes:
        best: The workers with the most shared words, in the orchestrator's order (empty when none shares one).
        shared: For each of `best`, the step's words it shares, sorted.
    """

    best: tuple[str, ...]
    shared: Mapping[str, tuple[str, ...]]


def match_worker(text: Iterable[str | None], profiles: Mapping[str, frozenset[str]]) -> WorkerMatch:
    """Rank `profiles` (worker name -> stems of its name, Description and tools) against the words of `text`."""
    wanted = words(*text)
    top = 0
    best: list[str] = []
    shared: dict[str, tuple[str, ...]] = {}
    for name, profile in profiles.items():
        common = sorted(wanted[stem] for stem in wanted.keys() & profile)
        if not common or len(common) < top:
            continue
        if len(common) > top:
            top, best = len(common), []
        best.append(name)
        shared[name] = tuple(common)
    return WorkerMatch(tuple(best), {name: shared[name] for name in best})


def profile(name: str, description: str | None, tools: Iterable[str] | None) -> frozenset[str]:
    """The stems a worker is matched on: those of its name, Description and tool names."""
    return frozenset(words(name, description, *(tools or ())))
