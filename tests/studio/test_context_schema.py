"""The JSON Schema of each built-in agent type's Context: published, and true to what validation accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentmap

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = ROOT / "agentmap" / "studio" / "static" / "context.schema.json"
PUBLISHED = ROOT / "csv_specs" / "schema" / "context.schema.json"

EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "default": [{}],
    "echo": [{}],
    "template": [{}],
    "success": [{}],
    "failure": [{}],
    "branching": [{"field": "x", "success_values": ["yes"], "failure_values": ["no"], "default_result": False}],
    "input": [{"default": "guest", "interrupt": True}, {"interrupt": False}],
    "summary": [{"format": "{key}={value}", "separator": "; "}],
    "graph": [{"workflow": "::Inner"}, {"graph": "::Inner"}],
    "human": [
        {"interaction_type": "choice", "options": ["a", "b"], "timeout_seconds": 30, "default_option": "a"},
        {"interaction_type": "approval", "default_action": "approve", "on_reject": "fail"},
    ],
    "suspend": [{"reason": "the payment", "external_ref": "invoice 42"}],
    "csv_reader": [
        {"format": "dict", "id_field": "ticket", "encoding": "utf-8", "collection": "rows.csv", "default": []},
        {"document_id": "7", "query": {"status": "open"}},
    ],
    "csv_writer": [{"mode": "update", "id_field": "ticket", "encoding": "utf-8", "collection": "rows.csv"}],
    "json_reader": [
        {"format": "dict", "document_id": "a", "id_field": "name", "path": "settings.theme", "encoding": "utf-8"},
        {"collection": "docs.json", "default": {}},
    ],
    "json_writer": [{"mode": "write", "document_id": 3, "id_field": "id", "encoding": "utf-8", "collection": "d.json"}],
    "file_reader": [
        {"should_split": True, "chunk_size": 500, "chunk_overlap": 50, "format": "structured", "encoding": "utf-8"},
        {"collection": "notes.txt", "default": ""},
    ],
    "file_writer": [{"mode": "write", "encoding": "utf-8", "collection": "out.txt"}],
    "store_reader": [
        {"namespace": ["users", "{x}"], "key": "profile", "default": {}},
        {"namespace": "a.b", "limit": 5},
    ],
    "store_writer": [{"namespace": "users.{x}", "key": "profile"}],
    "llm": [
        {"model": "offline", "prompt_role": "user", "memory_key": "chat", "max_memory_messages": 4, "budget": 0.5},
        {"model": "offline", "max_iterations": 3, "conversation_id": "c1", "prompt_role": "system"},
    ],
    "openai": [{"model": "offline"}],
    "anthropic": [{"model": "offline"}],
    "google": [{"model": "offline"}],
    "ollama": [{"model": "offline"}],
    "offline": [{}],
    "gpt": [{"model": "offline"}],
    "chatgpt": [{"model": "offline"}],
    "claude": [{"model": "offline"}],
    "gemini": [{"model": "offline"}],
    "assistant": [
        {
            "model": "offline",
            "max_iterations": 2,
            "include_history_messages": 0,
            "confirm_tools": ["add"],
            "decision_log": "d.db",
        },
        {
            "model": "offline",
            "confirm_tools": "add|sub",
            "decision_log": False,
            "conversation_id": "c",
            "fail_on_error": True,
        },
    ],
    "tool": [{"tool": "add", "arguments": {"b": 1}, "idempotent": True}],
    "orchestrator": [
        {
            "planner": "Plan",
            "workers": ["Work"],
            "max_retries": 0,
            "retry_delay": 0.5,
            "max_retry_delay": 2,
            "on_failure": "stop",
            "step_timeout_seconds": 3,
            "max_concurrent": 2,
            "profiles": {"strict": {"max_api_calls": 5}},
        },
        {"nodes": "Work|Plan", "default_target": "Work", "matching_strategy": "words", "confidence_threshold": 0.5},
    ],
    "planner": [
        {"steps": [{"tool": "add", "inputs": {"a": 1, "b": 2}}]},
        {"rules": [{"keywords": ["x"], "steps": []}]},
    ],
    "llm_planner": [{"model": "offline", "workers": ["Work"]}, {"model": "offline", "tools": {"add": "adds"}}],
    "worker": [{}],
    # the keys several types share, each tried on one of them
    "node-keys": [
        {
            "retry": {
                "max_attempts": 2,
                "backoff": 1,
                "initial_interval": 0,
                "max_interval": 1,
                "jitter": True,
                "on": ["timeout"],
            },
            "timeout_seconds": 5,
        },
        {"retry": 3},
    ],
    "model-keys": [
        {"model": "offline", "temperature": 0, "max_tokens": 100, "timeout": 10, "base_url": "http://127.0.0.1:1/v1"},
        {"model": "offline", "max_retries": 0, "api_key_env": "STUDIO_TEST_KEY", "prompt_cache": False},
    ],
    "tool-keys": [{"tool_timeout": 2.5, "user_id": "ada"}],
    "request-keys": [
        {
            "goal": "add",
            "task": "t",
            "expected_output": "a number",
            "constraints": {"max_api_calls": 5},
            "profile": "p",
        },
        {"priority": 9, "tags": {"team": "a"}, "trace_id_field": "trace", "fail_on": ["error", "partial"]},
        {"fail_on": "partial"},
    ],
}
SHARED_ON = {"node-keys": "echo", "model-keys": "llm", "tool-keys": "tool", "request-keys": "worker"}
"""The type each shared entry's examples are tried on."""

TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''


def test_the_published_schema_is_the_one_the_studio_ships() -> None:
    assert PUBLISHED.read_bytes() == PACKAGED.read_bytes()


def _keys(defs: dict[str, Any], name: str) -> tuple[set[str], set[str]]:
    """The keys an entry lists itself, and those it takes from the shared entries (another name: its type's)."""
    schema = defs[name]
    if "$ref" in schema:
        own, shared = _keys(defs, schema["$ref"].split("/")[-1])
        return set(), own | shared
    shared = {key for part in schema.get("allOf", []) for key in defs[part["$ref"].split("/")[-1]]["properties"]}
    return set(schema["properties"]) - {"success_field"}, shared


def test_every_built_in_type_has_a_schema_and_every_key_is_exercised() -> None:
    defs = json.loads(PACKAGED.read_text(encoding="utf-8"))["$defs"]
    assert sorted(defs) == sorted(EXAMPLES)
    for name in defs:
        used = {key for example in EXAMPLES[name] for key in example}
        own, shared = _keys(defs, name)
        assert own <= used, (name, own - used)
        assert used <= own | shared, (name, used - own - shared)


def test_every_built_in_agent_type_has_a_schema() -> None:
    """A new built-in type cannot be forgotten: every type AgentMap ships (the registry's) has its entry."""
    defs = json.loads(PACKAGED.read_text(encoding="utf-8"))["$defs"]
    built_in = {  # other tests may have registered their own types (some not loaded yet): not AgentMap's
        name
        for name in agentmap.registry.names()
        if getattr(agentmap.registry.get(name), "__module__", "").startswith("agentmap.")
    }
    assert {"llm", "tool", "orchestrator", "planner", "worker", "assistant"} <= built_in
    assert sorted(built_in - set(defs)) == []


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_contexts_the_schema_accepts_validate_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("STUDIO_TEST_KEY", "a key")  # the variable api_key_env names
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(PACKAGED.read_text(encoding="utf-8"))
    checker = jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    agent_type = SHARED_ON.get(name, name)
    for example in EXAMPLES[name]:
        assert list(checker.iter_errors(example)) == []
        given = {**EXAMPLES[agent_type][0], **example} if name in SHARED_ON else example
        context = json.dumps(given).replace('"', '""')
        output = "y|" + given["memory_key"] if "memory_key" in given else "y"
        flow = tmp_path / "flow.csv"
        flow.write_text(
            "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Tool_Source\n"
            f'T,N,{agent_type},hi {{x}},"{context}",x,{output},tools.py\n'
            'T,Plan,planner,,"{""steps"": [{""tool"": ""add""}]}",goal,plan,\n'
            "T,Work,worker,,,,,tools.py\n"
            "Inner,Hello,echo,,,x,y,\n",
            encoding="utf-8",
        )
        errors = [i for i in agentmap.validate(flow, "T") if i.severity == "error"]
        assert errors == [], (name, example, errors)
    if name == "human":
        assert list(checker.iter_errors({"interaction_type": "vote"}))  # and flags what validation warns about
    if name == "store_writer":
        assert list(checker.iter_errors({"namespace": "users"}))  # a writer without its key
    if name == "node-keys":  # and what validation refuses
        for wrong in ({"retry": 0}, {"retry": {"tries": 2}}, {"retry": {"on": [""]}}, {"timeout_seconds": 0}):
            assert list(checker.iter_errors(wrong)), wrong
    if name == "orchestrator":
        assert list(checker.iter_errors({"planner": "Plan"}))  # an orchestrator without workers
    if name == "llm":
        assert list(checker.iter_errors({"prompt_role": "assistant"}))
        assert list(checker.iter_errors({"budget": 0}))
