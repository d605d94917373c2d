"""`agentmap run --checkpoint/--thread/--resume`: a run that pauses for an answer, resumed by a second process."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from cli_helpers import ROOT, agentmap, agentmap_forked, agentmap_tty, write

from agentmap.agents.questions import question

ASK = """\
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
Ask,Name,input,"What is your name, {title}?","{""interrupt"": true}",title,name,Greet
Ask,Greet,template,"Hello, {name}!",,name,greeting,
"""


@pytest.fixture
def workflow(tmp_path: Path) -> Path:
    write(tmp_path / "ask.state.json", '{"title": "sir", "note": "kept"}')
    return write(tmp_path / "ask.csv", ASK)


@pytest.mark.slow
def test_a_paused_run_is_resumed_by_a_second_process(workflow: Path, tmp_path: Path) -> None:
    paused = agentmap("run", workflow, "--checkpoint", "runs.db", cwd=tmp_path)
    assert paused.code == 0, paused.err
    document = json.loads(paused.out)
    assert document["paused"] is True
    assert document["interrupts"] == [question("Name", "input", "What is your name, sir?")]
    thread = document["thread"]
    assert thread and "greeting" not in document["state"]
    assert document["resume"].startswith(f"agentmap resume {thread} --checkpoint runs.db ")
    (waiting,) = [e for e in document["summary"] if e["success"] is None]
    assert waiting["name"] == "Name" and waiting["metadata"] == {"paused": True}

    done = agentmap_forked(
        "run", workflow, "--checkpoint", "runs.db", "--thread", thread, "--resume", '"Ada"', cwd=tmp_path
    )
    assert done.code == 0, done.err
    final = json.loads(done.out)
    assert final["success"] is True and "paused" not in final
    assert final["state"]["name"] == "Ada"
    assert final["state"]["greeting"] == "Hello, Ada!"
    assert final["state"]["note"] == "kept"  # the first run's initial state, from the checkpoint

    again = agentmap("run", workflow, "--checkpoint", "runs.db", "--thread", thread, "--resume", '"Bo"', cwd=tmp_path)
    assert again.code == 2
    assert "error[nothing-to-resume]" in again.err and f"thread {thread!r}" in again.err
    assert "Traceback" not in again.err


@pytest.mark.slow
def test_a_paused_run_in_a_terminal_shows_the_question_and_the_command_to_resume(
    workflow: Path, tmp_path: Path
) -> None:
    shown = agentmap_tty("run", workflow, "--checkpoint", "runs.db", "--thread", "t-1", cwd=tmp_path)
    assert shown.code == 0
    assert "paused for input" in shown.plain
    assert "Name: What is your name, sir?" in shown.plain
    command = "agentmap resume t-1 --checkpoint runs.db"
    assert command in " ".join(shown.plain.split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--resume", '"Ada"'], "give the --thread it paused in"),
        (["--checkpoint", "runs.db", "--resume", '"Ada"'], "give the --thread it paused in"),
        (["--checkpoint", "runs.db", "--thread", "t1", "--resume", "Ada"], "--resume is not valid JSON"),
        (["--checkpoint", "runs.db", "--thread", "t1", "--resume", "1", "--state", "{}"], "drop --state"),
        (["--checkpoint", "missing/runs.db"], "the folder missing does not exist"),
        (["--checkpoint", "runs.db", "--thread", "never", "--resume", '"Ada"'], "has no thread 'never'"),
    ],
)
def test_bad_persistence_options_exit_2_with_a_message(
    workflow: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    result = agentmap("run", workflow, *args, cwd=tmp_path)
    assert result.code == 2, result.text
    assert message in result.err
    assert "Traceback" not in result.err
    assert not (tmp_path / "missing").exists()


PICK = """\
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
Pick,Colour,human,Which colour?,"{'interaction_type': 'choice', 'options': ['red', 'green', 'blue']}",,colour,Say
Pick,Say,template,You chose {colour}.,,colour,said,
"""


def test_a_paused_nodes_hint_shows_a_plain_answer_and_its_number_is_accepted(tmp_path: Path) -> None:
    write(tmp_path / "pick.csv", PICK)
    paused = agentmap("run", "pick.csv", "--checkpoint", "runs.db", "--thread", "c1", cwd=tmp_path)
    assert paused.code == 0, paused.err
    hint = json.loads(paused.out)["resume"]
    assert hint == "agentmap resume c1 --checkpoint runs.db red"  # the first option as typed: no JSON quoting
    refused = agentmap("resume", "c1", "purple", "--checkpoint", "runs.db", cwd=tmp_path)
    assert refused.code == 2 and "or its number, 1 to 3" in refused.err
    done = agentmap("resume", "c1", "2", "--checkpoint", "runs.db", cwd=tmp_path)  # as the hint offers
    assert done.code == 0, done.err
    assert json.loads(done.out)["state"]["said"] == "You chose green."
    # the thread remembers the file's absolute path; both documents show it as run was given it
    assert json.loads(paused.out)["file"] == json.loads(done.out)["file"] == "pick.csv"


def test_threads_show_offers_the_command_that_answers_a_paused_thread(tmp_path: Path) -> None:
    flow = write(tmp_path / "pick.csv", PICK)
    assert agentmap("run", flow, "--checkpoint", "runs.db", "--thread", "c3", cwd=tmp_path).code == 0
    shown = json.loads(agentmap("threads", "show", "c3", "--checkpoint", "runs.db", cwd=tmp_path).out)
    assert shown["resume"] == "agentmap resume c3 --checkpoint runs.db red"  # not without an answer
    done = agentmap(*shlex.split(shown["resume"])[1:], cwd=tmp_path)  # the command as offered
    assert done.code == 0, done.err
    assert json.loads(done.out)["state"]["said"] == "You chose red."


@pytest.mark.slow
def test_a_paused_choice_in_a_terminal_lists_its_options(tmp_path: Path) -> None:
    flow = write(tmp_path / "pick.csv", PICK)
    shown = agentmap_tty("run", flow, "--checkpoint", "runs.db", "--thread", "c1", cwd=tmp_path)
    assert shown.code == 0, shown.plain
    lines = [line.strip() for line in shown.plain.splitlines()]
    start = lines.index("? Colour: Which colour?")
    assert lines[start + 1 : start + 4] == ["1. red", "2. green", "3. blue"]
    assert "agentmap resume c1 --checkpoint runs.db red" in " ".join(shown.plain.split())


def test_a_text_answer_needs_no_json_quoting_even_when_it_looks_like_a_number(tmp_path: Path) -> None:
    flow = write(tmp_path / "ask.csv", ASK)
    write(tmp_path / "ask.state.json", '{"title": "sir"}')
    assert agentmap("run", flow, "--checkpoint", "runs.db", "--thread", "t1", cwd=tmp_path).code == 0
    done = agentmap("resume", "t1", "42", "--checkpoint", "runs.db", cwd=tmp_path)
    assert done.code == 0, done.err
    assert json.loads(done.out)["state"]["greeting"] == "Hello, 42!"


def test_a_run_that_pauses_needs_no_flag_it_is_saved_under_a_new_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTMAP_CHECKPOINT", raising=False)
    flow = write(tmp_path / "pick.csv", PICK)
    paused = agentmap("run", flow, cwd=tmp_path)
    assert paused.code == 0, paused.err
    document = json.loads(paused.out)
    thread = document["thread"]
    assert document["status"] == "paused" and document["resume"] == f"agentmap resume {thread} red"
    assert (tmp_path / ".agentmap" / "runs.db").is_file()
    done = agentmap("resume", thread, "blue", cwd=tmp_path)  # the command the pause printed, as typed
    assert done.code == 0, done.err
    assert json.loads(done.out)["state"]["said"] == "You chose blue."
    again = agentmap("run", flow, cwd=tmp_path)
    assert json.loads(again.out)["thread"] != thread  # each run a thread of its own


THREE = """\
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
G,Prepare,template,Buy {request},,request,draft,Review
G,Review,human,Approve {draft}?,"{""interaction_type"": ""approval""}",draft,approved,Report
G,Report,template,{draft}: {approved},,draft|approved,report,
"""


def test_a_resumed_runs_summary_is_the_whole_run_with_earlier_steps_marked(tmp_path: Path) -> None:
    flow = write(tmp_path / "three.csv", THREE)
    assert agentmap("run", flow, "--state", '{"request": "pens"}', "--thread", "t3", cwd=tmp_path).code == 0
    done = agentmap("resume", "t3", "yes", cwd=tmp_path)
    assert done.code == 0, done.err
    summary = json.loads(done.out)["summary"]
    assert [(e["name"], e["success"], e.get("metadata", {}).get("before_resume", False)) for e in summary] == [
        ("Prepare", True, True),  # ran before the pause, in the first process
        ("Review", True, False),
        ("Report", True, False),
    ]
    assert all(e["duration"] >= 0 for e in summary)
    shown = agentmap_tty("run", flow, "--state", '{"request": "ink"}', "--thread", "t4", cwd=tmp_path)
    assert shown.code == 0
    table = agentmap_tty("resume", "t4", "no", cwd=tmp_path).plain
    assert "Prepare" in table and "(before resume)" in table and "Report" in table


def test_the_pause_examples_of_the_docs_print_what_they_say(tmp_path: Path) -> None:
    """csv_specs/human.md's example, run as written: each `# ` line is what the command before it printed;
    its question is the one the run asks, and csv_specs/cli.md shows the same pause."""
    page = (ROOT / "csv_specs" / "human.md").read_text(encoding="utf-8")
    write(tmp_path / "publish.csv", re.search(r"```csv\n(.*?)```", page, re.S).group(1))  # type: ignore[union-attr]
    printed = ""
    for line in re.search(r"```bash\n(.*?)```", page, re.S).group(1).splitlines():  # type: ignore[union-attr]
        if line.startswith("# "):
            assert line[2:].strip() in printed, (line, printed)
        elif line.strip():
            result = agentmap_tty(*shlex.split(line)[1:], cwd=tmp_path)
            assert result.code == 0, result.plain
            printed = result.plain
        if line.startswith("agentmap run"):
            first = printed
    question = json.loads(re.search(r"```json\n(.*?)```", page, re.S).group(1))  # type: ignore[union-attr]
    asked = agentmap("run", "publish.csv", "--state", '{"draft": "Q3 notes"}', "--thread", "t2", cwd=tmp_path)
    assert json.loads(asked.out)["interrupts"] == [question]
    cli = (ROOT / "csv_specs" / "cli.md").read_text(encoding="utf-8")
    sample = cli[cli.index("**Answers from a person**") :].split("```text\n")[1].split("```")[0]
    for line in sample.splitlines():
        assert line.strip() in first, line


TWO = """\
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
Two,Start,echo,,,,started,A|B
Two,A,input,First?,"{""interrupt"": true}",,a,
Two,B,input,Second?,"{""interrupt"": true}",,b,
"""


def test_two_waiting_questions_need_an_answer_each_by_interrupt_id(tmp_path: Path) -> None:
    """The runtime's answer rule, as `agentmap resume` says it: a partial answer exits 2, nothing answered."""
    workflow = write(tmp_path / "two.csv", TWO)
    paused = agentmap("run", workflow, "--checkpoint", "runs.db", "--thread", "t2", "--state", "{}", cwd=tmp_path)
    assert paused.code == 0, paused.err
    shown = json.loads(agentmap("threads", "show", "t2", "--checkpoint", "runs.db", cwd=tmp_path).out)
    assert len(shown["questions"]) == 2
    ids = re.findall(r'"([0-9a-f]{32})"', json.loads(paused.out)["resume"])
    assert len(ids) == 2, paused.out
    partial = agentmap("resume", "t2", "--data", json.dumps({ids[0]: "one"}), "--checkpoint", "runs.db", cwd=tmp_path)
    assert partial.code == 2 and "error[ambiguous-resume]" in partial.err and f"no answer for {ids[1]}" in partial.err
    both = json.dumps({ids[0]: "one", ids[1]: "two"})
    done = agentmap("resume", "t2", "--data", both, "--checkpoint", "runs.db", cwd=tmp_path)
    assert done.code == 0, done.err
    assert {json.loads(done.out)["state"][k] for k in ("a", "b")} == {"one", "two"}
