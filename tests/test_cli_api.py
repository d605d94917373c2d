"""`agentmap._cli_api`: the command line's need from the library, as named operations rather than re-exports."""

from __future__ import annotations

import inspect

from agentmap import _cli_api


def test_every_operation_is_a_function_of_its_own_that_says_what_for() -> None:
    """A reader of `_cli_api` sees each operation, with the command needing it, in `_cli_api` itself."""
    lazy = set(vars(_cli_api)["_NAMES"])
    for name in _cli_api.__all__:
        if name in lazy:
            continue
        value = getattr(_cli_api, name)
        assert inspect.isfunction(value), name
        assert value.__module__ == "agentmap._cli_api", f"{name} is re-exported from {value.__module__}"
        assert value.__doc__ and ":" in value.__doc__.split("\n")[0], f"{name} does not say which command needs it"


def test_only_classes_types_and_one_name_are_re_exported() -> None:
    aliases = {"Durability", "Targets"}  # a Literal and a union: types, not classes
    for name in vars(_cli_api)["_NAMES"]:
        value = getattr(_cli_api, name)
        assert inspect.isclass(value) or name in aliases or name == "ACTIVE_AGENT_ENV", name


def test_every_exported_name_exists() -> None:
    """`from agentmap._cli_api import *` works: the types the commands only annotate with are there too."""
    namespace: dict[str, object] = {}
    exec("from agentmap._cli_api import *", namespace)
    assert set(_cli_api.__all__) <= set(namespace)
