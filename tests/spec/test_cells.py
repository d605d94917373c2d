"""Cell parsers: Context, Input_Fields / Output_Field, and next-node cells."""

from __future__ import annotations

import pytest

from agentmap.spec.cells import CellError, parse_context, parse_fields, parse_targets, split_pipes, state_key
from agentmap.spec.models import FuncRef


def test_split_pipes_trims_and_drops_empty_parts() -> None:
    assert split_pipes(" a | b||c ") == ("a", "b", "c")
    assert split_pipes("") == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ('{"temperature": 0.2, "tags": ["a"]}', {"temperature": 0.2, "tags": ["a"]}),
        ("{'temperature': 0.2, 'flag': True, 'none': None}", {"temperature": 0.2, "flag": True, "none": None}),
        ("{workflow=::Inner}", {"workflow": "::Inner"}),
        ("{workflow=other.csv::G, mode = fast}", {"workflow": "other.csv::G", "mode": "fast"}),
        ("  {1: 'x'}  ", {"1": "x"}),
    ],
)
def test_context_accepts_json_python_literals_and_directives(text: str, expected: dict[str, object]) -> None:
    assert parse_context(text) == expected


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('{"a": 1', "'{\"a\": 1'"),
        ("{a: 1}}", "'{a: 1}}'"),
        ("{=x}", "'{=x}'"),
    ],
)
def test_context_that_is_not_an_object_is_an_error_showing_the_cell(text: str, shown: str) -> None:
    with pytest.raises(CellError) as info:
        parse_context(text)
    assert info.value.code == "bad-context"
    assert shown in info.value.message
    assert "Description" in info.value.fix


@pytest.mark.parametrize(("text", "kind"), [("[1, 2]", "list"), ('"text"', "str"), ("3", "int")])
def test_context_must_be_an_object_not_another_json_value(text: str, kind: str) -> None:
    with pytest.raises(CellError, match=f"not {kind}") as info:
        parse_context(text)
    assert info.value.code == "bad-context"


def test_context_error_clips_long_cells() -> None:
    with pytest.raises(CellError) as info:
        parse_context("{" + "x" * 200)
    assert "{" + "x" * 76 + "..." in info.value.message
    assert "x" * 78 not in info.value.message


@pytest.mark.parametrize(
    ("text", "rename", "expected"),
    [
        ("a|b", True, ("a", "b")),
        ("query:question|history", True, ("query:question", "history")),
        ("question=query", True, ("question=query",)),
        ("answer|score", False, ("answer", "score")),
        ("answer=text", False, ("answer=text",)),
        ("", False, ()),
    ],
)
def test_fields_accept_plain_names_and_renames(text: str, rename: bool, expected: tuple[str, ...]) -> None:
    assert parse_fields(text, allow_rename=rename) == expected


@pytest.mark.parametrize(
    ("text", "rename", "needle"),
    [
        ("a:b:c", True, "'a:b:c' is not 'state_key'"),
        ("a=b:c", True, "'a=b:c' is not"),
        (":param", True, "':param' is not"),
        ("key=", False, "'key=' is not 'state_key' or 'state_key=result_key'"),
        ("answer:text", False, "write an output rename as state_key=result_key"),
    ],
)
def test_malformed_fields_are_errors(text: str, rename: bool, needle: str) -> None:
    with pytest.raises(CellError) as info:
        parse_fields(text, allow_rename=rename)
    assert info.value.code == "bad-field"
    assert needle in info.value.message


@pytest.mark.parametrize(
    ("field", "output", "key"),
    [
        ("a", False, "a"),
        ("query:question", False, "query"),
        ("question=query", False, "query"),
        ("answer", True, "answer"),
        ("answer=text", True, "answer"),
    ],
)
def test_state_key_is_the_side_that_names_the_state(field: str, output: bool, key: str) -> None:
    assert state_key(field, output=output) == key


def test_targets_are_node_names_or_a_router() -> None:
    assert parse_targets("") is None
    assert parse_targets("Next") == ("Next",)
    assert parse_targets("A | B") == ("A", "B")
    assert parse_targets("func:choose") == FuncRef(name="choose")
    assert parse_targets("FUNC: pkg.routes:choose") == FuncRef(name="choose", module="pkg.routes")
    assert str(parse_targets("func:pkg.routes:choose")) == "func:pkg.routes:choose"


@pytest.mark.parametrize(
    ("text", "needle"),
    [("A|func:choose", "mixes a func: router"), ("func:", "does not name a function"), ("func:1abc", "does not name")],
)
def test_bad_targets_are_errors(text: str, needle: str) -> None:
    with pytest.raises(CellError) as info:
        parse_targets(text)
    assert info.value.code == "bad-target"
    assert needle in info.value.message


def test_context_reads_plain_text_and_unquoted_keys_with_notes() -> None:
    notes: list[CellError] = []
    assert parse_context("Failure Path", notes) == {"context": "Failure Path"}
    assert parse_context("{llm_provider: anthropic, send_resume_message: true}", notes) == {
        "llm_provider": "anthropic",
        "send_resume_message": True,
    }
    assert [n.code for n in notes] == ["context-plain-text", "context-unquoted-keys"]
    assert '{"llm_provider": "anthropic", "send_resume_message": true}' in notes[1].fix


@pytest.mark.parametrize(
    ("text", "why"),
    [("[" * 2000 + "]" * 2000, "nested 2000 levels"), ('{"n": ' + "7" * 5000 + "}", "5000 digits")],
)
def test_context_too_deep_or_too_long_is_bad_context_not_a_crash(text: str, why: str) -> None:
    with pytest.raises(CellError, match=why) as info:
        parse_context(text)
    assert info.value.code == "bad-context"


def test_unquoted_keys_without_pyyaml_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "yaml", None)
    assert parse_context("{'a': 1}") == {"a": 1}  # JSON and Python literals need no PyYAML
    with pytest.raises(CellError, match="needs PyYAML") as info:
        parse_context("{a: 1}")
    assert "agentmap[yaml]" in info.value.fix
