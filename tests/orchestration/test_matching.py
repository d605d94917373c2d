"""Matching a step that names a capability to the worker whose name, Description and tools fit it."""

from __future__ import annotations

from agentmap.orchestration._matching import match_worker, profile, words


def test_words_drop_filler_and_endings_and_split_snake_and_camel_case() -> None:
    assert set(words("Searches the flights", "search_flights", "searchFlights")) == {"search", "flight"}
    assert set(words("booking", "books", "booked", "booker")) == {"book"}
    assert set(words("Hôtel Zürich", "")) == {"hôtel", "zürich"}
    assert words(None, "   ", "a an the") == {}


def test_the_worker_sharing_most_words_wins_and_reports_the_step_words() -> None:
    profiles = {
        "air": profile("air", "Searches flights between cities", ["search_flights"]),
        "stay": profile("stay", "Searches hotels and rooms", ["search_hotels"]),
    }
    found = match_worker(["Hotel searching", None], profiles)
    assert found.best == ("stay",) and found.shared == {"stay": ("hotel", "searching")}


def test_a_tie_keeps_every_best_worker_in_order_and_no_shared_word_keeps_none() -> None:
    profiles = {"b": profile("b", "Counts things", None), "a": profile("a", "Writes things", None)}
    assert match_worker(["count and write"], profiles).best == ("b", "a")
    assert match_worker(["spaceship"], profiles).best == ()
