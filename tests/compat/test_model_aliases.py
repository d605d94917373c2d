"""Old model spellings: agent types gpt/chatgpt/claude/gemini, Context provider/llm_provider, provider.tier."""

from __future__ import annotations

from pathlib import Path

import pytest
from compat_helpers import cli, write

import agentmap


@pytest.mark.parametrize(
    ("alias", "provider"),
    [("gpt", "openai"), ("ChatGPT", "openai"), ("claude", "anthropic"), ("GeminiAgent", "google_genai")],
)
def test_old_type_names_are_the_provider_types(tmp_path: Path, alias: str, provider: str) -> None:
    write(tmp_path, {"f.csv": f"GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Ask,{alias},q,a\n"})
    messages = [i.message for i in agentmap.validate(tmp_path / "f.csv") if i.severity == "error"]
    assert messages and all(f"model {provider}:" in m for m in messages)  # its default model, key/extra missing


def test_an_old_type_runs_on_the_offline_model(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"f.csv": "GraphName,Node,AgentType,Context,Input_Fields,Output_Field\nG,Ask,claude,{model: offline},q,a\n"},
    )
    result = cli("run", tmp_path / "f.csv", "--state", '{"q": "hello"}', "--json")
    assert result.code == 0, result.text
    assert result.json()["state"]["a"]


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (
            '"{""provider"": ""anthropic"", ""model"": ""anthropic.medium"", ""temperature"": 0.3}"',
            "anthropic:claude-sonnet-4-6",
        ),
        ("{llm_provider: claude}", "anthropic:claude-3-5-haiku-latest"),
        ('"{provider: gpt, model: gpt-4.1}"', "openai:gpt-4.1"),
        ("{model: openai.low}", "openai:gpt-4o-mini"),
    ],
)
def test_old_context_keys_name_the_model(tmp_path: Path, context: str, expected: str) -> None:
    write(tmp_path, {"f.csv": f"GraphName,Node,AgentType,Context,Input_Fields,Output_Field\nG,Ask,llm,{context},q,a\n"})
    result = cli("validate", tmp_path / "f.csv")
    assert f"model {expected} needs" in result.out, result.out
    assert "f.csv:2:Context: warning[legacy-spelling]" in result.out and "(AgentMap 0.9) is read as" in result.out


def test_what_cannot_be_mapped_is_a_clear_validation_error(tmp_path: Path) -> None:
    rows = "G,A,llm,{model: anthropic.huge},q,a\nG,B,llm,{provider: mistral},q,b\n"
    write(tmp_path, {"f.csv": "GraphName,Node,AgentType,Context,Input_Fields,Output_Field\n" + rows})
    result = cli("validate", tmp_path / "f.csv")
    assert result.code == 4
    assert (
        "f.csv:2:Context: error[bad-config]: model 'anthropic.huge' reads as an AgentMap 0.9 routing tier" in result.out
    )
    assert "anthropic.low, .medium, .high or .critical" in result.out
    assert "f.csv:3:Context: error[bad-config]" in result.out and "mistral" in result.out
