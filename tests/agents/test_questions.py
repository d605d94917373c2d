"""The questions a paused node asks, and which answers fit them."""

from __future__ import annotations

import pytest

from agentmap.agents.questions import AnswerError, check_answer, is_question, question, typed_answer


def test_approval_accepts_words_bools_and_dicts() -> None:
    q = question("Review", "human", "Publish?", interaction="approval")
    assert check_answer(q, "Approve") == {"approved": True}
    assert check_answer(q, False) == {"approved": False}
    assert check_answer(q, {"approved": True, "note": "ok"}) == {"approved": True, "note": "ok"}
    with pytest.raises(AnswerError, match="neither yes nor no") as info:
        check_answer(q, "maybe")
    assert info.value.code == "bad-answer" and "approve" in (info.value.hint or "")


@pytest.mark.parametrize("word", ["no", "false", "No", "reject", False])
def test_an_approved_field_is_read_by_the_same_words_never_by_truthiness(word: object) -> None:
    q = question("Review", "human", "Publish?", interaction="approval")
    assert check_answer(q, {"approved": word}) == {"approved": False}
    assert check_answer(q, {"approved": word, "note": "too dear"}) == {"approved": False, "note": "too dear"}


@pytest.mark.parametrize("value", ["maybe", "", 1, 0, None, [], {"approved": True}])
def test_an_approved_field_that_is_neither_yes_nor_no_is_refused(value: object) -> None:
    q = question("Review", "human", "Publish?", interaction="approval")
    with pytest.raises(AnswerError, match=r'"approved": .* is neither yes nor no') as info:
        check_answer(q, {"approved": value})
    assert info.value.code == "bad-answer"


def test_typed_text_is_read_as_the_command_line_reads_it() -> None:
    assert [typed_answer(t) for t in ("no", "2", "true", "null", " Paris ")] == ["no", "2", "true", "null", " Paris "]
    assert typed_answer('{"approved": false}') == {"approved": False}
    assert typed_answer('"quoted"') == "quoted"
    assert typed_answer("[1, 2") == "[1, 2"  # starts like JSON but is not: the text
    assert typed_answer("[" * 100_000) == "[" * 100_000  # too deep to read as JSON: the text, not a crash


def test_choice_takes_an_option_its_case_folded_text_or_its_number() -> None:
    q = question("Pick", "human", "Which?", interaction="choice", options=["Red", "Blue"])
    assert check_answer(q, "Blue") == "Blue"
    assert check_answer(q, "red") == "Red"
    assert check_answer(q, "2") == "Blue"
    with pytest.raises(AnswerError, match="not one of them") as info:
        check_answer(q, "3")
    assert "'Red', 'Blue'" in (info.value.hint or "")


def test_text_questions_refuse_non_text_and_events_take_anything() -> None:
    assert check_answer(question("N", "input", "Name?", interaction="text_input"), "Ada") == "Ada"
    with pytest.raises(AnswerError):
        check_answer(question("N", "input", "Name?", interaction="text_input"), 42)
    event = question("Wait", "suspend", "payment", interaction="event")
    assert check_answer(event, None) is None
    assert check_answer(event, {"paid": 3}) == {"paid": 3}


def test_values_that_are_not_questions_pass_unchanged() -> None:
    assert not is_question({"question": "old style"})
    assert check_answer({"question": "old style"}, 7) == 7
    with pytest.raises(ValueError, match="unknown interaction"):
        question("N", "human", "?", interaction="telepathy")


def test_a_question_carries_the_agent_inbox_fields_and_its_answers_are_read() -> None:
    q = question("Review", "human", "Publish?", interaction="approval")
    assert q["action_request"] == {"action": "Review", "args": {}} and q["description"] == "Publish?"
    assert q["config"] == {"allow_accept": True, "allow_respond": True, "allow_edit": False, "allow_ignore": False}
    assert check_answer(q, [{"type": "accept", "args": None}]) == {"approved": True}
    assert check_answer(q, [{"type": "response", "args": "no"}]) == {"approved": False}
    assert check_answer(q, {"type": "response", "args": "Approve"}) == {"approved": True}
    for unfit in ([{"type": "response", "args": "maybe"}], [{"type": "ignore", "args": None}]):
        with pytest.raises(AnswerError, match="neither yes nor no"):
            check_answer(q, unfit)
    text = question("Ask", "human", "Your name?", interaction="text_input")
    assert text["config"]["allow_accept"] is False and text["config"]["allow_respond"] is True
    assert check_answer(text, [{"type": "response", "args": "Ada"}]) == "Ada"
    with pytest.raises(AnswerError, match="asks for text"):
        check_answer(text, [{"type": "accept", "args": None}])
    pick = question("Pick", "human", "Which?", interaction="choice", options=["agile", "lean"])
    assert pick["description"] == "Which?\n\nAnswer one of: agile, lean"
    assert check_answer(pick, [{"type": "response", "args": "2"}]) == "lean"
    event = question("Wait", "suspend", "the payment", interaction="event")
    assert "action_request" not in event and check_answer(event, [{"type": "accept"}]) == [{"type": "accept"}]
