"""The agent registry: spellings, registration routes (decorator, folder, entry points) and lookups."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

import agentmap
from agentmap.agents import builtins
from agentmap.agents.base import BaseAgent
from agentmap.agents.registry import AgentRegistry, agent, normalize_type, registry
from agentmap.errors import AgentNotFoundError


class Shout(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        return "!"


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Echo", "echo"),
        ("echo", "echo"),
        ("EchoAgent", "echo"),
        ("echo_agent", "echo"),
        ("", "default"),
        ("  ", "default"),
        ("Agent", "agent"),
        ("my-type", "my_type"),
        ("LLMAgent", "llm"),
    ],
)
def test_normalize_type(name: str, key: str) -> None:
    assert normalize_type(name) == key


def test_decorator_registers_under_every_spelling() -> None:
    local = AgentRegistry()

    @agent("Shouter", registry=local)
    class Loud(Shout):
        pass

    assert local.get("shouter") is Loud
    assert local.get("ShouterAgent") is Loud
    assert "SHOUTER" in local
    assert local.names() == ["shouter"]


def test_decorator_without_a_name_uses_the_class_name() -> None:
    local = AgentRegistry()
    agent(registry=local)(Shout)
    assert local.resolve("shout") is Shout


def test_register_refuses_to_replace_when_asked() -> None:
    local = AgentRegistry()
    local.register("x", Shout)

    class Other(Shout):
        pass

    with pytest.raises(ValueError, match="already registered"):
        local.register("X", Other, replace=False)
    local.register("x", Shout, replace=False)  # the same class again is fine
    local.register("x", Other)
    assert local.get("x") is Other


def test_a_class_that_is_not_an_agent_is_refused_with_both_ways_to_fix_it() -> None:
    class NotAnAgent:
        def process(self, inputs: dict[str, Any]) -> Any:
            return inputs

    with pytest.raises(TypeError, match=r"subclass agentmap\.BaseAgent") as info:
        AgentRegistry().register("bad", NotAnAgent)
    assert "async def process" in str(info.value)


def test_a_protocol_agent_class_is_adapted_into_a_base_agent() -> None:
    class Protocolish:
        async def process(self, request: Any) -> Any:
            return None

    adapted = AgentRegistry().register("proto", Protocolish)
    assert issubclass(adapted, BaseAgent)


def test_resolve_unknown_type_suggests_close_names_and_how_to_register() -> None:
    local = AgentRegistry()
    local.register("summary", Shout)
    local._entry_points_loaded = True  # keep installed packages out of this lookup
    with pytest.raises(AgentNotFoundError) as info:
        local.resolve("Sumary")
    err = info.value
    assert err.code == "unknown-agent-type"
    assert err.message == "unknown agent type 'Sumary'; did you mean 'summary'?"
    assert err.hint is not None
    assert "custom_agents/" in err.hint and "@agentmap.agent('Sumary')" in err.hint
    assert "SumaryAgent" in err.hint


def test_builtin_types_are_in_the_default_registry_in_any_spelling() -> None:
    assert registry.get("EchoAgent") is builtins.EchoAgent
    assert registry.get("Default") is builtins.DefaultAgent
    assert {"default", "echo", "template", "branching", "success", "failure", "input", "summary", "graph"} <= set(
        registry.names()
    )


def test_the_graph_type_is_loaded_on_first_use() -> None:
    from agentmap.runtime.subgraph import GraphAgent

    assert registry.get("GraphAgent") is GraphAgent


def _write_agents(folder: Path, stem: str, body: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{stem}.py").write_text(body, encoding="utf-8")


def test_a_folder_registers_each_agent_class_by_its_name_when_looked_up(tmp_path: Path) -> None:
    folder = tmp_path / "custom_agents"
    _write_agents(
        folder,
        "weather",
        "from agentmap import BaseAgent\n"
        "from agentmap.agents.builtins import EchoAgent\n"
        "class WeatherAgent(BaseAgent):\n    def process(self, inputs):\n        return 'sunny'\n"
        "class Helper:\n    pass\n",
    )
    _write_agents(folder, "_private", "raise RuntimeError('files starting with _ are skipped')\n")
    local = AgentRegistry().with_folder(folder)
    assert "weather" in local.names()  # declared, not imported yet
    cls = local.resolve("Weather")
    assert cls.__name__ == "WeatherAgent"
    assert local.get("echo") is None  # imported classes are not re-registered under the folder
    assert AgentRegistry().with_folder(tmp_path / "missing").get("missing") is None


def test_a_folder_leaves_decorated_classes_under_their_decorator_name(tmp_path: Path) -> None:
    folder = tmp_path / "custom_agents"
    type_name = f"named_{uuid.uuid4().hex[:8]}"
    _write_agents(
        folder,
        "named",
        "import agentmap\n"
        f"@agentmap.agent({type_name!r})\n"
        "class FancyAgent(agentmap.BaseAgent):\n    def process(self, inputs):\n        return 1\n",
    )
    for _ in range(2):  # the second compile finds the module imported and its registration still applies
        overlay = registry.with_folder(folder)
        cls = overlay.get(type_name)
        assert cls is not None and cls.__name__ == "FancyAgent"
        assert overlay.get("fancy") is None
    assert registry.get(type_name) is None  # the decorator inside a folder file registers in the overlay only


@pytest.mark.parametrize(
    ("stem", "written"),
    [("loud_echo_agent", "loud_echo"), ("loud_echo", "LoudEcho"), ("loudecho", "LoudEchoAgent"), ("misc", "loud_echo")],
)
def test_a_folder_file_is_found_by_its_name_or_its_class(tmp_path: Path, stem: str, written: str) -> None:
    folder = tmp_path / "custom_agents"
    _write_agents(folder, stem, "import agentmap\nclass LoudEchoAgent(agentmap.BaseAgent):\n    pass\n")
    local = AgentRegistry().with_folder(folder)
    cls = local.get(written)
    assert cls is not None and cls.__name__ == "LoudEchoAgent"


def test_only_the_files_declaring_a_looked_up_type_are_run(tmp_path: Path) -> None:
    folder = tmp_path / "custom_agents"
    _write_agents(folder, "example_script", "raise SystemExit('an example script, not an agent')\n")
    _write_agents(folder, "broken", "class BrokenAgent(:\n")
    _write_agents(folder, "good", "import agentmap\nclass GoodAgent(agentmap.BaseAgent):\n    pass\n")
    local = AgentRegistry().with_folder(folder)
    assert local.resolve("good").__name__ == "GoodAgent"
    assert local.get("broken") is None
    message, hint = local.unknown_message("broken"), local.register_hint("broken")
    assert "broken.py" in message and "SyntaxError" in message and "paths.custom_agents" in message
    assert hint.startswith("fix the error in broken.py")
    _write_agents(folder, "broken", "from agentmap import BaseAgent\nclass BrokenAgent(BaseAgent):\n    pass\n")
    os.utime(folder / "broken.py", ns=(0, 10**18))  # a changed file is read again, whatever the clock
    assert AgentRegistry().with_folder(folder).resolve("broken").__name__ == "BrokenAgent"


def test_each_folder_overlay_sees_its_own_types_only(tmp_path: Path) -> None:
    local = AgentRegistry()
    for name in ("a", "b"):
        body = f"import agentmap\nclass ShoutAgent(agentmap.BaseAgent):\n    WHERE = {name!r}\n"
        _write_agents(tmp_path / name, "shout", body)
        _write_agents(
            tmp_path / name,
            f"only_{name}",
            f"import agentmap\nclass Only{name.upper()}Agent(agentmap.BaseAgent):\n    pass\n",
        )
    for name in ("a", "b", "a"):
        overlay = local.with_folder(tmp_path / name)
        assert getattr(overlay.resolve("shout"), "WHERE", None) == name
        assert overlay.get(f"only{name}") is not None
        assert overlay.get(f"only{'b' if name == 'a' else 'a'}") is None
    assert local.get("shout") is None and "shout" not in local.names()
    # a subgraph's folder stands on its parent's: its own first, then the parent's
    nested = local.with_folder(tmp_path / "a").with_folder(tmp_path / "b")
    assert getattr(nested.resolve("shout"), "WHERE", None) == "b"
    assert nested.get("onlya") is not None


def _dist_info(root: Path, module: str, entry: str) -> None:
    (root / f"{module}.py").write_text(
        "from agentmap import BaseAgent\n"
        "class PluginAgent(BaseAgent):\n    def process(self, inputs):\n        return 'from a plugin'\n",
        encoding="utf-8",
    )
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[agentmap.agents]\n{entry} = {module}:PluginAgent\n", encoding="utf-8")


def test_entry_points_of_installed_packages_register_on_the_first_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"agentmap_plugin_{uuid.uuid4().hex[:8]}"
    _dist_info(tmp_path, module, "plugged")
    monkeypatch.syspath_prepend(str(tmp_path))
    local = AgentRegistry()
    cls = local.resolve("PluggedAgent")
    assert cls.__name__ == "PluginAgent" and cls.__module__ == module
    assert "plugged" in local.names()


def test_a_broken_entry_point_does_not_hide_the_others_and_is_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"agentmap_plugin_{uuid.uuid4().hex[:8]}"
    _dist_info(tmp_path, module, "good")
    entry_points = tmp_path / f"{module}-1.0.dist-info" / "entry_points.txt"
    entry_points.write_text(
        f"[agentmap.agents]\nbroken = {module}_missing_dependency:Agent\ngood = {module}:PluginAgent\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    local = AgentRegistry()
    assert local.resolve("good").__name__ == "PluginAgent"
    with pytest.raises(AgentNotFoundError) as info:
        local.resolve("broken")
    assert f"{module}_missing_dependency" in info.value.message
    assert "could not be loaded" in info.value.message


@pytest.mark.parametrize(
    ("written", "cls"), [("Parser Agent", "ParserAgent"), ("web-scraper", "WebScraperAgent"), ("3d", "Agent3dAgent")]
)
def test_the_register_hint_names_a_valid_class(written: str, cls: str) -> None:
    hint = AgentRegistry().register_hint(written)
    assert f"named {cls} in the custom_agents/ folder" in hint
    assert cls.isidentifier()


def test_builtin_types_of_upper_layers_are_entry_points_that_agents_never_name() -> None:
    from importlib.metadata import entry_points

    declared = {
        ep.name: ep.value for ep in entry_points(group="agentmap.agents") if ep.dist and ep.dist.name == "agentmap"
    }
    assert {"graph", "llm", "offline", "planner", "worker", "orchestrator", "assistant", "llm_planner"} <= set(
        declared
    ), "the agentmap.agents entry points are missing: reinstall (pip install -e .)"
    assert declared["graph"] == "agentmap.runtime.subgraph:GraphAgent"
    for name in declared:
        assert registry.get(name) is not None, name
    for path in (Path(agentmap.__file__).parent / "agents").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for upper in ("agentmap.runtime", "agentmap.llm", "agentmap.orchestration", "agentmap.interface"):
            assert upper not in text, f"{path.name} names {upper}"
