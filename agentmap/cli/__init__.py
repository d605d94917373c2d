"""The `agentmap` command line: run, validate, inspect and export workflows, start projects.

`main()` is the console script. `agentmap --version` is answered here, before typer or anything else
is imported; every other command goes through the typer app in `agentmap.cli.app`, whose commands
import the runtime only when they run. Exit codes are listed in `agentmap.cli.app.EXIT_CODES`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

from agentmap import __version__

__all__ = ["console", "main"]


def console() -> NoReturn:
    """The `agentmap` console script (and `python -m agentmap`): `main()`, then the process exits with its code."""
    sys.exit(main(exiting=True))


def main(argv: Sequence[str] | None = None, *, exiting: bool = False) -> int:
    """Run the `agentmap` command with `argv` (default: `sys.argv[1:]`) and return its exit code.

    `exiting`: the process ends right after (the console script), so nothing start-up froze is unfrozen.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        sys.stdout.write(f"agentmap {__version__}\n")
        return 0
    from agentmap.cli._process import collector_off

    # `run` turns the collector back on (after `gc.freeze()`) before the graph runs; it is put back after (and
    # run_cli puts AgentMap's loggers back)
    with collector_off(exiting=exiting):
        from agentmap.cli.app import run_cli

        return run_cli(args)
