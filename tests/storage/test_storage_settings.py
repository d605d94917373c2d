"""The `storage` settings: from agentmap.yaml, or from an existing agentmap_config.yaml and its storage file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentmap.config import load_settings
from agentmap.errors import ConfigError

sys.path.insert(0, str(Path(__file__).parents[1] / "cli"))
from cli_helpers import agentmap


def test_an_existing_config_and_its_storage_file_are_read(tmp_path: Path) -> None:
    (tmp_path / "agentmap_config.yaml").write_text(
        'csv_path: "flow.csv"\nstorage_config_path: "conf/agentmap_config_storage.yaml"\n', encoding="utf-8"
    )
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "agentmap_config_storage.yaml").write_text(
        "core:\n  base_directory: agentmap_data/data\n"
        "csv:\n  default_directory: agentmap_data/data/csv\n  collections:\n    users: csv/users.csv\n"
        "json:\n  default_directory: docs\n"
        "file:\n  base_directory: notes\n",
        encoding="utf-8",
    )
    storage = load_settings(cwd=tmp_path).agent_settings()["storage"]
    base = tmp_path / "agentmap_data" / "data"
    assert storage["core"]["base_directory"] == str(base)
    # The existing AgentMap's layout: CSV and JSON files in base_directory itself, each default_directory unused
    assert storage["layout"] == "flat"
    assert storage["csv"]["default_directory"] == str(base)
    assert storage["json"]["default_directory"] == str(base)
    assert storage["csv"]["collections"] == {"users": "csv/users.csv"}
    assert storage["file"]["base_directory"] == str(tmp_path / "notes")  # a folder of its own, not under core


def test_agentmap_yaml_takes_a_storage_section(tmp_path: Path) -> None:
    (tmp_path / "agentmap.yaml").write_text("storage:\n  csv:\n    default_directory: tables\n", encoding="utf-8")
    storage = load_settings(cwd=tmp_path).agent_settings()["storage"]
    assert storage == {"csv": {"default_directory": str(tmp_path / "tables")}}


def test_a_missing_storage_file_leaves_the_default_folders(tmp_path: Path) -> None:
    (tmp_path / "agentmap_config.yaml").write_text('storage_config_path: "gone.yaml"\n', encoding="utf-8")
    assert load_settings(cwd=tmp_path).agent_settings()["storage"] == {}


def test_agentmap_yaml_may_ask_for_a_folder_per_kind_over_an_existing_storage_file(tmp_path: Path) -> None:
    (tmp_path / "agentmap_config.yaml").write_text(
        'storage_config_path: "storage.yaml"\nstorage:\n  layout: kinds\n', encoding="utf-8"
    )
    (tmp_path / "storage.yaml").write_text(
        "core:\n  base_directory: data\ncsv:\n  default_directory: data/csv\n", encoding="utf-8"
    )
    storage = load_settings(cwd=tmp_path).agent_settings()["storage"]
    assert storage["csv"]["default_directory"] == str(tmp_path / "data" / "csv")  # the repeated base not doubled


def test_an_existing_storage_file_without_folders_keeps_that_tools_defaults(tmp_path: Path) -> None:
    (tmp_path / "agentmap_config.yaml").write_text('storage_config_path: "storage.yaml"\n', encoding="utf-8")
    (tmp_path / "storage.yaml").write_text("csv:\n  enabled: true\n", encoding="utf-8")
    storage = load_settings(cwd=tmp_path).agent_settings()["storage"]
    assert storage["core"]["base_directory"] == str(tmp_path / "agentmap_data" / "data")
    assert storage["csv"]["default_directory"] == str(tmp_path / "agentmap_data" / "data")
    assert storage["file"]["base_directory"] == str(tmp_path / "data" / "files")


def test_an_unknown_layout_is_a_config_error_naming_the_file_and_the_choices(tmp_path: Path) -> None:
    config = tmp_path / "agentmap.yaml"
    config.write_text("storage:\n  layout: nested\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(cwd=tmp_path)
    assert caught.value.code == "bad-config"
    assert str(config) in str(caught.value) and "'nested'" in str(caught.value)
    assert "layout: kinds" in (caught.value.hint or "") and "layout: flat" in (caught.value.hint or "")


_FLOW = (
    "GraphName,Node,AgentType,Input_Fields,Output_Field,Success_Next,Failure_Next,Prompt,Context\n"
    "F,Write,csv_writer,data,written,Read,,people,,\n"
    "F,Read,json_reader,,doc,,,settings,,\n"
)


def _project(tmp_path: Path, config_name: str, config: str) -> Path:
    (tmp_path / config_name).write_text(config, encoding="utf-8")
    (tmp_path / "storage.yaml").write_text(
        "core:\n  base_directory: store\ncsv:\n  default_directory: csv\njson:\n  default_directory: json\n",
        encoding="utf-8",
    )
    (tmp_path / "flow.csv").write_text(_FLOW, encoding="utf-8")
    for folder, where in (("store", "flat"), ("store/json", "kinds")):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "settings.json").write_text(json.dumps({"where": where}), encoding="utf-8")
    return tmp_path


def test_an_existing_config_reads_and_writes_where_the_existing_agentmap_did(tmp_path: Path) -> None:
    """Measured with the existing AgentMap 0.9.213 on this storage file: `store/people.csv`, `store/settings.json`."""
    folder = _project(tmp_path, "agentmap_config.yaml", 'storage_config_path: "storage.yaml"\n')
    result = agentmap("run", "flow.csv", "--state", '{"data": {"id": "1"}}', "--json", cwd=folder)
    assert result.code == 0, result.err
    assert (folder / "store" / "people.csv").read_text(encoding="utf-8") == "id\n1\n"
    assert not (folder / "store" / "csv").exists()
    assert json.loads(result.out)["state"]["doc"] == {"where": "flat"}


def test_the_same_folders_in_agentmap_yaml_keep_a_folder_per_kind(tmp_path: Path) -> None:
    config = "storage:\n  core:\n    base_directory: store\n  csv:\n    default_directory: csv\n"
    folder = _project(tmp_path, "agentmap.yaml", config + "  json:\n    default_directory: json\n")
    result = agentmap("run", "flow.csv", "--state", '{"data": {"id": "1"}}', "--json", cwd=folder)
    assert result.code == 0, result.err
    assert (folder / "store" / "csv" / "people.csv").read_text(encoding="utf-8") == "id\n1\n"
    assert json.loads(result.out)["state"]["doc"] == {"where": "kinds"}
