"""`agentmap/_langgraph.py`: the one module that reads LangGraph's internals, and its check at import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from timing import scaled

from agentmap import _langgraph

PACKAGE = Path(__file__).parents[1] / "agentmap"
PRIVATE = ("__pregel_", "var_child_runnable_config", "langgraph._internal")


def test_no_other_module_reads_langgraphs_internals() -> None:
    readers = {
        f"{path.relative_to(PACKAGE)}: {word}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "_langgraph.py"
        for word in PRIVATE
        if word in path.read_text(encoding="utf-8")
    }
    assert readers == set()


def test_the_keys_are_langgraphs_own() -> None:
    from langgraph._internal import _constants

    assert _langgraph.CHECKPOINTER_KEY == _constants.CONFIG_KEY_CHECKPOINTER
    assert _langgraph.TASK_ID_KEY == _constants.CONFIG_KEY_TASK_ID
    assert _langgraph.current_config() == {}  # outside a run


def test_the_installed_langgraph_is_one_of_the_supported() -> None:
    from importlib.metadata import version

    from packaging.specifiers import SpecifierSet

    assert version("langgraph") in SpecifierSet(_langgraph.SUPPORTED)
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"langgraph{_langgraph.SUPPORTED}"' in pyproject
    lowest = (PACKAGE.parent / ".ci" / "lowest.txt").read_text(encoding="utf-8")  # what CI tests as the lowest
    assert f"langgraph=={_langgraph.SUPPORTED.split(',')[0].removeprefix('>=')}\n" in lowest


@pytest.mark.parametrize(
    ("name", "remove"),
    [
        ("CONFIG_KEY_TASK_ID", "import langgraph._internal._constants as c\ndel c.CONFIG_KEY_TASK_ID"),
        ("CONFIG_KEY_CHECKPOINTER", "import langgraph._internal._constants as c\ndel c.CONFIG_KEY_CHECKPOINTER"),
        ("execution_info", "import langgraph.runtime as r\ndel r.Runtime.__dataclass_fields__['execution_info']"),
    ],
)
def test_a_langgraph_without_what_agentmap_reads_fails_at_import_naming_its_version(name: str, remove: str) -> None:
    probe = f"{remove}\nimport agentmap._langgraph\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=scaled(120))
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: AgentMap needs LangGraph internals that langgraph 1.") and name in last
    assert f'pip install "langgraph{_langgraph.SUPPORTED}"' in last
