"""Every bad value given on the command line gets a documented answer: exit 2, the option and the place named.

The values are those a tester found to end in `error[internal]` (issue 37): a lone surrogate, nesting too deep,
integers too long, keys the runtime owns, `::GRAPH` with no file, out-of-range server options.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import GRAPHS, Result, agentmap, write

HELLO = GRAPHS / "hello_world.csv"

ASK = """\
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
Ask,Name,input,"What is your name?","{""interrupt"": true}",,name,Greet
Ask,Greet,template,"Hello, {name}!",,name,greeting,
"""


def _refused(result: Result, code: str, *words: str) -> dict[str, object]:
    """The error document of a command refused with exit 2 and `code`, whose message holds every one of `words`."""
    assert result.code == 2, result.text
    assert "internal" not in result.text and "Traceback" not in result.text
    assert result.err.startswith(f"error[{code}]: "), result.err
    error: dict[str, object] = json.loads(result.out)["error"]
    assert error["code"] == code
    for word in words:
        assert word in str(error["message"]), error
    return error


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ('{"name": "\\ud800"}', ["--state: name", "lone surrogate", "\\ud800"]),
        ('{"name": {"\\udfff": 1}}', ["--state: name", "has a key", "\\udfff"]),
        ('{"name": ' + "[" * 150 + "]" * 150 + "}", ["--state: name", "deeper than 100 levels"]),
        ('{"name": ' + "[" * 5000 + "]" * 5000 + "}", ["--state", "deeper than 100 levels"]),
        ('{"name": ' + "7" * 10_000 + "}", ["--state: name", "10000 digits"]),
        ('{"name": 18446744073709551616}', ["--state: name", "beyond the integers a checkpoint keeps"]),
        ('{"name": [1, NaN]}', ["--state: name[1]", "finite numbers"]),
        ('{"name": 1e400}', ["--state: name", "finite numbers"]),
        ('{"name": "Ada", "__interrupt__": 1}', ["--state: __interrupt__", "LangGraph keeps for itself"]),
        ('{"name": "Ada", "checkpoint_ns": "x"}', ["--state: checkpoint_ns", "LangGraph keeps for itself"]),
        ('{"name": "Ada", "errors": 1}', ["--state: errors must be a list, not a number"]),
        ('{"name": "Ada", "last_action_success": "yes"}', ["--state: last_action_success must be true or false"]),
        ('{"name": ', ["--state is not valid JSON", "line 1, column 10"]),
    ],
)
def test_a_state_a_run_cannot_keep_is_refused_naming_the_option_and_the_place(state: str, words: list[str]) -> None:
    _refused(agentmap("run", HELLO, "--state", state), "bad-state", *words)


def test_a_state_file_is_read_by_the_same_reader(tmp_path: Path) -> None:
    state = write(tmp_path / "deep.json", '{"name": ' + "[" * 2000 + "]" * 2000 + "}")
    _refused(agentmap("run", HELLO, "--state-file", state), "bad-state", f"state file {state}", "deeper than 100")
    write(tmp_path / "hello_world.state.json", '{"name": "Ada", "errors": {"a": 1}}')
    write(tmp_path / "hello_world.csv", HELLO.read_text(encoding="utf-8"))
    beside = agentmap("run", "hello_world.csv", cwd=tmp_path)  # the state file beside the workflow
    _refused(beside, "bad-state", "hello_world.state.json: errors must be a list, not an object")


def test_errors_given_as_a_list_are_kept_and_the_runs_own_appended() -> None:
    """`errors` in an initial state is legitimate (a run going on from another's state): the run appends to it."""
    result = agentmap("run", HELLO, "--state", '{"name": "Ada", "errors": ["Error in Before: earlier"]}')
    assert result.code == 0, result.text
    assert json.loads(result.out)["state"]["errors"] == ["Error in Before: earlier"]


def test_the_largest_values_the_rules_allow_still_run() -> None:
    state = {"name": [[[["Ada"]]]], "n": 2**63 - 1, "m": -(2**63), "text": "\U0001f600 caf\u00e9"}
    deep: object = "x"
    for _ in range(98):  # with the state object and `name`: 100 levels
        deep = [deep]
    state["name"] = deep
    result = agentmap("run", HELLO, "--state", json.dumps(state))
    assert result.code == 0, result.text
    assert json.loads(result.out)["state"]["n"] == 2**63 - 1


def test_a_graph_with_no_file_is_a_usage_error_with_the_fix() -> None:
    error = _refused(agentmap("run", "::HelloWorld"), "usage", "'::HelloWorld' names no workflow file before '::'")
    assert "graphs/hello_world.csv::HelloWorld" in str(error["hint"])


def test_resume_data_and_answer_are_read_by_the_same_reader(tmp_path: Path) -> None:
    flow = write(tmp_path / "ask.csv", ASK)
    assert agentmap("run", flow, "--checkpoint", "runs.db", "--thread", "t1", cwd=tmp_path).code == 0
    deep = "[" * 3000 + "]" * 3000
    _refused(agentmap("resume", "t1", "--data", deep, "--checkpoint", "runs.db", cwd=tmp_path), "usage", "--data")
    surrogate = agentmap("resume", "t1", '"Ada \\udc80"', "--checkpoint", "runs.db", cwd=tmp_path)
    _refused(surrogate, "usage", "ANSWER", "lone surrogate")
    resumed = agentmap("run", flow, "--checkpoint", "runs.db", "--thread", "t1", "--resume", "[1e999]", cwd=tmp_path)
    _refused(resumed, "usage", "--resume: [0]", "finite numbers")
    done = agentmap("resume", "t1", "Ada", "--checkpoint", "runs.db", cwd=tmp_path)  # the thread was left as it was
    assert done.code == 0, done.text
    assert json.loads(done.out)["state"]["greeting"] == "Hello, Ada!"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--max-body", "-1"], "--max-body"),
        (["--port", "70000"], "--port"),
        (["--port", "-1"], "--port"),
    ],
)
def test_server_options_out_of_range_are_refused_before_anything_starts(
    args: list[str], option: str, started: list[object]
) -> None:
    result = agentmap("serve", HELLO, "--checkpoint", "memory", *args)
    assert result.code == 2, result.text
    assert f"Invalid value for '{option}'" in result.err and "internal" not in result.text
    assert started == []


@pytest.mark.parametrize("value", ["nan", "inf", "-1s"])
def test_a_duration_that_is_no_number_of_seconds_is_refused(value: str, started: list[object]) -> None:
    result = agentmap("serve", HELLO, "--checkpoint", "memory", "--lease", value)
    assert result.code == 2, result.text
    assert result.err.startswith(f"error[usage]: --lease must be a duration such as 30s or 2m, not '{value}'")
    assert started == []


def test_studio_port_out_of_range_is_refused(started: list[object]) -> None:
    result = agentmap("studio", HELLO, "--port", "70000")
    assert result.code == 2 and "Invalid value for '--port'" in result.err
    assert started == []


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What the server and the studio were started with: nothing, when the command refuses its options first."""
    import agentmap._cli_api

    seen: list[object] = []
    monkeypatch.setattr(agentmap._cli_api, "serve", lambda config, **options: seen.append(options))
    monkeypatch.setattr(agentmap._cli_api, "studio", lambda config, **options: seen.append(options))
    return seen


def test_a_budget_that_is_not_a_number_is_refused() -> None:
    result = agentmap("run", HELLO, "--state", '{"name": "Ada"}', "--budget", "nan")
    assert result.code == 2, result.text
    assert "the budget must be a positive number of US dollars" in result.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "nan"], "the budget must be a positive number of US dollars, got nan"),
        (["--budget", "inf"], "the budget must be a positive number of US dollars, got inf"),
        (["--rate-limit", "9" * 400], "the rate limit must be a finite number above zero, got '999"),
        (
            ["--llm-batch", "--llm-batch-timeout", "nan"],
            "--llm-batch-timeout must be a positive number of seconds, got nan",
        ),
        (["--llm-batch", "--llm-batch-poll", "inf"], "--llm-batch-poll must be a positive number of seconds, got inf"),
        (["--llm-batch", "--llm-batch-retry", "maybe"], "--llm-batch-retry 'maybe': use fail or sync"),
        (["--detach"], "--detach goes with --llm-batch"),
        (["--executor", "process", "--workers", "0"], "the workers must be at least 1, got 0"),
        (["--concurrency", "0"], "the concurrency must be at least 1, got 0"),
    ],
)
def test_a_batch_option_that_is_no_such_value_is_refused_before_any_file_is_touched(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """NaN and infinity are no amount, rate or number of seconds, and 0 workers is not the default: each is refused
    with exit 2, never read as no budget, no limit, waiting forever or every CPU; no output file is started."""
    rows = write(tmp_path / "rows.csv", "name\nAda\n")
    out = tmp_path / "out.csv"
    result = agentmap("batch", HELLO, "-i", rows, "-o", out, *args)
    assert result.code == 2, result.text
    assert result.err.startswith(f"error[usage]: {message}"), result.err
    assert "Traceback" not in result.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("llm:\n  budget: .inf\n", "llm.budget must be a positive number of US dollars, got inf"),
        ("llm:\n  budget: .nan\n", "llm.budget must be a positive number of US dollars, got nan"),
        ("llm:\n  temperature: .nan\n", "model option 'temperature' must be a finite number, got nan"),
        ("llm:\n  cache: {ttl: .inf}\n", 'llm.cache "ttl" must be a positive number of seconds, got inf'),
    ],
)
def test_nan_and_infinity_in_agentmap_yaml_are_refused_not_dropped(tmp_path: Path, config: str, message: str) -> None:
    """YAML spells NaN and infinity (`.nan`, `.inf`); a setting holding one is an error of the workflow that reads it,
    not a setting left out (a budget of `.inf` is no budget one can keep)."""
    write(tmp_path / "agentmap.yaml", config)
    flow = write(
        tmp_path / "ask.csv",
        'GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\ng,Ask,openai,Answer.,"{""model"": '
        '""gpt-4o-mini""}",q,a,\n',
    )
    result = agentmap("validate", flow, cwd=tmp_path, env={"OPENAI_API_KEY": "sk-test"})
    assert result.code == 4, result.text
    assert message in result.text, result.text
    if message.startswith("llm."):  # fixed in the config, not in the node's Context cell
        setting = message.split(" ", 1)[0]
        assert f"fix: fix {setting} in the config file (agentmap.yaml)" in result.text, result.text


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('""budget"": NaN', "Context budget must be a positive number of US dollars, got nan"),
        ('""budget"": Infinity', "Context budget must be a positive number of US dollars, got inf"),
        ('""temperature"": NaN', "model option 'temperature' must be a finite number, got nan"),
    ],
)
def test_nan_and_infinity_in_a_context_cell_are_refused(tmp_path: Path, setting: str, message: str) -> None:
    flow = write(
        tmp_path / "ask.csv",
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
        f'g,Ask,openai,Answer.,"{{""model"": ""gpt-4o-mini"", {setting}}}",q,a,\n',
    )
    result = agentmap("validate", flow, cwd=tmp_path, env={"OPENAI_API_KEY": "sk-test"})
    assert result.code == 4, result.text
    assert message in result.text, result.text
