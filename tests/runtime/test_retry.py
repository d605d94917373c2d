"""Per-node retries and timeouts from Context, run by LangGraph's RetryPolicy."""

from __future__ import annotations

from pathlib import Path

import durable_graphs
import pytest

import agentmap
from agentmap.errors import WorkflowValidationError

HEADER = "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next,Failure_Next\n"
FAST = '""initial_interval"": 0.001'


def _flaky(folder: Path, context: str) -> Path:
    durable_graphs.counter(folder, 1)  # writes the custom agents
    path = folder / "flaky.csv"
    path.write_text(
        HEADER + f'Flaky,Call,flaky,,"{{{context}}}",,out,Done,Bad\n'
        "Flaky,Done,echo,,,out,final,,\nFlaky,Bad,echo,,,errors,final,,\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture(autouse=True)
def side_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TICK_FILE", str(tmp_path / "side.txt"))
    return tmp_path / "side.txt"


def test_a_failing_node_is_retried_and_the_summary_shows_the_attempts(tmp_path: Path) -> None:
    path = _flaky(tmp_path, f'""fails"": 2, ""retry"": {{""max_attempts"": 3, {FAST}}}')
    result = agentmap.run(path)
    assert result.success and result.state["final"] == {"out": "ok"}
    call = result.summary[0]
    assert call.name == "Call" and call.success is True
    assert call.metadata["attempts"] == 3
    assert call.metadata["failed_attempts"] == [
        "ConnectionError: attempt 1 failed",
        "ConnectionError: attempt 2 failed",
    ]


def test_when_the_attempts_run_out_the_node_fails_and_takes_failure_next(tmp_path: Path) -> None:
    path = _flaky(tmp_path, f'""fails"": 9, ""retry"": {{""max_attempts"": 2, {FAST}}}')
    result = agentmap.run(path)
    assert result.success  # the workflow handles the failure: Failure_Next goes on to Bad
    assert [(e.name, e.success, e.handled) for e in result.summary] == [("Call", False, True), ("Bad", True, False)]
    assert result.errors == ["Error in Call: attempt 2 failed"]
    assert (tmp_path / "side.txt").read_text().split() == ["Call", "Call"]


def test_only_the_failures_named_in_on_are_retried(tmp_path: Path) -> None:
    path = _flaky(tmp_path, f'""fails"": 1, ""retry"": {{""max_attempts"": 3, ""on"": [""timeout""], {FAST}}}')
    assert agentmap.run(path).failed_nodes == ["Call"]
    assert (tmp_path / "side.txt").read_text().split() == ["Call"]
    path = _flaky(tmp_path, f'""fails"": 1, ""retry"": {{""max_attempts"": 3, ""on"": [""OSError""], {FAST}}}')
    assert agentmap.run(path).success  # ConnectionError is an OSError


def test_timeout_seconds_bounds_each_attempt_and_timeouts_are_retried(tmp_path: Path) -> None:
    context = (
        f'""sleep"": 2, ""timeout_seconds"": 0.05, ""retry"": {{""max_attempts"": 2, ""on"": [""timeout""], {FAST}}}'
    )
    result = agentmap.run(_flaky(tmp_path, context))
    (call, bad) = result.summary
    assert call.success is False and call.metadata["attempts"] == 2
    assert "took longer than its timeout_seconds (0.05s)" in (call.error or "")
    assert bad.name == "Bad"


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ('""retry"": {""max_attempts"": 0}', "max_attempts must be a whole number >= 1"),
        ('""retry"": {""tries"": 3}', "unknown key(s) tries"),
        ('""retry"": ""often""', 'Context "retry" must be an object'),
        ('""timeout_seconds"": -1', "must be a positive number of seconds"),
        ('""timeout_seconds"": NaN', "must be a positive number of seconds, not nan"),
        ('""timeout_seconds"": Infinity', "must be a positive number of seconds, not inf"),
        ('""retry"": {""backoff"": NaN}', "backoff must be a number >= 0, not nan"),
    ],
)
def test_bad_retry_settings_are_validation_errors_at_the_context_cell(
    tmp_path: Path, context: str, message: str
) -> None:
    with pytest.raises(WorkflowValidationError) as caught:
        agentmap.compile(_flaky(tmp_path, context))
    (issue,) = caught.value.issues
    assert issue.code == "bad-config" and message in issue.message
    assert (issue.row, issue.column) == (2, "Context")


def test_the_terminal_summary_shows_the_attempts(tmp_path: Path) -> None:
    from rich.console import Console

    from agentmap.cli.render import summary_table

    result = agentmap.run(_flaky(tmp_path, f'""fails"": 1, ""retry"": {{""max_attempts"": 2, {FAST}}}'))
    console = Console(width=120, record=True, color_system=None)
    console.print(summary_table(result.summary))
    assert "ok (after 2 attempts)" in console.export_text()
