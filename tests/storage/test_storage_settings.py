"""The `storage` settings: from agentmap.yaml, or from an existing agentmap_config.yaml and its storage file."""

from __future__ import annotations

from pathlib import Path

from agentmap.config import load_settings


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
    assert storage["csv"]["default_directory"] == str(base / "csv")  # the repeated base is not doubled
    assert storage["json"]["default_directory"] == str(base / "docs")
    assert storage["csv"]["collections"] == {"users": "csv/users.csv"}
    assert storage["file"]["base_directory"] == str(tmp_path / "notes")  # a folder of its own, not under core


def test_agentmap_yaml_takes_a_storage_section(tmp_path: Path) -> None:
    (tmp_path / "agentmap.yaml").write_text("storage:\n  csv:\n    default_directory: tables\n", encoding="utf-8")
    storage = load_settings(cwd=tmp_path).agent_settings()["storage"]
    assert storage == {"csv": {"default_directory": str(tmp_path / "tables")}}


def test_a_missing_storage_file_leaves_the_default_folders(tmp_path: Path) -> None:
    (tmp_path / "agentmap_config.yaml").write_text('storage_config_path: "gone.yaml"\n', encoding="utf-8")
    assert load_settings(cwd=tmp_path).agent_settings()["storage"] == {}
