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
    "input": [{"default": "guest", "interrupt": True}],
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
}


def test_the_published_schema_is_the_one_the_studio_ships() -> None:
    assert PUBLISHED.read_bytes() == PACKAGED.read_bytes()


def test_every_built_in_type_has_a_schema_and_every_key_is_exercised() -> None:
    defs = json.loads(PACKAGED.read_text(encoding="utf-8"))["$defs"]
    assert sorted(defs) == sorted(EXAMPLES)
    for name, schema in defs.items():
        used = {key for example in EXAMPLES[name] for key in example}
        assert used == set(schema["properties"]) - {"success_field"}, name


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_contexts_the_schema_accepts_validate_cleanly(tmp_path: Path, name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(PACKAGED.read_text(encoding="utf-8"))
    checker = jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})
    for example in EXAMPLES[name]:
        assert list(checker.iter_errors(example)) == []
        context = json.dumps(example).replace('"', '""')
        flow = tmp_path / "flow.csv"
        flow.write_text(
            "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field\n"
            f'T,N,{name},hi {{x}},"{context}",x,y\n'
            "Inner,Hello,echo,,,x,y\n",
            encoding="utf-8",
        )
        errors = [i for i in agentmap.validate(flow, "T") if i.severity == "error"]
        assert errors == [], (name, example)
    if name == "human":
        assert list(checker.iter_errors({"interaction_type": "vote"}))  # and flags what validation warns about
    if name == "store_writer":
        assert list(checker.iter_errors({"namespace": "users"}))  # a writer without its key
