"""csv_specs/schema/agentmap.schema.json is the JSON Schema of `Settings`, the model that checks agentmap.yaml.

Regenerate it after changing a setting: `python tests/test_config_schema.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentmap.config import Settings

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "csv_specs" / "schema" / "agentmap.schema.json"


def schema() -> dict[str, Any]:
    """The schema editors read: Settings' own, as a 2020-12 document titled for the file it checks."""
    generated = Settings.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agentmap.yaml",
        "description": "AgentMap's configuration file (csv_specs/cli.md#configuration).",
        **{k: v for k, v in generated.items() if k not in ("title", "description")},
    }


def text() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


def test_the_published_schema_is_the_settings_model() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == text(), "regenerate it: python tests/test_config_schema.py"


def test_the_schema_accepts_the_documented_file_and_refuses_a_misspelled_key() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    checker = jsonschema.Draft202012Validator(schema())
    good = {"workflow": "flow.csv", "paths": {"functions": "functions"}, "execution": {"success_policy": "final_node"}}
    assert list(checker.iter_errors(good)) == []
    Settings.model_validate(good)  # and the model agrees
    bad = {"execution": {"succes_policy": "final_node"}}
    assert [e.message for e in checker.iter_errors(bad)] == [
        "Additional properties are not allowed ('succes_policy' was unexpected)"
    ]
    with pytest.raises(ValueError):
        Settings.model_validate(bad)


if __name__ == "__main__":
    SCHEMA.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA.write_text(text(), encoding="utf-8")
    print(f"wrote {SCHEMA}")
