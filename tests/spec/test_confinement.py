"""What a workflow file may reach: its own folder, plus the roots the person running it allows.

Every path a CSV names (a `file:` prompt, a subgraph file, a tool file), every `func:module:function`
and every MCP stdio command is checked when the workflow is validated, before anything is read,
imported or started; `--allow-root`, `paths.allowed_roots` and `AGENTMAP_ALLOWED_ROOTS` widen it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentmap
from agentmap.cli.app import run_cli

ROOTS_VARIABLE = "AGENTMAP_ALLOWED_ROOTS"


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`flow/` (the workflow's folder), `secret.txt` beside it, `other/` with its own code; cwd = tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ROOTS_VARIABLE, raising=False)
    (tmp_path / "flow").mkdir()
    (tmp_path / "secret.txt").write_text("the secret", encoding="utf-8")
    other = tmp_path / "other"
    (other / "custom_agents").mkdir(parents=True)
    (other / "custom_agents" / "spy.py").write_text(
        f"open({str(tmp_path / 'imported.flag')!r}, 'w').close()\n"
        "from agentmap import BaseAgent\n"
        "class SpyAgent(BaseAgent):\n    def process(self, inputs):\n        return 1\n",
        encoding="utf-8",
    )  # imported when a node names its type: the subgraph's Spy node
    (other / "inner.csv").write_text("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Spy,spy,x,y\n")
    return tmp_path


TOOL_HEADER = "GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Tool_Source\n"
TOOL_ROW = 'G,A,tool,"{{""tool"": ""{tool}""}}",{inputs},{output},{source}\n'


def _tool_flow(root: Path, tool: str, source: str, inputs: str = "", output: str = "o") -> Path:
    return _flow(root, TOOL_HEADER + TOOL_ROW.format(tool=tool, inputs=inputs, output=output, source=source))


def _flow(root: Path, body: str) -> Path:
    path = root / "flow" / "flow.csv"
    path.write_text(body, encoding="utf-8")
    return path


def _codes(path: Path | str, **options: object) -> dict[str, tuple[str | None, str]]:
    return {i.code: (i.column, i.message) for i in agentmap.validate(path, **options)}  # type: ignore[arg-type]


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = run_cli([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("reference", ["file:../secret.txt", "file:/etc/hostname", "file:prompts/../../secret.txt"])
def test_a_file_prompt_outside_the_folder_is_refused_at_the_prompt_cell(layout: Path, reference: str) -> None:
    path = _flow(layout, f"GraphName,Node,AgentType,Prompt,Output_Field\nG,A,template,{reference},out\n")
    column, message = _codes(path)["path-outside-roots"]
    assert column == "Prompt" and "outside the folders a workflow may read" in message
    with pytest.raises(agentmap.WorkflowValidationError):
        agentmap.run(path)


def test_allowed_roots_widen_what_a_file_prompt_may_read(
    layout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _flow(layout, "GraphName,Node,AgentType,Prompt,Output_Field\nG,A,template,file:../secret.txt,out\n")
    assert _cli(capsys, "validate", path)[0] == 4
    code, text = _cli(capsys, "run", path, "--allow-root", layout, "--json")
    assert code == 0 and json.loads(text)["state"]["out"] == "the secret"
    (layout / "agentmap.yaml").write_text(f"paths:\n  allowed_roots: [{layout}]\n", encoding="utf-8")
    assert _cli(capsys, "validate", path)[0] == 0
    (layout / "agentmap.yaml").unlink()
    monkeypatch.setenv(ROOTS_VARIABLE, str(layout))
    assert agentmap.run(path).state["out"] == "the secret"


def test_a_subgraph_file_outside_the_folder_is_refused_before_its_code_is_imported(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _flow(
        layout,
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field\nG,Call,graph,{workflow=../other/inner.csv::G},x,y\n",
    )
    code, text = _cli(capsys, "validate", path)
    assert code == 4 and "outside the folders a workflow may use" in text and "--allow-root" in text
    code, _ = _cli(capsys, "run", path, "--state", '{"x": 1}')
    assert code == 4 and not (layout / "imported.flag").exists()
    code, text = _cli(capsys, "run", path, "--state", '{"x": 1}', "--allow-root", layout / "other", "--json")
    assert code == 0, text
    assert (layout / "imported.flag").exists()  # allowed: now its folder's custom agents load


def test_func_module_function_names_only_the_functions_folder_or_allowed_modules(layout: Path) -> None:
    path = _flow(layout, "GraphName,Node,Edge\nG,A,func:os:system\nG,B,\n")
    column, message = _codes(path)["function-not-allowed"]
    assert column == "Edge" and "'os'" in message
    assert "function-not-allowed" not in _codes(path, settings={"functions": {"allowed_modules": ["os"]}})
    (layout / "flow" / "functions").mkdir()
    (layout / "flow" / "functions" / "routes.py").write_text("def pick(state, ok, bad):\n    return 'B'\n")
    _flow(layout, "GraphName,Node,Edge\nG,A,func:routes:pick\nG,B,\n")
    assert [e.name for e in agentmap.run(path).summary] == ["A", "B"]


def test_a_csv_cannot_start_an_arbitrary_mcp_command(layout: Path) -> None:
    cell = "mcp:stdio:sh -c 'touch pwned'"
    path = _flow(
        layout, f'GraphName,Node,AgentType,Context,Output_Field,Tool_Source\nG,A,tool,"{{""tool"": ""x""}}",o,{cell}\n'
    )
    issues = [i for i in agentmap.validate(path) if "does not allow" in i.message]
    assert [i.column for i in issues] == ["Tool_Source"]
    assert "mcp.allowed_commands" in issues[0].message
    allowed = {"mcp": {"allowed_commands": ["sh -c 'touch pwned'"]}}
    assert not [i for i in agentmap.validate(path, settings=allowed) if "does not allow" in i.message]
    named = _flow(
        layout, 'GraphName,Node,AgentType,Context,Output_Field,Tool_Source\nG,A,tool,"{""tool"": ""x""}",o,mcp:notes\n'
    )
    servers = {"mcp": {"servers": {"notes": "python server.py"}}}
    assert not [i for i in agentmap.validate(named, settings=servers) if "does not allow" in i.message]
    assert not (layout / "flow" / "pwned").exists()


def test_tool_files_resolve_against_the_workflow_folder_then_the_working_directory(layout: Path) -> None:
    (layout / "tools").mkdir()
    (layout / "tools" / "calc.py").write_text("def add(a: int, b: int) -> int:\n    'Add.'\n    return a + b\n")
    path = _tool_flow(layout, "add", "tools/calc.py", "a|b", "s")
    assert agentmap.run(path, {"a": 2, "b": 3}).state["s"] == 5
    _tool_flow(layout, "add", "../secret.txt", "a|b", "s")
    codes = {i.column: i.message for i in agentmap.validate(path)}
    assert "outside the allowed tool folders" in codes["Tool_Source"]


def test_a_workflow_from_elsewhere_does_not_import_tools_of_the_working_directory(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (layout / "tools").mkdir()
    flag = layout / "imported.flag"
    tool = f"open({str(flag)!r}, 'w').close()\ndef add(a: int) -> int:\n    'Echo.'\n    return a\n"
    (layout / "tools" / "calc.py").write_text(tool)
    downloads = layout.parent / f"{layout.name}-downloads"
    (downloads / "flow").mkdir(parents=True)
    path = _tool_flow(downloads, "add", "tools/calc.py", "a", "s")
    code, out = _cli(capsys, "validate", path)
    assert code == 4 and "flow.csv:2:Tool_Source" in out and "--allow-root" in out, out
    assert not flag.exists()  # refused before it was imported
    code, out = _cli(capsys, "validate", path, "--allow-root", ".")
    assert code == 0, out
    assert flag.exists()


def test_file_prompts_and_prompt_names_resolve_in_the_prompts_folder(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = layout / "shared_prompts"
    prompts.mkdir()
    (prompts / "hello.txt").write_text("Hello, {name}!", encoding="utf-8")
    (prompts / "registry.yaml").write_text("bye: 'Goodbye, {name}.'\n", encoding="utf-8")
    path = _flow(
        layout,
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        "G,A,template,file:hello.txt,name,greeting,B\nG,B,template,prompt:bye,name,farewell,\n",
    )
    assert "bad-prompt-file" in _codes(path)
    (layout / "agentmap.yaml").write_text(f"paths:\n  prompts: {prompts.name}\n", encoding="utf-8")
    code, text = _cli(capsys, "run", path, "--state", '{"name": "Ada"}', "--json")
    state = json.loads(text)["state"]
    assert code == 0 and (state["greeting"], state["farewell"]) == ("Hello, Ada!", "Goodbye, Ada.")
    _flow(layout, "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nG,B,template,prompt:by,name,f\n")
    code, text = _cli(capsys, "validate", path)
    assert code == 4 and "did you mean 'prompt:bye'?" in text


def test_a_legacy_config_names_the_prompts_folder(layout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (layout / "legacy_prompts").mkdir()
    (layout / "legacy_prompts" / "hi.txt").write_text("Hi, {name}!", encoding="utf-8")
    (layout / "agentmap_config.yaml").write_text("prompts:\n  directory: legacy_prompts\n", encoding="utf-8")
    path = _flow(layout, "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nG,A,template,file:hi.txt,name,g\n")
    code, text = _cli(capsys, "run", path, "--state", '{"name": "Bo"}', "--json")
    assert code == 0 and json.loads(text)["state"]["g"] == "Hi, Bo!"


def test_plain_text_starting_with_prompt_is_not_a_reference(layout: Path) -> None:
    path = _flow(layout, "GraphName,Node,AgentType,Prompt,Output_Field\nG,A,template,Prompt: say hi,out\n")
    assert agentmap.run(path).state["out"] == "Prompt: say hi"


def test_an_assistant_cannot_write_its_decision_log_outside_the_folder(layout: Path) -> None:
    context = '"{""model"": ""offline"", ""decision_log"": ""../evil.db""}"'
    path = _flow(layout, f"GraphName,Node,AgentType,Context,Input_Fields,Output_Field\nG,A,assistant,{context},m,r\n")
    [issue] = [i for i in agentmap.validate(path) if "decision_log" in i.message]
    assert issue.column == "Context" and "outside the allowed folders" in issue.message
    assert not [
        i
        for i in agentmap.validate(path, settings={"paths": {"allowed_roots": [str(layout)]}})
        if i.severity == "error"
    ]
    assert not (layout / "evil.db").exists()


def test_a_path_the_system_cannot_use_is_a_finding_not_a_crash(layout: Path) -> None:
    path = _flow(layout, f"GraphName,Node,AgentType,Prompt,Output_Field\nG,A,template,file:{'x' * 5000},out\n")
    assert [i.code for i in agentmap.validate(path) if i.severity == "error"] == ["bad-prompt-file"]
