"""The seed 000 conversation log types."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from agentmap.contracts.conversation import RunMetadata, StopReason, Turn


def test_stop_reasons_are_the_seed_strings() -> None:
    assert {"single_turn", "agent_error", "timeout", "missing_input"} <= {r.value for r in StopReason}
    meta = RunMetadata(session_id="s", mode="synthetic", scenario="x", max_turns=1, stop_reason=StopReason.TIMEOUT)
    assert meta.stop_reason == "timeout"


@pytest.mark.parametrize("value", ["", " padded", "two\nlines"])
def test_metadata_values_must_be_single_clean_lines(value: str) -> None:
    with pytest.raises(ValidationError, match="single line"):
        RunMetadata(session_id="s", mode="m", scenario=value, max_turns=1, stop_reason="single_turn")


def test_turn_normalizes_time_and_newlines() -> None:
    turn = Turn(role="user", timestamp=datetime(2025, 1, 2, 3, 4, 5, 999), text="a\r\nb\rc")
    assert turn.timestamp == datetime(2025, 1, 2, 3, 4, 5)
    assert turn.text == "a\nb\nc"
    aware = Turn(role="user", timestamp=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC), text="x")
    assert aware.timestamp.tzinfo is None


def test_turn_role_must_be_one_word() -> None:
    with pytest.raises(ValidationError, match="role"):
        Turn(role="the user", timestamp=datetime(2025, 1, 1), text="x")
