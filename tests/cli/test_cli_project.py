"""`agentmap init` and `agentmap scaffold`: new files, runnable at once, nothing overwritten without --force."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import agentmap, write

_NEEDS_STUBS = (
    "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next,Description\n"
    "Trip,Plan,Weather Lookup,city,forecast,func:pick_route,,,Looks up the weather\n"
    "Trip,Pack,packer,forecast,bag|shoes,,Done,func:recover,\n"
    "Trip,Done,echo,bag,result,,,,\n"
)


def test_init_makes_a_project_that_runs_straight_away(tmp_path: Path) -> None:
    project = tmp_path / "demo"
    created = agentmap("init", project)
    assert created.code == 0, created.text
    for name in ("agentmap.yaml", "workflow.csv", "custom_agents/greeter.py", "functions/choose_next.py"):
        assert (project / name).is_file(), name
    anonymous = agentmap("run", cwd=project)  # the first command init suggests: no error, no warning
    assert anonymous.code == 0 and "warning" not in anonymous.err, anonymous.err
    assert json.loads(anonymous.out)["state"]["message"].startswith("Hello, world!")
    named = agentmap("run", "--state", '{"name": "Ada"}', cwd=project)
    assert json.loads(named.out)["state"]["message"] == "Hello, Ada! Welcome back."
    assert agentmap("validate", "workflow.csv", cwd=project).code == 0


def test_init_keeps_existing_files_unless_forced(tmp_path: Path) -> None:
    mine = write(tmp_path / "workflow.csv", "GraphName,Node\nMine,A\n")
    again = agentmap("init", tmp_path)
    assert again.code == 0
    assert "kept    workflow.csv" in again.out and "--force" in again.out
    assert mine.read_text() == "GraphName,Node\nMine,A\n"
    assert (tmp_path / "agentmap.yaml").is_file()  # the missing files were still written
    forced = agentmap("init", tmp_path, "--force")
    assert forced.code == 0 and "Starter" in mine.read_text()


def test_init_into_a_file_is_a_usage_error(tmp_path: Path) -> None:
    file = write(tmp_path / "taken", "x")
    result = agentmap("init", file)
    assert result.code == 2 and "is a file, not a folder" in result.err and "Traceback" not in result.text


def test_scaffold_writes_stubs_that_validate_and_run(tmp_path: Path) -> None:
    csv = write(tmp_path / "trip.csv", _NEEDS_STUBS)
    assert agentmap("validate", csv).code == 4
    result = agentmap("scaffold", csv, cwd=tmp_path)
    assert result.code == 0, result.text
    weather = tmp_path / "custom_agents" / "weather_lookup.py"
    packer = tmp_path / "custom_agents" / "packer.py"
    for stub in (weather, packer, tmp_path / "functions" / "pick_route.py", tmp_path / "functions" / "recover.py"):
        assert stub.is_file(), result.out
    text = weather.read_text()
    assert "@agentmap.agent('Weather Lookup')" in text and "class WeatherLookupAgent" in text
    assert "Looks up the weather" in text and "def process" in text
    assert "'bag'" in packer.read_text() and "'shoes'" in packer.read_text()
    pick_route = (tmp_path / "functions" / "pick_route.py").read_text()
    assert "def pick_route(" in pick_route
    assert agentmap("validate", csv, cwd=tmp_path).code == 0
    run = agentmap("run", csv, "--state", '{"city": "Oslo"}', cwd=tmp_path)
    assert run.code == 0, run.err
    assert json.loads(run.out)["state"]["forecast"].startswith("Plan received")


def test_scaffold_never_overwrites_without_force(tmp_path: Path) -> None:
    csv = write(tmp_path / "trip.csv", _NEEDS_STUBS)
    mine = write(tmp_path / "functions" / "pick_route.py", "# my router, not finished\n")
    result = agentmap("scaffold", csv, cwd=tmp_path)
    assert "kept    functions/pick_route.py" in result.out
    assert mine.read_text() == "# my router, not finished\n"
    forced = agentmap("scaffold", csv, "--force", cwd=tmp_path)
    assert forced.code == 0 and "def pick_route(" in mine.read_text()


def test_scaffold_when_everything_is_known() -> None:
    result = agentmap("scaffold", "graphs/custom_router.csv")
    assert result.code == 0
    assert "Nothing to scaffold" in result.out


def test_scaffold_uses_the_configured_folders(tmp_path: Path) -> None:
    csv = write(tmp_path / "flows" / "trip.csv", _NEEDS_STUBS)
    write(tmp_path / "agentmap.toml", '[paths]\ncustom_agents = "code/agents"\nfunctions = "code/routers"\n')
    result = agentmap("scaffold", csv, cwd=tmp_path)
    assert result.code == 0, result.text
    assert (tmp_path / "code" / "agents" / "packer.py").is_file()
    assert (tmp_path / "code" / "routers" / "recover.py").is_file()
    assert not (tmp_path / "flows" / "custom_agents").exists()
    run = agentmap("run", csv, "--state", '{"city": "Oslo"}', cwd=tmp_path)
    assert run.code == 0, run.err


def test_scaffold_lists_module_routers_and_offers_the_graph_nodes_to_a_bare_router(tmp_path: Path) -> None:
    csv = write(
        tmp_path / "flow.csv",
        "GraphName,Node,AgentType,Edge\n"
        "G,Start,echo,func:choose\n"
        "G,Left,echo,func:no_such_module_xyz:decide\n"
        "G,Right,echo,\n",
    )
    result = agentmap("scaffold", csv, cwd=tmp_path)
    assert result.code == 0, result.text
    assert "skipped func:no_such_module_xyz:decide (node 'Left')" in result.out
    assert not list((tmp_path / "functions").glob("decide*"))
    choose = (tmp_path / "functions" / "choose.py").read_text()
    assert "Nodes it may want: Left, Right." in choose


def test_scaffold_one_graph_and_bad_targets(tmp_path: Path) -> None:
    csv = write(tmp_path / "two.csv", "GraphName,Node,AgentType\nA,One,alpha_type\nB,Two,beta_type\n")
    result = agentmap("scaffold", f"{csv}::B", cwd=tmp_path)
    assert result.code == 0, result.text
    assert [p.name for p in (tmp_path / "custom_agents").iterdir()] == ["beta_type.py"]
    unknown = agentmap("scaffold", f"{csv}::C", cwd=tmp_path)
    assert unknown.code == 3 and "has no graph 'C'" in unknown.err
    missing = agentmap("scaffold", tmp_path / "nope.csv", cwd=tmp_path)
    assert missing.code == 3 and "does not exist" in missing.err
    for bad in (unknown, missing):
        assert "Traceback" not in bad.text


def test_every_workflow_command_defaults_to_the_configured_workflow(tmp_path: Path) -> None:
    assert agentmap("init", tmp_path).code == 0
    for args, expected in (
        (["validate"], "workflow.csv is valid"),
        (["inspect"], "Starter"),
        (["export"], "Greet"),
        (["export", "--format", "json"], '"Starter"'),
        (["scaffold"], "Nothing to scaffold"),
    ):
        result = agentmap(*args, cwd=tmp_path)
        assert result.code == 0, (args, result.text)
        assert expected in result.out, (args, result.out)
