"""Where a storage node's file lives (agentmap/storage/_paths.py): the storage folders, never outside."""

from __future__ import annotations

from pathlib import Path

import pytest
from storage_helpers import environment

from agentmap.cli.app import run_cli
from agentmap.spec.paths import OutsideRootsError
from agentmap.storage._paths import locate


def test_a_name_resolves_under_data_beside_the_workflow_with_its_suffix(tmp_path: Path) -> None:
    env = environment(tmp_path)
    assert locate("csv", "people", env).path == tmp_path / "data" / "people.csv"
    assert locate("json", "sub/doc", env).path == tmp_path / "data" / "sub" / "doc.json"
    assert locate("file", "notes", env).path == tmp_path / "data" / "notes"
    assert locate("csv", "list.txt", env).path == tmp_path / "data" / "list.txt"


def test_a_path_that_already_names_the_storage_folder_is_not_doubled(tmp_path: Path) -> None:
    assert locate("csv", "data/goals.csv", environment(tmp_path)).path == tmp_path / "data" / "goals.csv"
    assert locate("csv", "./data/goals.csv", environment(tmp_path)).path == tmp_path / "data" / "goals.csv"


@pytest.mark.parametrize("text", ["../people.csv", "data/../../x.csv", "/etc/passwd", "~/x.csv"])
def test_a_path_outside_the_storage_folders_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(OutsideRootsError):
        locate("csv", text, environment(tmp_path))


def test_a_file_beside_the_workflow_but_outside_data_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutsideRootsError):
        locate("csv", "data/../workflow.csv", environment(tmp_path))


def test_a_symlink_out_of_the_storage_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    outside = tmp_path / "secret"
    outside.mkdir()
    (tmp_path / "data" / "link").symlink_to(outside)
    with pytest.raises(OutsideRootsError):
        locate("csv", "link/x.csv", environment(tmp_path))


def test_configured_folders_base_directory_and_collections(tmp_path: Path) -> None:
    storage = {
        "core": {"base_directory": str(tmp_path / "store")},
        "csv": {
            "default_directory": "tables",
            "collections": {"users": "tables/users.csv", "orders": {"path": "o.csv"}},
        },
        "json": {"default_directory": str(tmp_path / "elsewhere")},
    }
    env = environment(tmp_path, storage)
    assert locate("csv", "x", env).path == tmp_path / "store" / "tables" / "x.csv"
    assert locate("csv", "users", env).path == tmp_path / "store" / "tables" / "users.csv"
    assert locate("csv", "orders", env).path == tmp_path / "store" / "tables" / "o.csv"
    assert locate("json", "doc", env).path == tmp_path / "elsewhere" / "doc.json"
    assert locate("file", "f.txt", env).path == tmp_path / "store" / "file" / "f.txt"  # base_directory/<kind>
    # an absolute path inside any configured root is fine; the workflow folder itself is not a root
    assert locate("csv", str(tmp_path / "elsewhere" / "y.csv"), env).path == tmp_path / "elsewhere" / "y.csv"
    with pytest.raises(OutsideRootsError):
        locate("csv", str(tmp_path / "data" / "y.csv"), env)


def test_file_base_directory_is_the_file_folder_not_under_the_core_one(tmp_path: Path) -> None:
    # the existing AgentMap's file reader and writer keep files in file.base_directory, whatever core's is
    storage = {"core": {"base_directory": "store"}, "file": {"base_directory": "notes"}, "csv": {"base_directory": "x"}}
    env = environment(tmp_path, storage)
    assert locate("file", "a.txt", env).path == tmp_path / "notes" / "a.txt"
    assert locate("csv", "t", env).path == tmp_path / "store" / "csv" / "t.csv"  # its service never read that key


def test_an_empty_name_says_where_to_put_the_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Prompt"):
        locate("csv", "  ", environment(tmp_path))


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = run_cli([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_data_folder_linked_out_of_the_workflow_folder_is_refused_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTMAP_ALLOWED_ROOTS", raising=False)
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (elsewhere / "secrets.csv").write_text("k\nthe secret\n", encoding="utf-8")
    (project / "data").symlink_to(elsewhere)  # a repository shipping `data -> /elsewhere`
    flow = project / "flow.csv"
    flow.write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        "G,Read,csv_reader,secrets.csv,,rows,Write\n"
        "G,Write,file_writer,planted.txt,rows,done,\n",
        encoding="utf-8",
    )
    code, out = _cli(capsys, "validate", flow)
    assert code == 4 and "flow.csv:2:Prompt" in out and "flow.csv:3:Prompt" in out, out
    assert "symbolic link" in out and "--allow-root" in out
    code, out = _cli(capsys, "run", flow, "--json")
    assert code != 0 and not (elsewhere / "planted.txt").exists()
    assert "the secret" not in out
    code, out = _cli(capsys, "run", flow, "--allow-root", "elsewhere", "--json")
    assert code == 0, out
    assert "the secret" in (elsewhere / "planted.txt").read_text()  # named by the person running it: allowed


def test_a_data_folder_linked_inside_the_workflow_folder_is_fine(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "data").symlink_to(tmp_path / "real")
    assert locate("csv", "x", environment(tmp_path)).path == tmp_path / "real" / "x.csv"
