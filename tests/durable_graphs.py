"""Workflows for the durable-run tests: a counter whose nodes log to a side file, a node that asks, and a purchase
approval in two revisions (the versions tests: a thread waiting on the first while the file becomes the second)."""

from __future__ import annotations

from pathlib import Path

AGENTS = '''\
import os
import time

from agentmap import BaseAgent
from agentmap.agents.questions import check_answer, question


class TickAgent(BaseAgent):
    """Adds one to `count` and appends its name to the file $TICK_FILE (then sleeps $TICK_SLEEP seconds)."""

    def process(self, inputs):
        with open(os.environ["TICK_FILE"], "a", encoding="utf-8") as side:
            side.write(self.name + "\\n")
        time.sleep(float(os.environ.get("TICK_SLEEP", "0")))
        if self.context.get("boom") and os.environ.get("TICK_BOOM"):
            time.sleep(0.5)  # the sibling branches finish meanwhile
            os.kill(os.getpid(), 9)  # the process dies mid-step
        return (inputs.get("count") or 0) + 1


class ApproveAgent(BaseAgent):
    """Asks for an approval by pausing the run."""

    def process(self, inputs):
        from langgraph.types import interrupt

        asked = question(self.name, "human", "Publish the draft?", interaction="approval")
        return check_answer(asked, interrupt(asked))


class FlakyAgent(BaseAgent):
    """Fails until $TICK_FILE holds `fails` lines naming it."""

    def process(self, inputs):
        path = os.environ["TICK_FILE"]
        with open(path, "a", encoding="utf-8") as side:
            side.write(self.name + "\\n")
        seen = open(path, encoding="utf-8").read().split().count(self.name)
        if seen <= int(self.context.get("fails", 0)):
            raise ConnectionError(f"attempt {seen} failed")
        if self.context.get("sleep"):
            time.sleep(float(self.context["sleep"]))
        return "ok"
'''

HEADER = "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"

APPROVE = '"{""interaction_type"": ""approval""}"'
PURCHASE_A = HEADER + (
    f"Purchase,Review,human,Approve the purchase of {{request}}?,{APPROVE},request,approved,Report\n"
    "Purchase,Report,template,Purchase of {request} approved: {approved},,request|approved,report,Notify\n"
    "Purchase,Notify,template,Told the team about {request},,request,note,\n"
)
"""Review (asks for an approval) -> Report -> Notify."""
PURCHASE_B = HEADER + (
    f"Purchase,Approval,human,Approve the purchase of {{request}}?,{APPROVE},request,approved,Report\n"
    "Purchase,Report,template,Purchase of {request} for {cost_center} approved: {approved},,"
    "request|approved|cost_center,report,\n"
)
"""PURCHASE_A edited: Review renamed Approval, Notify removed, Report reads a new input no node writes."""
PURCHASE_A_NODES = {"Review", "Report", "Notify"}


def counter(folder: Path, nodes: int = 20, name: str = "counter.csv") -> Path:
    """A chain of `nodes` tick nodes N01..Nnn counting into `count`."""
    _agents(folder)
    rows = [f"Count,N{i:02d},tick,,,count,count,{f'N{i + 1:02d}' if i < nodes else ''}\n" for i in range(1, nodes + 1)]
    path = folder / name
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return path


def approval(folder: Path) -> Path:
    """Draft -> Review (asks for an approval) -> Publish."""
    _agents(folder)
    path = folder / "review.csv"
    path.write_text(
        HEADER
        + "Review,Draft,tick,,,count,count,Review\n"
        + "Review,Review,approve,,,,decision,Publish\n"
        + "Review,Publish,tick,,,count,count,\n",
        encoding="utf-8",
    )
    return path


def fan_out(folder: Path) -> Path:
    """Start fans out to A, B (which kills its process when $TICK_BOOM is set) and C; they join at End."""
    _agents(folder)
    path = folder / "fan.csv"
    path.write_text(
        HEADER
        + "Fan,Start,tick,,,count,count,A|B|C\n"
        + "Fan,A,tick,,,count,a,End\n"
        + 'Fan,B,tick,,"{""boom"": true}",count,b,End\n'
        + "Fan,C,tick,,,count,c,End\n"
        + "Fan,End,tick,,,a:count,count,\n",
        encoding="utf-8",
    )
    return path


def _agents(folder: Path) -> None:
    (folder / "custom_agents").mkdir(exist_ok=True)
    (folder / "custom_agents" / "durable_agents.py").write_text(AGENTS, encoding="utf-8")
