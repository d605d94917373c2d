"""A folder of small workflows to serve, the real server on 127.0.0.1 in a thread of the test process, and a
langgraph-sdk client's steps on `durable_graphs.PURCHASE_A`/`_B` (the versions tests)."""

from __future__ import annotations

import json
import shutil
import textwrap
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import served
from components import clean_env
from timing import deadline, scaled

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "graphs"

_AGENTS = '''
import time
from pathlib import Path

from langgraph.config import get_stream_writer
from langgraph.types import interrupt

from agentmap import BaseAgent
from agentmap.agents.questions import check_answer, question


class NapAgent(BaseAgent):
    """Sleeps (Context seconds), so a run lasts long enough to be cancelled or joined."""

    def process(self, inputs):
        time.sleep(float(self.context.get("seconds", 0.2)))
        return "rested"


class GateAgent(BaseAgent):
    """Waits (up to a minute) until the file named in Context `gate` exists, so a test decides when it ends."""

    def process(self, inputs):
        gate, deadline = Path(self.context["gate"]), time.monotonic() + 60
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return "opened"


class ReviewAgent(BaseAgent):
    """Writes a custom stream event, then pauses on an approval question."""

    def process(self, inputs):
        get_stream_writer()({"reviewing": inputs.get("draft")})
        asked = question(self.name, "human", "Publish this draft?", interaction="approval")
        return check_answer(asked, interrupt(asked))["approved"]
'''

_WORKFLOWS = {
    "ask.csv": """
        GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
        Ask,Question,input,What is your name?,"{""interrupt"": true}",,name,Greet
        Ask,Greet,template,"Hello, {name}!",,name,greeting,
    """,
    "review.csv": """
        GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge
        Review,Draft,template,Draft about {topic},topic,draft,Approve
        Review,Approve,ReviewAgent,,draft,approved,
    """,
    "slow.csv": """
        GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge
        Slow,First,NapAgent,"{""seconds"": 0.3}",topic,first,Second
        Slow,Second,NapAgent,"{""seconds"": 0.3}",first,second,Third
        Slow,Third,NapAgent,"{""seconds"": 0.3}",second,third,
    """,
}


def make_project(folder: Path) -> Path:
    """Write hello.csv (the hello-world graph), ask.csv, review.csv, slow.csv and their custom agents into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(GRAPHS / "hello_world.csv", folder / "hello.csv")
    for name, text in _WORKFLOWS.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    (folder / "custom_agents").mkdir(exist_ok=True)
    (folder / "custom_agents" / "agents.py").write_text(_AGENTS, encoding="utf-8")
    return folder


def steps_project(folder: Path, agent: str, graph: str) -> Path:
    """`folder` with the custom agent file `custom_agents/steps.py` (`agent`) and the workflow `steps.csv` (`graph`,
    dedented): what a test's `Replica` processes serve."""
    (folder / "custom_agents").mkdir(exist_ok=True)
    (folder / "custom_agents" / "steps.py").write_text(agent, encoding="utf-8")
    (folder / "steps.csv").write_text(textwrap.dedent(graph).lstrip(), encoding="utf-8")
    return folder


class Replica(served.Served):
    """One `agentmap serve steps.csv --checkpoint CHECKPOINT EXTRA...` process of `folder` on a free port, with none
    of the test process's AGENTMAP_ settings; `env` is added to its environment."""

    def __init__(self, folder: Path, checkpoint: str, *extra: str, env: Mapping[str, str] | None = None) -> None:
        clean = clean_env()
        super().__init__("steps.csv", "--checkpoint", checkpoint, *extra, cwd=folder, env={**clean, **(env or {})})


def holding(url: str, run_id: str, replicas: list[Replica]) -> Replica:
    """The replica whose process holds the run (its owner names the process id)."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT owner FROM agentmap_runs WHERE run_id = %s", (run_id,)).fetchone()
    assert row is not None and row[0]
    pid = int(str(row[0]).split(":")[1])
    return next(r for r in replicas if r.proc is not None and r.proc.pid == pid)


@contextmanager
def serving(*targets: str | Path, **config: Any) -> Iterator[str]:
    """The real server (uvicorn) on 127.0.0.1 and a free port, serving `targets`; yields its URL."""
    from agentmap.server import ServeConfig, background

    with background(ServeConfig(targets=tuple(str(t) for t in targets), **config)) as url:
        yield url


class Receiver:
    """An HTTP server on 127.0.0.1 that records every POST and answers the statuses it is told, then 200
    (a POST to a path in `held` is answered only once `release` is set)."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, str], bytes]] = []
        self.answers: list[int] = []
        self.held: set[str] = set()
        self.release = threading.Event()
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver._changed:
                    receiver.got.append((self.path, dict(self.headers.items()), body))
                    status = receiver.answers.pop(0) if receiver.answers else 200
                    receiver._changed.notify_all()
                if self.path in receiver.held:
                    receiver.release.wait(scaled(30))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def deliveries(self, path: str, count: int, within: float = 20.0) -> list[tuple[dict[str, str], dict[str, Any]]]:
        """The first `count` deliveries to `path` (headers and JSON body), waiting for them up to `within` s (of an
        idle machine: scaled, tests/timing.py)."""
        give_up = deadline(within)
        with self._changed:
            while True:
                found = [(h, json.loads(b)) for p, h, b in self.got if p == path]
                if len(found) >= count:
                    return found[:count]
                left = give_up - time.monotonic()
                assert left > 0, f"{len(found)} of {count} deliveries to {path} arrived: {self.got}"
                self._changed.wait(left)


def paused_purchase(client: Any, request: str) -> str:
    """A new thread of `Purchase` (`durable_graphs.PURCHASE_A`) started with `request` and paused at Review; its id."""
    thread = client.threads.create()["thread_id"]
    paused = client.runs.wait(thread, "Purchase", input={"request": request})
    assert [i["value"]["node"] for i in paused["__interrupt__"]] == ["Review"], paused
    return str(thread)


def approved(client: Any, thread: str) -> tuple[dict[str, Any], set[str]]:
    """Answer the `Purchase` thread's question yes: its final values and the nodes its run ran."""
    parts = list(client.runs.stream(thread, "Purchase", command={"resume": "yes"}, stream_mode=["values", "nodes"]))
    ran = {p.data["node"] for p in parts if p.event == "nodes" and p.data["status"] == "succeeded"}
    values: dict[str, Any] = [p.data for p in parts if p.event == "values"][-1]
    return values, ran
