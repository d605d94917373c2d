"""A stream that reconnects with `Last-Event-ID` goes on after the last event it got, on the same replica or on
another one: real `agentmap serve` processes driven by langgraph-sdk."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import Replica, holding, steps_project
from timing import scaled, until

sdk = pytest.importorskip("langgraph_sdk")
from langgraph_sdk.errors import UnprocessableEntityError  # noqa: E402

pytestmark = pytest.mark.slow

_AGENT = '''
import time
from pathlib import Path

from agentmap import BaseAgent


class GateAgent(BaseAgent):
    """With Context `gate`, waits (a minute at most) until the file `open_NODE` exists: the test says when."""

    def process(self, inputs):
        if self.context.get("gate"):
            gate, deadline = Path(f"open_{self.name}"), time.monotonic() + 60
            while not gate.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return self.name
'''

_GRAPH = """
GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge
Steps,One,GateAgent,,topic,one,Two
Steps,Two,GateAgent,"{""gate"": true}",one,two,Three
Steps,Three,GateAgent,,two,three,Four
Steps,Four,GateAgent,"{""gate"": true}",three,four,
"""

Event = tuple[str, Any, str | None]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return steps_project(tmp_path, _AGENT, _GRAPH)


def _parts(stream: Any) -> list[Event]:
    return [(p.event, p.data, p.id) for p in stream]


def _start(project: Path, url: str) -> tuple[str, str]:
    """A run of Steps on a new thread, held at node Two until the test opens it."""
    for gate in ("open_Two", "open_Four"):
        (project / gate).unlink(missing_ok=True)
    client = sdk.get_sync_client(url=url, api_key=None)
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "Steps", input={"topic": "t"}, stream_mode=["updates", "values"])
    return tid, run["run_id"]


def _interrupted(project: Path, tid: str, run_id: str, join_on: str, resume_on: str) -> list[Event]:
    """The run's events as a client gets them that joins on `join_on`, drops the stream after node One's update,
    and reconnects on `resume_on` with the id of the last event it got (node Two runs while it is away)."""
    stream = sdk.get_sync_client(url=join_on, api_key=None).runs.join_stream(tid, run_id)
    got: list[Event] = []
    for part in stream:
        got.append((part.event, part.data, part.id))
        if part.event == "updates" and "One" in part.data:
            break
    stream.close()  # the connection is dropped
    (project / "open_Two").touch()  # the run goes on while the client is away: node Two, then Three
    last = got[-1][2]
    assert last is not None, got
    resumed = sdk.get_sync_client(url=resume_on, api_key=None).runs.join_stream(tid, run_id, last_event_id=last)
    for part in resumed:
        got.append((part.event, part.data, part.id))
        (project / "open_Four").touch()
    return got


def _follow(url: str, tid: str, run_id: str, into: list[Event]) -> threading.Thread:
    def follow() -> None:
        for part in sdk.get_sync_client(url=url, api_key=None).runs.join_stream(tid, run_id):
            into.append((part.event, part.data, part.id))

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    return follower


def _checked(got: list[Event], whole: list[Event]) -> None:
    """`got` is `whole`, each event once and in order, with the same ids."""
    assert [e[:2] for e in got] == [e[:2] for e in whole]
    assert [e[2] for e in got] == [e[2] for e in whole]
    assert len({e[2] for e in got}) == len(got)  # every event has an id of its own
    assert [next(iter(e[1])) for e in got if e[0] == "updates"] == ["One", "Two", "Three", "Four"]


def _refused(url: str, tid: str, run_id: str, last_event_id: str) -> dict[str, Any]:
    answer = httpx.get(
        f"{url}/threads/{tid}/runs/{run_id}/stream", headers={"Last-Event-ID": last_event_id}, timeout=scaled(30)
    )
    assert answer.status_code == 422, answer.text
    body: dict[str, Any] = answer.json()
    assert body["code"] == "bad-event-id" and "Last-Event-ID" in body["message"] and body["hint"]
    return body


def test_a_stream_resumed_with_its_last_event_id_gets_the_rest_once_in_order(
    project: Path, replicas: list[Replica], tmp_path: Path
) -> None:
    server = Replica(project, str(tmp_path / "runs.db")).start()
    replicas.append(server)
    tid, run_id = _start(project, server.url)
    whole: list[Event] = []
    follower = _follow(server.url, tid, run_id, whole)  # an uninterrupted stream of the same run
    until(lambda: any(e[0] == "metadata" for e in whole), 30, "the uninterrupted stream got nothing")
    got = _interrupted(project, tid, run_id, server.url, server.url)
    follower.join(scaled(60))
    _checked(got, whole)
    client = sdk.get_sync_client(url=server.url, api_key=None)
    assert _status(server.url, tid, run_id) == "success"
    assert _parts(client.runs.join_stream(tid, run_id)) == whole  # kept after the run ended
    assert _parts(client.runs.join_stream(tid, run_id, last_event_id=whole[3][2])) == whole[4:]

    # ids that are not this run's are refused, naming the header; a run's own last id resumes with nothing
    tid2, run2 = _start(project, server.url)
    _running(server.url, tid2, run2)
    _refused(server.url, tid2, run2, "nonsense")
    _refused(server.url, tid2, run2, got[-1][2] or "")  # the first run's
    _refused(server.url, tid2, run2, f"{run2}.1.999")  # beyond its events
    with pytest.raises(UnprocessableEntityError):
        list(sdk.get_sync_client(url=server.url, api_key=None).runs.join_stream(tid2, run2, last_event_id="x.1"))
    (project / "open_Two").touch()
    (project / "open_Four").touch()


def _status(url: str, tid: str, run_id: str) -> str:
    return str(sdk.get_sync_client(url=url, api_key=None).runs.get(tid, run_id)["status"])


def _running(url: str, tid: str, run_id: str) -> None:
    until(lambda: _status(url, tid, run_id) == "running", 30, f"run {run_id} never started")


@pytest.mark.postgres
def test_a_stream_resumes_on_the_other_replica_and_after_the_run_ended(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    a = Replica(project, postgres_url)
    b = Replica(project, postgres_url)
    replicas.extend([a.start(), b.start()])
    for leave_on_holder in (True, False):
        tid, run_id = _start(project, a.url)
        _running(a.url, tid, run_id)
        holder = holding(postgres_url, run_id, replicas)
        other = b if holder is a else a
        first, then = (holder, other) if leave_on_holder else (other, holder)
        got = _interrupted(project, tid, run_id, first.url, then.url)
        assert _status(a.url, tid, run_id) == "success"
        whole = _parts(sdk.get_sync_client(url=holder.url, api_key=None).runs.join_stream(tid, run_id))
        _checked(got, whole)  # the events of an uninterrupted stream, kept in the run store after the run
        assert _parts(sdk.get_sync_client(url=other.url, api_key=None).runs.join_stream(tid, run_id)) == whole
        middle = whole[3][2] or ""
        later = sdk.get_sync_client(url=other.url, api_key=None).runs.join_stream(tid, run_id, last_event_id=middle)
        assert _parts(later) == whole[4:]  # after the run ended too
    _refused(a.url, tid, run_id, f"{run_id}.1.9999")  # beyond its events
    _refused(b.url, tid, run_id, f"{run_id}.7.0")  # an attempt it never had
    _refused(b.url, tid, run_id, f"{run_id}.1")


class Proxy:
    """A TCP proxy to a local port whose open connections the test cuts (as a load balancer or a network would)."""

    def __init__(self, port: int) -> None:
        self.port = port
        """Where new connections go (a test moves it, as a load balancer sends a reconnect to another replica)."""
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.port))
            with self.lock:
                self.open += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        """Drop every connection open now."""
        with self.lock:
            cut, self.open = self.open, []
        for conn in cut:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def close(self) -> None:
        self.listener.close()
        self.cut()


def test_the_sdk_reconnects_a_dropped_run_stream_on_its_own_and_misses_nothing(
    project: Path, replicas: list[Replica], tmp_path: Path
) -> None:
    server = Replica(project, str(tmp_path / "runs.db")).start()
    replicas.append(server)
    proxy = Proxy(server.port)
    try:
        client = sdk.get_sync_client(url=proxy.url, api_key=None)
        tid = client.threads.create()["thread_id"]
        got: list[Event] = []
        for part in client.runs.stream(tid, "Steps", input={"topic": "t"}, stream_mode=["updates", "values"]):
            got.append((part.event, part.data, part.id))
            if part.event == "updates" and "One" in part.data:
                proxy.cut()  # the connection drops mid-run; the SDK reconnects to the stream's Location
                (project / "open_Two").touch()
                (project / "open_Four").touch()
        run_id = got[0][1]["run_id"]
        assert _status(server.url, tid, run_id) == "success"
        whole = _parts(sdk.get_sync_client(url=server.url, api_key=None).runs.join_stream(tid, run_id))
        _checked(got, whole)
    finally:
        proxy.close()


@pytest.mark.postgres
def test_the_sdk_reconnects_a_dropped_run_stream_to_another_replica(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    a = Replica(project, postgres_url)
    b = Replica(project, postgres_url)
    replicas.extend([a.start(), b.start()])
    balancer = Proxy(a.port)
    try:
        client = sdk.get_sync_client(url=balancer.url, api_key=None)
        tid = client.threads.create()["thread_id"]
        got: list[Event] = []
        for part in client.runs.stream(tid, "Steps", input={"topic": "t"}, stream_mode=["updates", "values"]):
            got.append((part.event, part.data, part.id))
            if part.event == "updates" and "One" in part.data:
                balancer.port = b.port  # the reconnect goes to the replica that does not run the run
                balancer.cut()
                (project / "open_Two").touch()
                (project / "open_Four").touch()
        run_id = got[0][1]["run_id"]
        assert _status(b.url, tid, run_id) == "success"
        whole = _parts(sdk.get_sync_client(url=a.url, api_key=None).runs.join_stream(tid, run_id))
        _checked(got, whole)
    finally:
        balancer.close()
