"""`agentmap._cli_api`: the command line's need from the library, as named operations rather than re-exports.

The package holds one submodule per command group; its `__init__` lists every operation in `__all__`, grouped the
same way, and lazily re-exports the few classes a command builds or catches (`_NAMES`).
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
import re
from types import ModuleType

from agentmap import _cli_api

LAZY = set(vars(_cli_api)["_NAMES"])
OPERATIONS = [name for name in _cli_api.__all__ if name not in LAZY]
GROUPS = [importlib.import_module(f"agentmap._cli_api.{m.name}") for m in pkgutil.iter_modules(_cli_api.__path__)]


def _commands(doc: str | None) -> set[str]:
    """The commands a docstring's first line names before its colon, by their first word (`eval run` -> `eval`)."""
    assert doc and ":" in doc.split("\n")[0], f"{doc!r} does not say which command needs it"
    return set(re.findall(r"(?:^|, )(\w+)", doc.split(":")[0]))


def _home(name: str) -> ModuleType:
    return importlib.import_module(getattr(_cli_api, name).__module__)


def test_every_operation_is_a_function_of_its_command_groups_submodule_that_says_what_for() -> None:
    """A reader of `_cli_api` finds each operation, with the command needing it, in the package itself: defined
    in the submodule of its command group (none in `__init__`, none re-exported from a room)."""
    for name in OPERATIONS:
        value = getattr(_cli_api, name)
        assert inspect.isfunction(value), name
        assert value.__module__.rpartition(".")[0] == "agentmap._cli_api", f"{name} is defined in {value.__module__}"
        home = _home(name)
        assert name in home.__all__, f"{name} is not in the `__all__` of {home.__name__}"
        first_command = re.split(r"\W", value.__doc__ or "")[0]
        assert first_command in _commands(home.__doc__), f"{name} ({first_command}) is not of {home.__name__}'s group"


def test_the_package_lists_each_groups_operations_together_and_only_those() -> None:
    """`_cli_api.__all__` is the submodules' `__all__`, each group in one run: the grouping has one owner."""
    runs = [home for home, _ in itertools.groupby(OPERATIONS, key=lambda name: _home(name).__name__)]
    assert len(runs) == len(set(runs)), f"a group's operations are apart in `__all__`: {runs}"
    assert sorted(OPERATIONS) == sorted(name for group in GROUPS for name in group.__all__)
    assert all(group.__all__ and _commands(group.__doc__) for group in GROUPS)


def test_only_classes_types_and_one_name_are_re_exported() -> None:
    aliases = {"Durability", "MissingInputs", "Targets"}  # Literals and a union: types, not classes
    for name in LAZY:
        value = getattr(_cli_api, name)
        assert inspect.isclass(value) or name in aliases or name == "ACTIVE_AGENT_ENV", name


def test_every_exported_name_exists() -> None:
    """`from agentmap._cli_api import *` works: the types the commands only annotate with are there too."""
    namespace: dict[str, object] = {}
    exec("from agentmap._cli_api import *", namespace)
    assert set(_cli_api.__all__) <= set(namespace)
