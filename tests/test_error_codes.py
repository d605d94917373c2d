"""Error codes: one `ErrorCode` enum lists them all, each explained in csv_specs/errors.md and linked from the error.

The documents (README.md, csv_specs/*.md, read through tests/docs_text.py) name only codes the program has, with
the exit code the program gives them: a failure names the page and line.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from pathlib import Path

import pytest
from docs_text import documents, spans

import agentmap
from agentmap.cli.app import EXIT_CODES
from agentmap.errors import ERRORS_PAGE, AgentMapError, ConfigError, ErrorCode, WorkflowValidationError

PACKAGE = Path(agentmap.__file__).parent
ROOT = PACKAGE.parent
_CODE = re.compile(r"^[a-z]+(?:-[a-z0-9]+)+$")
# Calls whose positional argument at this index is a code (validation findings built in spec/ and runtime/).
_POSITIONAL = {"CellError": 0, "HeaderProblem": 0, "_issue": 3, "add": 2, "report": 1}
# The server's answers: `ApiError(status, code, ...)` and the error body it writes outside a route.
_SERVER_POSITIONAL = {"ApiError": 1, "error_body": 0}


def _protocol_codes() -> set[str]:
    from typing import get_args

    from agentmap.server._models import ProtocolCode

    return set(get_args(ProtocolCode))


def _codes_in_the_package(positional: dict[str, int] = _POSITIONAL, pattern: re.Pattern[str] = _CODE) -> dict[str, str]:
    """Every code written at a raise site, as `default_code`, or handed to a finding (or, with `positional`, to the
    calls it names); with where it is."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            values: list[ast.expr] = []
            if isinstance(node, ast.Call):
                values += [k.value for k in node.keywords if k.arg == "code"]
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                index = positional.get(name)
                if index is not None and len(node.args) > index:
                    values.append(node.args[index])
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "default_code" for t in node.targets):
                values.append(node.value)
            for value in values:
                if isinstance(value, ast.Attribute) and getattr(value.value, "id", "") == "ErrorCode":
                    found.setdefault(ErrorCode[value.attr].value, f"{where}:{value.lineno}")  # a typed raise site
                elif isinstance(value, ast.Constant) and isinstance(value.value, str) and pattern.match(value.value):
                    found.setdefault(value.value, f"{where}:{value.lineno}")
    return found


def test_every_code_the_package_uses_is_an_error_code() -> None:
    used = _codes_in_the_package()
    assert len(used) > 40  # the scan finds the raise sites
    missing = {code: where for code, where in used.items() if code not in ErrorCode.__members__.values()}
    assert not missing, f"add these codes to ErrorCode and csv_specs/errors.md: {missing}"


def test_every_code_the_server_answers_is_an_error_code_or_a_protocol_code() -> None:
    used = _codes_in_the_package(_SERVER_POSITIONAL, re.compile(r"^[a-z]+(?:-[a-z0-9]+)*$"))
    assert {"assistant-not-found", "unauthorized", "body-too-large"} <= set(used)  # the scan finds the answers
    known = set(ErrorCode) | _protocol_codes()
    missing = {code: where for code, where in used.items() if code not in known}
    assert not missing, f"add these codes to ProtocolCode (agentmap/server/_models.py) or ErrorCode: {missing}"


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


def _section_exits() -> dict[str, tuple[int, str, int, int | None]]:
    """Each code's section of errors.md: (its line, who it says raises it, the exit it gives, that one's exit).

    The first paragraph names a class (`` `ConfigError`, exit 2 ``, `` `UnsafeCheckpointError` (a `ConfigError`),
    exit 2 ``), a finding (`finding, exit 4`, `finding (warning), exit 0`) or neither (`internal`: "Exit 5");
    sections of codes only the studio or the server answers give an HTTP status and no exit.
    """
    page = (ROOT / ERRORS_PAGE).read_text(encoding="utf-8")
    classes = _error_classes()
    found: dict[str, tuple[int, str, int, int | None]] = {}
    for match in re.finditer(r"^### `([a-z0-9-]+)`\n\n(.+?)(?:\n\n|\Z)", page, re.M | re.S):
        first = match.group(2).replace("\n", " ")
        said = re.search(r"\bexit (\d+)", first, re.I)
        if said is None:
            continue
        before = first[: said.start()]
        named = next((name for name in re.findall(r"`(\w+)`", before) if name in classes), None)
        if named is not None:
            who, expected = f"`{named}`", classes[named].exit_code
        elif before.startswith("finding"):
            warning = "(warning)" in before
            who, expected = (
                "a finding" + (" (warning)" if warning else ""),
                0 if warning else classes["WorkflowValidationError"].exit_code,
            )
        else:
            who, expected = "nothing", None
        found[match.group(1)] = (page.count("\n", 0, match.start()) + 1, who, int(said.group(1)), expected)
    return found


def test_the_exit_code_each_section_of_errors_md_gives_is_its_errors() -> None:
    sections = _section_exits()
    assert len(sections) > 100
    wrong = [
        f"{ERRORS_PAGE}:{line}: `{code}` says {who}, exit {said}; {who} exits {expected}"
        for code, (line, who, said, expected) in sections.items()
        if expected is not None and said != expected
    ]
    wrong += [
        f"{ERRORS_PAGE}:{line}: `{code}`: exit {said} is not an exit code of the command line"
        for code, (line, _, said, _) in sections.items()
        if said not in EXIT_CODES
    ]
    assert not wrong, "\n".join(wrong)


def test_every_error_class_exits_with_an_exit_code_the_command_line_lists() -> None:
    wrong = {name: cls.exit_code for name, cls in _error_classes().items() if cls.exit_code not in EXIT_CODES}
    assert not wrong, f"add these exit codes to agentmap.cli.app.EXIT_CODES (and the documents' tables): {wrong}"


_CODE_SPANS = r"((?:`[a-z][a-z0-9-]*`(?:,? and |, | or )?)+)"


def _codes_the_documents_name() -> list[tuple[str, str, bool]]:
    """(where, code, whether an HTTP answer's code) for each error code the documents name as one.

    `error[x]` and `warning[x]` in code; "code `x`", "codes `x` and `y`"; an HTTP status with its code (`422
    `bad-input``) and the codes column of a table of statuses; `(`x`, exit 2)` and `x` (exit 2).
    """
    named: list[tuple[str, str, bool]] = []
    for page in documents():
        for code in page.code:
            named += [(code.where, x, False) for x in re.findall(r"\b(?:error|warning)\[([a-z0-9-]+)\]", code.text)]
        for pattern, http in ((rf"\bcodes? {_CODE_SPANS}", True), (rf"\b[1-5]\d\d {_CODE_SPANS}", True)):
            for match in re.finditer(pattern, page.prose):
                where = f"{page.name}:{page.line_of(match.start())}"
                named += [(where, x, http) for x in spans(match.group(1))]
        for table in page.tables:
            if [h.lower() for h in table.header[:2]] == ["status", "codes"]:
                named += [
                    (f"{page.name}:{line}", x, True)
                    for line, row in table.rows
                    for x in spans(row[1])
                    if re.fullmatch(r"[a-z][a-z0-9-]*", x)
                ]
    return [(where, code, http) for where, code, http in named if code != "code"]  # `error[code]`: the form


def test_every_error_code_the_documents_name_is_one() -> None:
    named = _codes_the_documents_name()
    assert len(named) > 50
    protocol = _protocol_codes()
    wrong = [
        f"{where}: `{code}` is not an error code" + (" (nor a ProtocolCode)" if http else "")
        for where, code, http in named
        if code not in set(ErrorCode) | (protocol if http else set())
    ]
    assert not wrong, "\n".join(wrong)


_CODE_WITH_EXIT = re.compile(
    r"\(`(?:error\[)?([a-z][a-z0-9-]*)\]?`, exit (\d+)"  # (`missing-state`, exit 2)
    r"|`([a-z][a-z0-9-]*)` \(exit (\d+)"  # `recursion-limit` (exit 5)
    r"|exits? (\d+) \(`error\[([a-z][a-z0-9-]*)\]`"  # exits 2 (`error[ambiguous-resume]`)
)


def test_the_exit_code_said_beside_an_error_code_is_the_one_errors_md_gives() -> None:
    sections = _section_exits()
    wrong: list[str] = []
    checked = 0
    for page in documents():
        for match in _CODE_WITH_EXIT.finditer(page.prose):
            groups = [g for g in match.groups() if g is not None]
            code, said = (groups[1], int(groups[0])) if groups[0].isdigit() else (groups[0], int(groups[1]))
            where = f"{page.name}:{page.line_of(match.start())}"
            checked += 1
            if code not in set(ErrorCode):
                wrong.append(f"{where}: `{code}` is not an error code")
            elif code in sections and said != sections[code][2]:
                wrong.append(f"{where}: `{code}` is said to exit {said}; {ERRORS_PAGE} gives exit {sections[code][2]}")
    assert checked > 10
    assert not wrong, "\n".join(wrong)


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
