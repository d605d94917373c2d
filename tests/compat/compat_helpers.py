"""Run `agentmap` in-process (the real CLI, its error rendering and exit codes) on old-style workflows."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from agentmap.cli.app import run_cli

sys.path.insert(0, str(Path(__file__).parents[1] / "cli"))
from cli_helpers import Result as _CliResult


class Result(_CliResult):
    """What a command printed and its exit code (as the subprocess helpers of tests/cli report it)."""

    def json(self) -> Any:
        """stdout parsed as JSON (`agentmap run --json`)."""
        return json.loads(self.out)


def cli(*args: str | Path, stdin: str | None = None, cwd: Path | None = None) -> Result:
    """`agentmap ARGS` with `stdin` piped in (not a terminal), run in this process."""
    runner = CliRunner()
    before = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with runner.isolation(input=stdin or "") as streams:
            code = run_cli([str(a) for a in args])
            sys.stdout.flush()
            sys.stderr.flush()
            out, err = streams[0].getvalue(), streams[1].getvalue()
    finally:
        os.chdir(before)
    return Result(code, out.decode(), err.decode())


def write(folder: Path, files: dict[str, str]) -> Path:
    """Write `{relative path: dedented text}` under `folder`; return the folder."""
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return folder
