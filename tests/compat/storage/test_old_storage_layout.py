"""An existing `agentmap_config_storage.yaml` (named by `storage_config_path`) keeps the existing AgentMap's layout.

There the CSV and JSON storage services are built with `core.base_directory` as their folder, so a Prompt
`users` is `<base_directory>/users.csv` whatever `csv.default_directory` says; only a configured CSV collection
(`collections: {name: {filename: ...}}`) lives under `<base_directory>/<csv.default_directory>/`. The file
reader and writer use `file.base_directory` (default `data/files`). The `storage` section of agentmap.yaml
keeps AgentMap's own layout (`<base_directory>/<kind>/`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "cli"))
from cli_helpers import agentmap, write

WORKFLOW = """GraphName,Node,AgentType,Input_Fields,Output_Field,Success_Next,Failure_Next,Prompt,Context
Flow,Add,csv_writer,id|name,added,List,,users,
Flow,List,csv_reader,,rows,Log,,users,
Flow,Log,json_writer,name,logged,Team,,audit,
Flow,Team,csv_writer,id|name,team_added,Note,,team,
Flow,Note,file_writer,name,noted,,,welcome.txt,
"""

OLD_STORAGE = """core:
  base_directory: "data"
csv:
  enabled: true
  default_directory: "csv"
  auto_create_files: true
  collections:
    team:
      filename: "people.csv"
json:
  enabled: true
  default_directory: "json"
"""


def _run(folder: Path) -> dict[str, object]:
    out = agentmap("run", "flow.csv", "--json", "--state", json.dumps({"id": "1", "name": "Ada"}), cwd=folder)
    assert out.code == 0, out.text
    document = json.loads(out.out)
    assert document["success"] is True, document
    return dict(document["state"])


def test_old_storage_keys_keep_the_old_layout(tmp_path: Path) -> None:
    write(tmp_path / "flow.csv", WORKFLOW)
    write(tmp_path / "agentmap_config.yaml", 'storage_config_path: "agentmap_config_storage.yaml"\n')
    write(tmp_path / "agentmap_config_storage.yaml", OLD_STORAGE)
    state = _run(tmp_path)
    assert (tmp_path / "data" / "users.csv").read_text(encoding="utf-8") == "id,name\n1,Ada\n"
    assert not (tmp_path / "data" / "csv" / "users.csv").exists()
    assert state["rows"] == [{"id": "1", "name": "Ada"}]
    assert json.loads((tmp_path / "data" / "audit.json").read_text(encoding="utf-8")) == ["Ada"]
    assert (tmp_path / "data" / "csv" / "people.csv").read_text(encoding="utf-8") == "id,name\n1,Ada\n"
    assert (tmp_path / "data" / "files" / "welcome.txt").read_text(encoding="utf-8") == "Ada"


def test_an_old_storage_file_without_core_uses_the_old_default_base(tmp_path: Path) -> None:
    write(tmp_path / "flow.csv", WORKFLOW.replace(",team,", ",users,"))
    write(tmp_path / "agentmap_config.yaml", 'storage_config_path: "storage.yaml"\n')
    write(tmp_path / "storage.yaml", "csv:\n  default_directory: csv\n")
    _run(tmp_path)
    base = tmp_path / "agentmap_data" / "data"
    assert (base / "users.csv").read_text(encoding="utf-8") == "id,name\n1,Ada\n1,Ada\n"
    assert json.loads((base / "audit.json").read_text(encoding="utf-8")) == ["Ada"]


def test_agentmap_yaml_storage_keeps_a_folder_per_kind(tmp_path: Path) -> None:
    write(tmp_path / "flow.csv", WORKFLOW)
    body = "".join("  " + line + "\n" for line in OLD_STORAGE.splitlines())
    write(tmp_path / "agentmap.yaml", "storage:\n" + body)
    _run(tmp_path)
    assert (tmp_path / "data" / "csv" / "users.csv").read_text(encoding="utf-8") == "id,name\n1,Ada\n"
    assert json.loads((tmp_path / "data" / "json" / "audit.json").read_text(encoding="utf-8")) == ["Ada"]
    assert (tmp_path / "data" / "csv" / "team.csv").read_text(encoding="utf-8") == "id,name\n1,Ada\n"
    assert (tmp_path / "data" / "file" / "welcome.txt").read_text(encoding="utf-8") == "Ada"
