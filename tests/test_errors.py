"""Errors: locations in messages, and the table of file-level codes kept in step with the code raising them."""

from __future__ import annotations

import ast
from pathlib import Path

import agentmap
from agentmap.errors import FILE_ERROR_CODES, ErrorCode, GraphNotFoundError, Location, WorkflowFileError

PACKAGE = Path(agentmap.__file__).parent


def _raised_codes(cls: type) -> set[str]:
    """The code of every `cls(...)` that `validate` may meet (built in spec/ and runtime/)."""
    codes: set[str] = set()
    for path in [*(PACKAGE / "spec").rglob("*.py"), *(PACKAGE / "runtime").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == cls.__name__:
                code = next((k.value for k in node.keywords if k.arg == "code"), None)
                if code is None:
                    codes.add(cls.default_code)  # type: ignore[attr-defined]
                elif isinstance(code, ast.Constant) and isinstance(code.value, str):
                    codes.add(code.value)
    return codes


def test_every_file_level_code_raised_is_in_the_table_with_its_class() -> None:
    for cls in (WorkflowFileError, GraphNotFoundError):
        codes = _raised_codes(cls)
        assert codes, cls
        assert {code: FILE_ERROR_CODES.get(code) for code in codes} == dict.fromkeys(codes, cls)


def test_validate_reports_a_file_level_error_with_a_code_from_the_table(tmp_path: Path) -> None:
    (tmp_path / "two.csv").write_text("GraphName,Node\nA,x\nB,y\n", encoding="utf-8")
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    (tmp_path / "binary.csv").write_bytes(b"\x00\x01GraphName")
    sources = ["missing.csv", ".", "two.csv::C", "empty.csv", "binary.csv", "x.txt"]
    for source in [f"{tmp_path / s}" for s in sources]:
        [issue] = agentmap.validate(source)
        assert issue.row is None and issue.code in FILE_ERROR_CODES, issue


def test_an_error_names_its_location_then_the_hint() -> None:
    err = WorkflowFileError("bad", code=ErrorCode.NOT_TEXT, location=Location("g.csv", 3, "Context"), hint="fix it")
    assert str(err) == "g.csv:3:Context: bad\n  fix it"
    assert isinstance(err, FileNotFoundError) and err.exit_code == 3
