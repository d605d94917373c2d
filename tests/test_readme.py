"""The README's examples run as written: every Python block, and every `agentmap run` line."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import forked
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
RUN_LINES = [
    line.split(" && ", 1)[-1]
    for block in re.findall(r"```bash\n(.*?)```", README, re.S)
    for line in block.splitlines()
    if "agentmap run " in line
]


def test_the_readme_has_examples() -> None:
    assert len(PYTHON_BLOCKS) >= 3 and len(RUN_LINES) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("code", PYTHON_BLOCKS, ids=[f"python-{i}" for i in range(len(PYTHON_BLOCKS))])
def test_python_example_runs(code: str) -> None:
    code_, _, err = forked.python(code, cwd=ROOT)
    assert code_ == 0, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_python_examples_print_what_their_comments_say() -> None:
    _, out, _ = forked.python(PYTHON_BLOCKS[0], cwd=ROOT)
    assert "Hello, Ada!" in out and "True" in out
    assert "Weather in Lisbon" in out
    embed = next(b for b in PYTHON_BLOCKS if "add_node" in b)
    _, out, _ = forked.python(embed, cwd=ROOT)
    assert out.strip() == "HELLO, ADA!"


@pytest.mark.slow
@pytest.mark.parametrize("line", RUN_LINES)
def test_command_example_runs(line: str) -> None:
    argv = shlex.split(line)
    code, out, err = forked.run(*argv[1:], "--json", cwd=ROOT, env=os.environ)
    assert code == 0, out + err
    assert '"success": true' in out
