"""Error codes: one `ErrorCode` enum lists them all, each explained in csv_specs/errors.md and linked from the error."""

from __future__ import annotations

import ast
import json
import re
import warnings
from pathlib import Path

import pytest

import agentmap
from agentmap.errors import ERRORS_PAGE, AgentMapError, ConfigError, ErrorCode, WorkflowValidationError

PACKAGE = Path(agentmap.__file__).parent
ROOT = PACKAGE.parent
_CODE = re.compile(r"^[a-z]+(?:-[a-z0-9]+)+$")
# Calls whose positional argument at this index is a code (validation findings built in spec/ and runtime/).
_POSITIONAL = {"CellError": 0, "HeaderProblem": 0, "_issue": 3, "add": 2, "report": 1}


def _codes_in_the_package() -> dict[str, str]:
    """Every code written at a raise site, as `default_code`, or handed to a finding; with where it is."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            values: list[ast.expr] = []
            if isinstance(node, ast.Call):
                values += [k.value for k in node.keywords if k.arg == "code"]
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                index = _POSITIONAL.get(name)
                if index is not None and len(node.args) > index:
                    values.append(node.args[index])
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "default_code" for t in node.targets):
                values.append(node.value)
            for value in values:
                if isinstance(value, ast.Attribute) and getattr(value.value, "id", "") == "ErrorCode":
                    found.setdefault(ErrorCode[value.attr].value, f"{where}:{value.lineno}")  # a typed raise site
                elif isinstance(value, ast.Constant) and isinstance(value.value, str) and _CODE.match(value.value):
                    found.setdefault(value.value, f"{where}:{value.lineno}")
    return found


def test_every_code_the_package_uses_is_an_error_code() -> None:
    used = _codes_in_the_package()
    assert len(used) > 40  # the scan finds the raise sites
    missing = {code: where for code, where in used.items() if code not in ErrorCode.__members__.values()}
    assert not missing, f"add these codes to ErrorCode and csv_specs/errors.md: {missing}"


def test_the_missing_name_codes_are_listed() -> None:  # built with an f-string, which the scan cannot read
    assert {"missing-graph-name", "missing-node-name"} <= set(ErrorCode)


def test_every_code_has_a_section_in_errors_md() -> None:
    page = (ROOT / ERRORS_PAGE).read_text(encoding="utf-8")
    sections = re.findall(r"^### `([a-z0-9-]+)`", page, re.M)
    assert sorted(sections) == sorted(ErrorCode)
    assert len(sections) == len(set(sections))


def test_every_validation_code_documented_is_an_error_code() -> None:
    page = (ROOT / "csv_specs" / "validation.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^### `([a-z0-9-]+)`", page, re.M)) <= set(ErrorCode)


def test_a_known_code_becomes_a_member_and_links_its_section() -> None:
    err = ConfigError("bad value", code="bad-config")  # type: ignore[arg-type]  # an untyped caller's text
    assert err.code is ErrorCode.BAD_CONFIG
    assert f"error[{err.code}]" == "error[bad-config]" and json.dumps(err.code) == '"bad-config"'
    assert err.docs == "csv_specs/errors.md#bad-config"
    assert ConfigError("x").code is ErrorCode.BAD_CONFIG  # the class's default code too
    assert str(err) == "bad value"  # the message itself is unchanged


def test_a_code_not_listed_yet_stays_text() -> None:
    err = AgentMapError("new", code="brand-new-code")  # type: ignore[arg-type]  # an untyped caller's text
    assert err.code == "brand-new-code" and not isinstance(err.code, ErrorCode)
    assert err.docs is None


def test_validation_error_is_renamed_and_the_old_name_warns() -> None:
    from agentmap import errors

    with pytest.warns(DeprecationWarning, match="renamed WorkflowValidationError"):
        old = errors.ValidationError
    assert old is WorkflowValidationError
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert agentmap.ValidationError is agentmap.WorkflowValidationError
    assert issubclass(WorkflowValidationError, AgentMapError) and issubclass(WorkflowValidationError, ValueError)


def _error_classes() -> dict[str, type[AgentMapError]]:
    import agentmap.interface.logs
    import agentmap.interface.scenarios
    import agentmap.llm.adapter
    import agentmap.orchestration
    import agentmap.server._graphs  # noqa: F401  (error classes defined beside what raises them)

    found: dict[str, type[AgentMapError]] = {}
    todo: list[type[AgentMapError]] = [AgentMapError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo += cls.__subclasses__()
    return found


def test_the_exit_code_each_section_of_errors_md_gives_is_its_errors() -> None:
    page = (ROOT / ERRORS_PAGE).read_text(encoding="utf-8")
    classes = _error_classes()
    said = re.findall(r"^### `([a-z0-9-]+)`\n\n`(\w+)`, exit (\d+)", page, re.M)
    assert len(said) > 40
    wrong = {
        code: (name, int(exit_code)) for code, name, exit_code in said if classes[name].exit_code != int(exit_code)
    }
    assert not wrong, f"errors.md gives exit codes these errors do not have: {wrong}"


def test_the_type_checker_refuses_a_misspelt_code(tmp_path: Path) -> None:
    from mypy import api

    (tmp_path / "raise_site.py").write_text(
        "from agentmap.errors import ConfigError, ErrorCode\n"
        'ConfigError("ok", code=ErrorCode.BAD_CONFIG)\n'
        'ConfigError("typo", code="bad-confg")\n',
        encoding="utf-8",
    )
    import agentmap.errors

    # The errors module and the raise site alone (following the package's imports would type-check all of it).
    checked = [str(agentmap.errors.__file__), str(tmp_path / "raise_site.py")]
    out, _, status = api.run(["--strict", "--follow-imports=skip", "--cache-dir", str(tmp_path / "cache"), *checked])
    assert status == 1 and out.count("error:") == 1, out
    assert 'raise_site.py:3: error: Argument "code" to "ConfigError" has incompatible type "str"' in out, out
