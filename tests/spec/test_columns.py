"""Header rows: canonical columns, aliases, case and separator folding, and header problems."""

from __future__ import annotations

import pytest

from agentmap.spec.columns import COLUMNS, REQUIRED, map_headers


@pytest.mark.parametrize(
    ("canonical", "alias"),
    [(canonical, alias) for canonical, aliases in COLUMNS.items() for alias in aliases],
)
def test_every_alias_maps_to_its_column(canonical: str, alias: str) -> None:
    headers = ["GraphName", "Node", alias] if canonical not in REQUIRED else [alias, "Other"]
    mapped = map_headers(headers)
    position = headers.index(alias)
    assert mapped.index[canonical] == position
    assert mapped.written[canonical] == alias


@pytest.mark.parametrize("spelling", ["success_next", "SUCCESS NEXT", "Success-Next", "successnext", " Success_Next "])
def test_headers_match_ignoring_case_spaces_dashes_and_underscores(spelling: str) -> None:
    mapped = map_headers(["GraphName", "Node", spelling])
    assert mapped.index["Success_Next"] == 2
    assert mapped.written["Success_Next"] == spelling.strip()
    assert mapped.problems == ()


def test_missing_required_columns_are_each_reported_with_their_aliases() -> None:
    mapped = map_headers(["AgentType", "Prompt"])
    missing = {p.column: p for p in mapped.problems if p.code == "missing-column"}
    assert set(missing) == {"GraphName", "Node"}
    assert "workflow_name" in missing["GraphName"].fix
    assert "StepName" in missing["Node"].fix
    assert "'AgentType'" in missing["Node"].message  # shows the headers it did find
    assert all(p.severity == "error" for p in missing.values())


def test_two_columns_meaning_one_name_is_an_error_naming_both() -> None:
    mapped = map_headers(["GraphName", "Node", "Edge", "next_node"])
    (problem,) = mapped.problems
    assert problem.code == "duplicate-column"
    assert problem.severity == "error"
    assert problem.column == "next_node"
    assert "'Edge'" in problem.message and "'next_node'" in problem.message
    assert mapped.index["Edge"] == 2  # the first one wins


def test_unknown_column_is_a_warning_with_a_did_you_mean() -> None:
    mapped = map_headers(["GraphName", "Node", "Promt", "Colour"])
    problems = {p.column: p for p in mapped.problems}
    assert problems["Promt"].code == "unknown-column"
    assert problems["Promt"].severity == "warning"
    assert "did you mean 'Prompt'" in problems["Promt"].message
    assert "did you mean" not in problems["Colour"].message
    assert "Promt" not in mapped.written.values()


def test_blank_headers_are_ignored() -> None:
    mapped = map_headers(["GraphName", "", "Node", "  "])
    assert mapped.problems == ()
    assert mapped.index == {"GraphName": 0, "Node": 2}
