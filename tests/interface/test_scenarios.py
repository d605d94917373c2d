"""Reading evaluation scenario CSVs."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmap.interface.scenarios import ScenarioError, load_scenarios


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenarios.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_rows_group_into_scenarios_with_expectations(tmp_path: Path) -> None:
    path = _csv(
        tmp_path,
        (
            "Scenario,Turn,User Message,Must_Include,must-not-include,expect_refusal,expect_clarification\n"
            "# a comment row\n"
            "trip,2,And back?,return| back ,,,\n"
            "greet,1,Hello!,hello,,no,\n"
            "\n"
            "trip,1,Book a flight,flight,error,,yes\n"
        ),
    )
    trip, greet = load_scenarios(path)  # in order of first appearance
    assert greet.name == "greet"
    assert greet.turns[0].expect_refusal is False
    assert [t.message for t in trip.turns] == ["Book a flight", "And back?"]
    assert trip.turns[1].must_include == ("return", "back")
    assert trip.turns[0].must_not_include == ("error",)
    assert trip.turns[0].expect_clarification is True
    assert trip.turns[0].expect_refusal is None


def test_turn_column_is_optional_and_aliases_work(tmp_path: Path) -> None:
    path = _csv(tmp_path, "name,prompt\na,first\na,second\nb,\n")
    a, b = load_scenarios(path)
    assert [(t.turn, t.message) for t in a.turns] == [(1, "first"), (2, "second")]
    assert b.turns[0].message == ""  # no input: the runner logs missing_input
    assert a.fingerprint != b.fingerprint


@pytest.mark.parametrize(
    ("text", "row", "column", "words"),
    [
        ("scenario,turn\na,1\n", 1, None, "no 'user_message' column"),
        ("scenario,turn,message\na,x,hi\n", 2, "turn", "positive whole number"),
        ("scenario,turn,message\na,1,hi\na,1,again\n", 3, "turn", "turn 1 twice"),
        ("scenario,turn,message\na,1,hi\na,3,again\n", 3, "turn", "skips turn 2"),
        ("scenario,message,expect_refusal\na,hi,maybe\n", 2, "expect_refusal", "yes or no"),
        ("scenario,message\n,hi\n", 2, "scenario", "no scenario name"),
        ("scenario,message,prompt\na,hi,hi\n", 1, "prompt", "two columns"),
        ("scenario,message\n# later\n\n", 1, None, "has a header but no scenario rows"),
        ("scenario,message\na,hi\nb,hi,there,you\n", 3, None, "4 cells but the header has 2 columns"),
        ('scenario,message\na,hi\nb,"hi\nc,hi\n', 3, None, "a quote opened in this row is never closed"),
    ],
)
def test_mistakes_name_row_and_column(tmp_path: Path, text: str, row: int, column: str | None, words: str) -> None:
    with pytest.raises(ScenarioError, match=words) as caught:
        load_scenarios(_csv(tmp_path, text))
    assert caught.value.location is not None
    assert (caught.value.location.row, caught.value.location.column) == (row, column)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="not found"):
        load_scenarios(tmp_path / "nope.csv")


def test_a_scenarios_file_that_is_not_utf8_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("scenario,turn,user_message\ncafé,1,olé\n".encode("latin-1"))
    with pytest.raises(ScenarioError, match="not UTF-8") as caught:
        load_scenarios(path)
    assert caught.value.exit_code == 2 and "CSV UTF-8" in (caught.value.hint or "")


def test_state_and_trajectory_columns_belong_to_the_scenario(tmp_path: Path) -> None:
    path = _csv(
        tmp_path,
        "scenario,turn,user_message,expected_state,trajectory,match\n"
        "trip,1,Book a flight,booking,,\n"
        'trip,2,Confirm,"booking.status == ""confirmed""",Search|book(city="Rome"),in_order\n'
        "chat,1,Hi,,,\n",
    )
    trip, chat = load_scenarios(path)
    assert trip.expected_state == ("booking", 'booking.status == "confirmed"')
    assert (trip.expected_trajectory, trip.trajectory_match) == ('Search|book(city="Rome")', "in_order")
    assert (chat.expected_state, chat.expected_trajectory, chat.trajectory_match) == ((), "", "exact")


@pytest.mark.parametrize(
    ("rows", "row", "column", "words"),
    [
        ("s,1,a,A|B,\ns,2,b,A|C,\n", 3, "expected_trajectory", "two expected_trajectory cells (also on row 2)"),
        ("s,1,a,,exact\n", 2, "trajectory_match", "a trajectory_match but no expected_trajectory"),
        ("s,1,a,A,sometimes\n", 2, "trajectory_match", "must be one of exact, in_order"),
        ("s,1,a,A(b),\n", 2, "expected_trajectory", "arguments are written name=value"),
    ],
)
def test_trajectory_mistakes_are_located(tmp_path: Path, rows: str, row: int, column: str, words: str) -> None:
    path = _csv(tmp_path, "scenario,turn,user_message,expected_trajectory,trajectory_match\n" + rows)
    with pytest.raises(ScenarioError) as caught:
        load_scenarios(path)
    assert (caught.value.location.row, caught.value.location.column) == (row, column)  # type: ignore[union-attr]
    assert words in caught.value.message
