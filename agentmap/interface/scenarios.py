"""Evaluation scenarios: a CSV with one row per user turn.

```
scenario,turn,user_message,must_include,must_not_include,expect_refusal,expect_clarification
greeting,1,Hello!,hello,,no,
licensing,1,What does the document say about nurse licensing in Spain?,licens|Spain,,,
licensing,2,And in Portugal?,Portugal,,,
```

Headers match case-insensitively ignoring `_`, `-` and spaces. `scenario` and `user_message` (or `goal`, for a
simulated user: `agentmap.interface.simulated_user`) are required;
`turn` is optional (rows are then numbered in file order). Expectations apply to the assistant's reply to
that row's message; list cells hold `|`-separated terms. See csv_specs/evaluation.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from agentmap.errors import ErrorCode, Location
from agentmap.interface._scenario_files import SCENARIO_SUFFIXES, ScenarioError, read_numbered
from agentmap.interface.checks import MATCH_MODES, ExpressionError, parse_condition, parse_trajectory
from agentmap.interface.simulated_user import DEFAULT_MAX_TURNS, SimulatedUser

__all__ = ["SCENARIO_COLUMNS", "Scenario", "ScenarioError", "ScenarioTurn", "load_scenarios"]

SCENARIO_COLUMNS: dict[str, tuple[str, ...]] = {
    "scenario": ("scenario_id", "scenario_name", "name", "id"),
    "turn": ("turn_index", "step", "index"),
    "user_message": ("message", "user", "prompt", "input", "user_text"),
    "must_include": ("includes", "expected", "expect_include"),
    "must_not_include": ("excludes", "forbidden", "expect_exclude"),
    "expect_refusal": ("refusal", "should_refuse"),
    "expect_clarification": ("clarification", "should_clarify"),
    "rubric": ("judge_rubric", "criteria"),
    "expected_state": ("expect_state", "state_check"),
    "expected_trajectory": ("expect_trajectory", "trajectory"),
    "trajectory_match": ("match", "trajectory_mode"),
    "persona": ("user_persona",),
    "goal": ("user_goal",),
    "max_turns": ("turn_limit",),
    "stop_when": ("stop", "stop_condition"),
    "user_model": ("simulated_user_model",),
}
"""Canonical scenario column -> its aliases."""

_REQUIRED = ("scenario",)
_USER_COLUMNS = ("persona", "max_turns", "stop_when", "user_model")
_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0"}


class ScenarioTurn(BaseModel):
    """One user turn of a scenario and what its reply must satisfy.

    Attributes:
        turn: The 1-based turn number.
        message: The user's message; empty means the runner has no input for this turn.
        must_include: Terms the reply must contain (case-insensitive).
        must_not_include: Terms the reply must not contain (case-insensitive).
        expect_refusal: True if the reply must be a refusal, False if it must not be, None if either.
        expect_clarification: Likewise for a bounded clarifying question.
        rubric: Criteria for the optional LLM judge.
    """

    model_config = ConfigDict(frozen=True)

    turn: int
    message: str
    must_include: tuple[str, ...] = ()
    must_not_include: tuple[str, ...] = ()
    expect_refusal: bool | None = None
    expect_clarification: bool | None = None
    rubric: str = ""


class Scenario(BaseModel):
    """A named, scripted conversation: the user messages in order, with expectations.

    Attributes:
        name: The scenario's name (never used in log file names).
        turns: The user turns, numbered 1..n.
        expected_state: Conditions the run's final state must meet (`agentmap.interface.checks`), each checked
            when the file was loaded.
        expected_trajectory: The steps the run must go through: `|`-separated node names and tool calls.
        trajectory_match: How: `exact`, `in_order`, `any_order`, `subset` or `superset`.
        user: The simulated user (`goal`, `persona`, ...), or None for a scripted scenario; its one turn then
            holds the optional opening message and the expectations on the first reply.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    turns: tuple[ScenarioTurn, ...]
    expected_state: tuple[str, ...] = ()
    expected_trajectory: str = ""
    trajectory_match: str = "exact"
    user: SimulatedUser | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.user is None:  # a scripted scenario is written as before simulated users existed
            data.pop("user", None)
        return data

    @property
    def fingerprint(self) -> str:
        """A short hash of the user messages (and simulated user): a resumed run redoes a changed scenario."""
        messages: list[Any] = [t.message for t in self.turns]
        if self.user is not None:
            messages.append(self.user.model_dump())
        data = json.dumps(messages, ensure_ascii=False, sort_keys=True).encode()
        return hashlib.sha256(data).hexdigest()[:16]


def _fold(header: str) -> str:
    return re.sub(r"[\s_\-]+", "", header).lower()


_LOOKUP = {_fold(name): canonical for canonical, aliases in SCENARIO_COLUMNS.items() for name in (canonical, *aliases)}


def load_scenarios(path: str | os.PathLike[str]) -> list[Scenario]:
    """Read a scenarios file: CSV, xlsx (the first sheet) or JSONL (one object per line, keys as columns).

    Args:
        path: The file (text files UTF-8, optionally with a byte-order mark).

    Returns:
        The scenarios in order of first appearance, each with its turns sorted by number.

    Raises:
        ScenarioError: When the file is missing or has no rows, a required column is absent, a turn number is not a
            positive whole number or repeats, turns skip a number, or a yes/no cell holds something else.
    """
    file = Path(path)
    if file.suffix.lower() not in SCENARIO_SUFFIXES and file.is_file() and file.suffix:
        raise ScenarioError(
            f"a scenarios file is .csv, .xlsx or .jsonl, not {file.suffix!r}",
            location=Location(file=str(file)),
            hint="Save the scenarios as CSV, an Excel workbook (.xlsx) or JSON Lines (.jsonl).",
        )
    rows = read_numbered(file, _LOOKUP)
    header_at = next((i for i, (_, row) in enumerate(rows) if _content(row)), None)
    if header_at is None:
        raise ScenarioError("the scenarios file is empty", location=Location(file=str(file)))
    columns = _map_header(rows[header_at][1], file, rows[header_at][0])
    grouped: dict[str, list[tuple[int, dict[str, str]]]] = {}
    for number, row in rows[header_at + 1 :]:
        if not _content(row):
            continue
        cells = {name: (row[i].strip() if i < len(row) else "") for name, i in columns.items()}
        where = _Where(str(file), number)
        width = len(rows[header_at][1])
        if any(cell.strip() for cell in row[width:]):  # its cells would land under the wrong columns
            raise ScenarioError(
                f"this row has {len(row)} cells but the header has {width} columns",
                location=Location(file=str(file), row=number),
                hint="quote cells that contain commas, or add a header for the extra column",
            )
        name = cells["scenario"]
        if not name:
            raise ScenarioError(
                "a row has no scenario name",
                location=where.at("scenario"),
                hint="Give every row the name of the scenario it belongs to.",
            )
        grouped.setdefault(name, []).append((number, cells))
    if not grouped:
        raise ScenarioError(
            "the scenarios file has a header but no scenario rows",
            location=Location(file=str(file), row=rows[header_at][0]),
            hint="Add one row per user turn: scenario, turn, user_message.",
        )
    return [_build(name, rows_, str(file)) for name, rows_ in grouped.items()]


class _Where:
    def __init__(self, file: str, row: int) -> None:
        self.file, self.row = file, row

    def at(self, column: str) -> Location:
        return Location(file=self.file, row=self.row, column=column)


def _content(row: list[str]) -> bool:
    return any(cell.strip() for cell in row) and not row[0].lstrip().startswith("#")


def _map_header(header: list[str], file: Path, line: int) -> dict[str, int]:
    columns: dict[str, int] = {}
    for index, cell in enumerate(header):
        canonical = _LOOKUP.get(_fold(cell))
        if canonical is None:
            continue
        if canonical in columns:
            raise ScenarioError(
                f"two columns mean {canonical!r}: {header[columns[canonical]]!r} and {cell!r}",
                location=Location(file=str(file), row=line, column=cell),
                hint="Keep one of them.",
            )
        columns[canonical] = index
    for required in _REQUIRED:
        if required not in columns:
            raise ScenarioError(
                f"the scenarios file has no {required!r} column (header: {', '.join(header)})",
                location=Location(file=str(file), row=line),
                hint="The header needs at least: scenario, user_message (turn and expectations optional).",
            )
    if "user_message" not in columns and "goal" not in columns:
        raise ScenarioError(
            f"the scenarios file has no 'user_message' column (header: {', '.join(header)})",
            location=Location(file=str(file), row=line),
            hint="Give scripted turns in user_message, or a simulated user's goal in goal "
            "(see csv_specs/evaluation.md).",
        )
    return columns


def _build(name: str, rows: list[tuple[int, dict[str, str]]], file: str) -> Scenario:
    turns: list[ScenarioTurn] = []
    seen: dict[int, int] = {}
    for position, (line, cells) in enumerate(rows, start=1):
        where = _Where(file, line)
        raw_turn = cells.get("turn", "")
        if raw_turn:
            if not raw_turn.isdigit() or int(raw_turn) < 1:
                raise ScenarioError(
                    f"turn must be a positive whole number, got {raw_turn!r}", location=where.at("turn")
                )
            number = int(raw_turn)
        else:
            number = position
        if number in seen:
            raise ScenarioError(
                f"scenario {name!r} has turn {number} twice (also on row {seen[number]})",
                location=where.at("turn"),
                hint="Number each scenario's turns 1, 2, 3, ...",
            )
        seen[number] = line
        turns.append(
            ScenarioTurn(
                turn=number,
                message=cells.get("user_message", ""),
                must_include=_terms(cells.get("must_include", "")),
                must_not_include=_terms(cells.get("must_not_include", "")),
                expect_refusal=_flag(cells.get("expect_refusal", ""), where.at("expect_refusal")),
                expect_clarification=_flag(cells.get("expect_clarification", ""), where.at("expect_clarification")),
                rubric=cells.get("rubric", ""),
            )
        )
    turns.sort(key=lambda t: t.turn)
    checks = _run_checks(name, rows, file)
    user = _simulated_user(name, rows, file)
    if user is not None:
        return Scenario(name=name, turns=tuple(turns), user=user, **checks)
    for expected, turn in enumerate(turns, start=1):
        if turn.turn != expected:
            raise ScenarioError(
                f"scenario {name!r} skips turn {expected} (it has turn {turn.turn})",
                location=Location(file=file, row=seen[turn.turn], column="turn"),
                hint="Number each scenario's turns 1, 2, 3, ... without gaps.",
            )
    return Scenario(name=name, turns=tuple(turns), **checks)


def _run_checks(name: str, rows: list[tuple[int, dict[str, str]]], file: str) -> dict[str, Any]:
    """The scenario's checks on its final state and trajectory, each cell parsed (never run) here."""
    states: list[str] = []
    found: dict[str, tuple[int, str]] = {}
    for line, cells in rows:
        where = _Where(file, line)
        condition = cells.get("expected_state", "")
        if condition:
            _parse(parse_condition, condition, where.at("expected_state"))
            states.append(condition)
        for column in ("expected_trajectory", "trajectory_match"):
            value = cells.get(column, "")
            if not value:
                continue
            if column in found and found[column][1] != value:
                raise ScenarioError(
                    f"scenario {name!r} has two {column} cells (also on row {found[column][0]})",
                    location=where.at(column),
                    hint="Give a scenario's trajectory on one of its rows.",
                )
            found[column] = (line, value)
    trajectory = found.get("expected_trajectory", (0, ""))[1]
    if trajectory:
        line = found["expected_trajectory"][0]
        _parse(parse_trajectory, trajectory, Location(file=file, row=line, column="expected_trajectory"))
    mode = found.get("trajectory_match", (0, "exact"))[1].lower()
    if mode not in MATCH_MODES:
        raise ScenarioError(
            f"trajectory_match must be one of {', '.join(MATCH_MODES)}, got {mode!r}",
            location=Location(file=file, row=found["trajectory_match"][0], column="trajectory_match"),
        )
    if "trajectory_match" in found and not trajectory:
        raise ScenarioError(
            f"scenario {name!r} has a trajectory_match but no expected_trajectory",
            location=Location(file=file, row=found["trajectory_match"][0], column="trajectory_match"),
            hint="Add the expected steps in expected_trajectory, or clear trajectory_match.",
        )
    return {"expected_state": tuple(states), "expected_trajectory": trajectory, "trajectory_match": mode}


def _parse(parser: Callable[[str], object], text: str, where: Location) -> None:
    try:
        parser(text)
    except ExpressionError as exc:
        raise ScenarioError(
            f"{text!r}: {exc}",
            code=ErrorCode.BAD_EXPRESSION,
            location=where,
            hint="See csv_specs/evaluation.md, 'Checks on state and trajectory', for what a cell may hold.",
        ) from None


def _terms(cell: str) -> tuple[str, ...]:
    return tuple(term.strip() for term in cell.split("|") if term.strip())


def _flag(cell: str, where: Location) -> bool | None:
    value = cell.lower()
    if not value:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ScenarioError(
        f"expected yes or no, got {cell!r}",
        location=where,
        hint="Use yes/no (or true/false, 1/0); leave empty for 'either'.",
    )


def _simulated_user(name: str, rows: list[tuple[int, dict[str, str]]], file: str) -> SimulatedUser | None:
    """The simulated user of a scenario whose row has a `goal`; its other columns need a goal."""
    line, cells = rows[0]
    where = _Where(file, line)
    goal = cells.get("goal", "")
    if not goal:
        for other_line, other in rows:
            for column in ("goal", *_USER_COLUMNS):
                if other.get(column, ""):
                    raise ScenarioError(
                        f"scenario {name!r} has a {column} but no goal"
                        if column != "goal"
                        else f"scenario {name!r} gives its goal on row {other_line}, not on its first row",
                        location=Location(file=file, row=other_line, column=column),
                        hint="A simulated user needs its goal on the scenario's one row; "
                        "clear the cell for a scripted scenario.",
                    )
        return None
    if len(rows) > 1:
        raise ScenarioError(
            f"scenario {name!r} has a simulated user (goal) and {len(rows)} rows",
            location=Location(file=file, row=rows[1][0], column="scenario"),
            hint="A simulated-user scenario is one row: the user writes its own turns. Give the others another name.",
        )
    raw = cells.get("max_turns", "")
    if raw and (not raw.isdigit() or int(raw) < 1):
        raise ScenarioError(f"max_turns must be a positive whole number, got {raw!r}", location=where.at("max_turns"))
    user = SimulatedUser(
        goal=goal,
        persona=cells.get("persona", ""),
        max_turns=int(raw) if raw else DEFAULT_MAX_TURNS,
        stop_when=cells.get("stop_when", ""),
        user_model=cells.get("user_model", ""),
    )
    if user.stop_when and user.phrase is None:
        _parse(parse_condition, user.stop_when, where.at("stop_when"))
    return user
