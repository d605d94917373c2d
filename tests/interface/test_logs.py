"""Writing and strictly parsing seed 000 conversation logs."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import NoReturn

import pytest

from agentmap.contracts.conversation import ConversationLog, RunMetadata, StopReason, Turn
from agentmap.interface.logs import (
    LogFormatError,
    format_log,
    parse_conversation,
    parse_conversation_texts,
    parse_log,
    read_log,
    write_log,
)

DATA = Path(__file__).parent / "data"
SEED = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "000_69a6ddd70953a7b0.txt"
EXAMPLE = (DATA / "seed_000_example.log").read_bytes()


def _seed_log() -> ConversationLog:
    return ConversationLog(
        metadata=RunMetadata(
            session_id="example_20251222T120000",
            mode="synthetic",
            scenario="example_scenario",
            max_turns=1,
            stop_reason="single_turn",
        ),
        turns=(
            Turn(
                role="user",
                timestamp=datetime(2025, 12, 22, 12, 0, 0),
                text="What does the document say about nurse licensing in Spain?",
            ),
            Turn(
                role="assistant",
                timestamp=datetime(2025, 12, 22, 12, 0, 1),
                text="The document explains the licensing steps and required credentials for nurses in "
                "Spain, including recognition and registration requirements.",
            ),
        ),
    )


@pytest.mark.skipif(not SEED.exists(), reason="the seeds folder is not beside the repository")
def test_golden_file_is_the_seed_example() -> None:
    seed = SEED.read_text(encoding="utf-8")
    assert EXAMPLE.decode("utf-8").rstrip("\n") in seed


def test_writer_matches_seed_example_byte_for_byte(tmp_path: Path) -> None:
    path = write_log(tmp_path / "a.log", _seed_log())
    assert path.read_bytes() == EXAMPLE
    assert read_log(DATA / "seed_000_example.log") == _seed_log()


@pytest.mark.parametrize("reason", list(StopReason))
def test_every_stop_reason_round_trips(reason: StopReason, tmp_path: Path) -> None:
    log = _seed_log().model_copy(
        update={"metadata": _seed_log().metadata.model_copy(update={"stop_reason": reason.value})}
    )
    write_log(tmp_path / "r.log", log)
    back = read_log(tmp_path / "r.log")
    assert back == log
    assert back.metadata.stop_reason == reason.value


def test_multiline_unicode_reply_round_trips(tmp_path: Path) -> None:
    text = "Première ligne — ünïcödé 🚀\n\n  indented line\n - user [2025-01-01 00:00:00]:\n日本語\n"
    log = ConversationLog(
        metadata=_seed_log().metadata,
        turns=(_seed_log().turns[0], Turn(role="assistant", timestamp=datetime(2025, 1, 1), text=text)),
    )
    write_log(tmp_path / "u.log", log)
    raw = (tmp_path / "u.log").read_bytes()
    assert "🚀".encode() in raw
    assert b"\n  \n" in raw  # the empty line of the reply is indented too
    assert read_log(tmp_path / "u.log") == log
    assert read_log(tmp_path / "u.log").turns[1].text == text
    assert parse_conversation(format_log(log)) == log.turns


def test_empty_conversation_and_empty_text_round_trip() -> None:
    empty = ConversationLog(metadata=_seed_log().metadata)
    assert parse_log(format_log(empty)) == empty
    blank = ConversationLog(
        metadata=_seed_log().metadata, turns=(Turn(role="user", timestamp=datetime(2025, 1, 1), text=""),)
    )
    assert parse_log(format_log(blank)) == blank


def test_crlf_and_bom_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    path.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.replace(b"\n", b"\r\n"))
    assert read_log(path) == _seed_log()


def _broken(old: str, new: str) -> str:
    text = EXAMPLE.decode()
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (_broken("Run metadata:", "Metadata:"), 1, "must start with"),
        (_broken("- mode: synthetic\n", ""), 6, "missing mode"),
        (_broken("- mode: synthetic", "- mode synthetic"), 3, "'- key: value'"),
        (_broken("- mode: synthetic", "- colour: blue"), 3, "unknown metadata key"),
        (_broken("- max_turns: 1", "- max_turns: one"), 5, "whole number"),
        (_broken("Conversation:", "Dialogue:"), 8, "'Conversation:'"),
        (_broken("\n\n - user", "\n - user"), 9, "empty line"),
        (_broken(" - user [2025-12-22 12:00:00]:", " - user [2025-12-22 12:00]:"), 10, "turn header"),
        (_broken(" - user [2025-12-22 12:00:00]:", " - user [2025-13-22 12:00:00]:"), 10, "timestamp"),
        (_broken("  What does", "What does"), 11, "text must follow"),
        (_broken("  What does the document say about nurse licensing in Spain?\n", ""), 11, "must follow"),
    ],
)
def test_malformed_logs_name_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(LogFormatError, match=words) as caught:
        parse_log(text, source="bad.log")
    assert caught.value.location is not None
    assert caught.value.location.row == line
    assert str(caught.value).startswith(f"bad.log:{line}:")


def test_parse_conversation_ignores_metadata_but_needs_the_header() -> None:
    odd_metadata = _broken("- max_turns: 1", "- max_turns: lots")
    assert parse_conversation(odd_metadata) == _seed_log().turns
    with pytest.raises(LogFormatError, match="'Conversation:' is missing"):
        parse_conversation(_broken("Conversation:", "Chat:"))


def test_invalid_utf8_is_a_log_error(tmp_path: Path) -> None:
    path = tmp_path / "latin.log"
    path.write_bytes(EXAMPLE.replace(b"Spain", "España".encode("latin-1")))
    with pytest.raises(LogFormatError, match="not valid UTF-8"):
        read_log(path)


@pytest.mark.parametrize(
    "text",
    [
        EXAMPLE.decode(),
        EXAMPLE.decode() + "\n\n",
        EXAMPLE.decode().replace("\n", "\r\n"),
        _broken("  What does the document", "  Line one\n  \n  What does the document"),
        EXAMPLE.decode().split("\n - user")[0] + "\n",  # no turns
    ],
)
def test_the_evaluator_fast_path_reads_well_formed_logs_like_the_strict_parser(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [(t.role, t.text) for t in parse_conversation(text)]
    import agentmap.interface.logs as logs

    def _no_slow_path(*args: object) -> NoReturn:
        raise AssertionError("a well-formed log took the line-by-line path")

    monkeypatch.setattr(logs, "_raw_turns", _no_slow_path)
    assert parse_conversation_texts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        _broken("\n\n - user", "\n - user"),
        _broken(" - user [2025-12-22 12:00:00]:", " - user [2025-13-22 12:00:00]:"),
        _broken("  What does", "What does"),
        _broken(" - assistant [2025-12-22 12:00:01]:", " - assistant [2025-12-22 12:00:01]: "),
    ],
)
def test_the_evaluator_fast_path_leaves_malformed_logs_to_the_strict_parser(text: str) -> None:
    with pytest.raises(LogFormatError) as strict:
        parse_conversation(text, source="bad.log")
    with pytest.raises(LogFormatError) as fast:
        parse_conversation_texts(text, source="bad.log")
    assert str(fast.value) == str(strict.value)
