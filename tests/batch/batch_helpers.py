"""A small workflow for batch tests: a custom agent that can wait, fail, and log each run to a file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentmap.batch import _blocks

AGENT = '''
import os
import time

from agentmap import BaseAgent


class ShoutAgent(BaseAgent):
    """Upper-cases `word` after `delay` seconds; the word `boom` fails; logs each run to $BATCH_RUN_LOG."""

    def process(self, inputs):
        time.sleep(float(inputs.get("delay") or 0))
        log = os.environ.get("BATCH_RUN_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{inputs.get('word')}\\n")
        if inputs.get("word") == "boom":
            raise ValueError("the word was boom")
        return str(inputs.get("word")).upper()
'''

WORKFLOW = """\
GraphName,Node,AgentType,Prompt,Description,Input_Fields,Output_Field,Edge
Shout,Loud,shout,,Upper-cases the word,word|delay,loud,Frame
Shout,Frame,template,<{loud}>,Frames it,loud,framed,
"""


def shout_flow(folder: Path) -> Path:
    """Write the Shout workflow (with its custom agent) into `folder` and return the workflow file."""
    (folder / "custom_agents").mkdir(parents=True, exist_ok=True)
    (folder / "custom_agents" / "shout.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    path = folder / "shout.csv"
    path.write_text(WORKFLOW, encoding="utf-8")
    return path


def words(*items: str, delay: float = 0.0) -> list[dict[str, object]]:
    """Rows `{"word": ..., "delay": ...}`."""
    return [{"word": w, "delay": delay} for w in items]


def record_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Have each batch write every finished row to its `.partial` file as it finishes, none held back for a block.

    A row is reported done (`on_result`) only once written; a test that stops a batch from `on_result` after its
    n-th row, and expects the rows after it not to have run, needs each row written (and reported) at once.
    """
    monkeypatch.setattr(_blocks, "BLOCK_SECONDS", 0.0)
