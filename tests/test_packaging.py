"""What the installed package tells tools: its version (written once) and that it is typed (PEP 561)."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import agentmap

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_version_is_the_packages_version() -> None:
    assert importlib.metadata.version("agentmap") == agentmap.__version__


def test_the_version_is_written_only_in_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "agentmap._version.__version__"}
    from agentmap._version import __version__

    assert agentmap.__version__ == __version__  # the public name is that one value


def test_the_package_is_marked_typed() -> None:
    assert (Path(agentmap.__file__).parent / "py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["agentmap"]
