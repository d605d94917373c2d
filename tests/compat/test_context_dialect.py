"""Context cells as AgentMap 0.9 files write them: plain text, unquoted keys; and what stays an error."""

from __future__ import annotations

from pathlib import Path

from compat_helpers import cli, write

import agentmap


def test_plain_text_context_is_kept_and_warned_about(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "flow.csv": """
            GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Success_Next,Failure_Next
            G,Start,default,Start node_name,,started,Done,Oops
            G,Done,echo,Success Path,started,done,,
            G,Oops,echo,Failure Path,,,,
            """
        },
    )
    result = cli("validate", tmp_path / "flow.csv")
    assert result.code == 0, result.text
    assert result.out.count("warning[context-plain-text]") == 3
    assert "flow.csv:2:Context" in result.out and "Description column" in result.out
    run = cli("run", tmp_path / "flow.csv", "--json")
    assert run.code == 0 and run.json()["state"]["done"] == {"started": "[Start] DefaultAgent executed"}


def test_unquoted_keys_are_read_as_yaml_with_the_json_spelling_shown(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "flow.csv": """
            GraphName,Node,AgentType,Context,Input_Fields,Output_Field
            G,Ask,input,"{default: Grace, interrupt: false}",,name
            """
        },
    )
    result = cli("validate", tmp_path / "flow.csv")
    assert "warning[context-unquoted-keys]" in result.out
    assert '{"default": "Grace", "interrupt": false}' in result.out
    assert cli("run", tmp_path / "flow.csv", "--json").json()["state"]["name"] == "Grace"


def test_the_warning_names_what_is_unquoted_keys_or_values(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "flow.csv": """
            GraphName,Node,AgentType,Context,Input_Fields,Output_Field
            G,A,echo,"{""provider"": anthropic}",,a
            G,B,echo,"{temperature: 0.2}",,b
            G,C,echo,"{model: gpt}",,c
            """
        },
    )
    found = {i.node: i for i in agentmap.validate(tmp_path / "flow.csv") if i.code == "context-unquoted-keys"}
    assert "has unquoted text values;" in found["A"].message and "quote the text values" in found["A"].fix
    assert "has unquoted keys;" in found["B"].message and "quote the keys" in found["B"].fix
    assert "has unquoted keys and text values;" in found["C"].message


def test_a_brace_that_parses_as_nothing_is_an_error_at_the_cell(tmp_path: Path) -> None:
    write(tmp_path, {"flow.csv": 'GraphName,Node,Context\nG,A,"{a: 1}}"\n'})
    result = cli("validate", tmp_path / "flow.csv")
    assert result.code == 4
    assert "flow.csv:2:Context: error[bad-context]" in result.out
    assert "neither JSON" in result.out and "YAML" in result.out


def test_huge_or_deep_context_is_a_located_error_never_a_crash(tmp_path: Path) -> None:
    deep = "[" * 2000 + "]" * 2000
    long_number = '"{""n"": ' + "9" * 5000 + '}"'
    write(tmp_path, {"flow.csv": f"GraphName,Node,Context\nG,A,{deep}\nG,B,{long_number}\n"})
    issues = agentmap.validate(tmp_path / "flow.csv")  # never raises
    found = [(i.row, i.code) for i in issues if i.severity == "error"]
    assert found == [(2, "bad-context"), (3, "bad-context")]
    assert "nested 2000 levels" in issues[0].message and "5000 digits" in issues[1].message
    result = cli("run", tmp_path / "flow.csv")
    assert result.code == 4 and "Traceback" not in result.text


def test_old_branching_keys_decide_a_missing_value(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "flow.csv": """
            GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Success_Next,Failure_Next
            G,Startup,branching,"{success_field: go, default_result: true}",input|go,decision,Yes,No
            G,Yes,default,,,final,,
            G,No,default,,,final,,
            """
        },
    )
    result = cli("run", tmp_path / "flow.csv", "--json")
    assert result.code == 0, result.text
    assert result.json()["state"]["final"] == "[Yes] DefaultAgent executed"
    assert cli("run", tmp_path / "flow.csv", "--state", '{"go": "no"}', "--json").json()["state"]["final"] == (
        "[No] DefaultAgent executed"
    )
