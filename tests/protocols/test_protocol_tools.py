"""A served graph as a tool (`agentmap/protocols/_tools.py`): the listing csv_specs/mcp.md shows, argument checks
and the form that answers a paused node's question."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentmap.agents.questions import AnswerError, check_answer, question
from agentmap.errors import ConfigError
from agentmap.protocols._tools import (
    ArgumentError,
    answer_from_form,
    answer_schema,
    check_arguments,
    describe,
    input_schema,
)
from agentmap.server._graphs import Assistants

DOC = (Path(__file__).resolve().parents[2] / "csv_specs" / "mcp.md").read_text(encoding="utf-8")


def test_the_documented_workflow_is_listed_as_the_documentation_shows(tmp_path: Path) -> None:
    (csv,) = re.findall(r"```csv\n(.*?)```", DOC, re.S)
    listed = json.loads(next(b for b in re.findall(r"```json\n(.*?)```", DOC, re.S) if '"Quote"' in b))
    (tmp_path / "quote.csv").write_text(csv, encoding="utf-8")
    (quote,) = Assistants.load([tmp_path / "quote.csv"], None).all
    assert {"name": quote.graph_id, "description": describe(quote), "inputSchema": input_schema(quote)} == listed


def test_an_input_model_that_is_not_a_pydantic_model_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "custom_agents").mkdir()
    agent = "from agentmap import BaseAgent\n\n\nclass OddAgent(BaseAgent):\n    input_model = dict\n"
    (tmp_path / "custom_agents" / "odd.py").write_text(agent, encoding="utf-8")
    (tmp_path / "odd.csv").write_text("GraphName,Node,AgentType,Input_Fields\nOdd,Go,odd,x\n", encoding="utf-8")
    (odd,) = Assistants.load([tmp_path / "odd.csv"], None).all
    with pytest.raises(ConfigError, match="OddAgent: input_model must be a pydantic model class") as caught:
        input_schema(odd)
    assert caught.value.code == "bad-config"


def test_arguments_are_checked_against_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"qty": {"type": "integer"}, "note": {"type": "string", "default": ""}},
        "required": ["qty"],
    }
    assert check_arguments("Quote", schema, {"qty": 2}) == {"qty": 2, "note": ""}
    assert check_arguments("Quote", schema, {"qty": 2, "note": "x"}) == {"qty": 2, "note": "x"}
    with pytest.raises(ArgumentError, match="argument 'qty': 'two' is not of type 'integer'"):
        check_arguments("Quote", schema, {"qty": "two"})
    with pytest.raises(ArgumentError, match="missing required argument 'qty'"):
        check_arguments("Quote", schema, {"note": "x"})


@pytest.mark.parametrize(
    ("asked", "form", "answer"),
    [
        (question("R", "human", "Publish?", interaction="approval"), {"approved": False}, False),
        (question("R", "human", "Publish?", interaction="approval"), {"approved": "no"}, False),  # not bool("no")
        (question("R", "human", "Publish?", interaction="approval"), {"approved": "false"}, False),
        (question("R", "human", "Publish?", interaction="approval"), {"approved": "yes"}, True),
        (question("R", "suspend", "Wait", interaction="event"), {"answer": "true"}, "true"),  # words stay text
        (question("R", "human", "Which?", interaction="choice", options=[1, 2]), {"answer": "2"}, 2),
        (question("R", "human", "Why?", interaction="text_input"), {"answer": "because"}, "because"),
        (question("R", "suspend", "Wait", interaction="event"), {"answer": '{"paid": true}'}, {"paid": True}),
        (question("R", "suspend", "Wait", interaction="event"), {"answer": "paid"}, "paid"),
    ],
)
def test_a_filled_in_form_answers_the_question(asked: dict[str, Any], form: dict[str, Any], answer: object) -> None:
    schema = answer_schema(asked)
    assert schema["required"] == list(form)
    checked = check_answer(asked, answer_from_form(asked, form))
    assert (checked["approved"] if isinstance(checked, dict) and "approved" in checked else checked) == answer


@pytest.mark.parametrize("value", ["maybe", 1, None])
def test_a_form_value_that_is_neither_yes_nor_no_is_refused(value: object) -> None:
    asked = question("R", "human", "Publish?", interaction="approval")
    with pytest.raises(AnswerError, match="neither yes nor no"):
        check_answer(asked, answer_from_form(asked, {"approved": value}))


def test_a_choice_form_lists_the_options() -> None:
    asked = question("R", "human", "Which?", interaction="choice", options=["tea", "cake"], default="tea")
    assert answer_schema(asked)["properties"]["answer"] == {
        "type": "string",
        "title": "Answer",
        "description": "Which?",
        "enum": ["tea", "cake"],
        "default": "tea",
    }


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ('["qty"]', 'Context "schema" must be an object of state keys to JSON types'),
        ('{"size": "integer"}', "Context \"schema\" types 'size', which the node does not read (Input_Fields: qty)"),
        ('{"qty": "int"}', "Context \"schema\": the type of 'qty' must be one of string, integer"),
        ('{"qty": {"type": "decimal"}}', "Context \"schema\": the type of 'qty' must be one of"),
    ],
)
def test_validate_reports_a_bad_schema_at_its_context_cell(tmp_path: Path, schema: str, message: str) -> None:
    import agentmap

    context = json.dumps({"schema": json.loads(schema)}).replace('"', '""')
    flow = tmp_path / "flow.csv"
    flow.write_text(f'GraphName,Node,AgentType,Context,Input_Fields\nQ,Echo,echo,"{context}",qty\n', encoding="utf-8")
    (issue,) = agentmap.validate(flow)
    assert (issue.code, issue.column, issue.row) == ("bad-config", "Context", 2)
    assert issue.message.startswith(message), issue.message


def test_a_graph_whose_input_node_reads_the_terminal_is_not_offered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from agentmap.errors import WorkflowFileError
    from agentmap.protocols.mcp import McpGraphs

    flow = tmp_path / "flow.csv"
    flow.write_text(
        "GraphName,Node,AgentType,Prompt,Context,Output_Field\n"
        "Ask,Name,input,Your name?,,name\n"
        'Paused,Name,input,Your name?,"{""interrupt"": true}",name\n',
        encoding="utf-8",
    )
    graphs = McpGraphs(Assistants.load([flow], "memory"))
    assert [a.graph_id for a in graphs.assistants.all] == ["Paused"] and graphs.pausing == {"Paused"}
    assert "graph 'Ask' is not offered: its input node 'Name' reads the terminal" in caplog.text
    with pytest.raises(WorkflowFileError, match="no graph to offer as an MCP tool"):
        McpGraphs(Assistants.load([f"{flow}::Ask"], None))
