"""The README's examples run as written: every Python block, and every `agentmap run` line."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

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
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_python_examples_print_what_their_comments_say() -> None:
    done = subprocess.run([sys.executable, "-c", PYTHON_BLOCKS[0]], cwd=ROOT, capture_output=True, text=True)
    assert "Hello, Ada!" in done.stdout and "True" in done.stdout
    assert "Weather in Lisbon" in done.stdout
    embed = next(b for b in PYTHON_BLOCKS if "add_node" in b)
    done = subprocess.run([sys.executable, "-c", embed], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip() == "HELLO, ADA!"


@pytest.mark.slow
@pytest.mark.parametrize("line", RUN_LINES)
def test_command_example_runs(line: str) -> None:
    argv = shlex.split(line)
    done = subprocess.run(
        [sys.executable, "-m", "agentmap", *argv[1:], "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"success": true' in done.stdout
