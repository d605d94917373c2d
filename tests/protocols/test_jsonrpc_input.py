"""Bad JSON-RPC input, written by hand as raw bytes, to the real `agentmap mcp` process (stdio) and the real
`agentmap serve` endpoints `/mcp` and `/a2a`: every request that carries an id gets exactly one answer with the code
JSON-RPC 2.0 gives it (-32700 parse error and -32600 invalid request with id null, -32602 invalid params naming the
field), HTTP never answers 500, and the server still serves a normal call afterwards."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import served
from components import clean_env
from timing import deadline, scaled

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FLOWS = (
    "GraphName,Node,AgentType,Prompt,Description,Context,Input_Fields,Output_Field,Edge\n"
    "Quote,Price,template,{qty} x {item},Prices the order,,item|qty,quote,\n"
    'Publish,Review,human,Publish {draft}?,Asks to approve,"{""interaction_type"": ""approval""}",draft,approved,Done\n'
    "Publish,Done,echo,,,,approved|draft,result,\n"
)
DEEP = b"[" * 100_000 + b"]" * 100_000
HUGE = b"9" * 5000


def call(request_id: bytes, arguments: bytes, name: bytes = b"Quote") -> bytes:
    """A `tools/call` request written by hand (`request_id` and `arguments` as JSON text)."""
    return (
        b'{"jsonrpc": "2.0", "id": '
        + request_id
        + b', "method": "tools/call", "params": {"name": "'
        + name
        + b'", "arguments": '
        + arguments
        + b"}}"
    )


# (the message, the code and id of its one answer, what the answer's message starts with); None: no answer
BAD_MCP: list[tuple[bytes, tuple[int, int | None, str] | None]] = [
    (call(b"1", b'{"item": ' + DEEP + b', "qty": 1}'), (-32602, 1, "params.arguments.item[0][0]")),
    (call(b"2", b'{"item": "tea", "qty": ' + HUGE + b"}"), (-32602, 2, "params.arguments.qty is an integer of 5000")),
    (call(b"3", b'{"item": "\\ud800", "qty": 1}'), (-32602, 3, "params.arguments.item holds a lone surrogate")),
    (call(b'{"a": 1}', b'{"item": "tea", "qty": 1}'), (-32600, None, "id must be a text or an integer, not an object")),
    (call(b"null", b'{"item": "tea", "qty": 1}'), (-32600, None, "id must be a text or an integer, not null")),
    (call(b"4", b'{"item": "tea", "qty": 1e400}'), (-32602, 4, "params.arguments.qty is a number too large")),
    (call(b"5", b'{"item": "tea", "qty": NaN}'), (-32700, None, "the message is not JSON")),
    (
        b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "Qu',
        (-32700, None, "the message is not"),
    ),
    (call(b"7", b'{"item": "caf\xe9", "qty": 1}'), (-32700, None, "the message is not UTF-8 text")),  # Latin-1
    (b'[{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}]', (-32600, None, "a JSON-RPC message is one object")),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": [1]}', (-32602, 9, "params must be an object")),
    (b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"x": ' + DEEP + b"}}", None),  # no answer
]


@pytest.mark.parametrize(
    "arguments",
    [
        b'{"item": "\\ud83d\\ude00 tea"}',  # a surrogate pair (Python's json.dumps writes emoji so): Unicode
        b'{"item": "\\\\ud800"}',  # an escaped backslash before `ud800`: text, not a surrogate
        b'{"item": "' + b"9" * 5000 + b'"}',  # digits in a string
        b'{"qty": ' + b"9" * 4300 + b"}",  # as many digits as Python reads
        b'{"item": ' + b"[" * 96 + b"]" * 96 + b"}",  # 100 levels in all, the message's own object counted
        b'{"item": "[[[[' + b"[" * 200 + b'"}',  # brackets in a string are text
    ],
)
def test_what_json_rpc_allows_is_read_as_json_reads_it(arguments: bytes) -> None:
    from agentmap.protocols._jsonrpc import read_message

    message = call(b"1", arguments)
    assert read_message(message) == json.loads(message)


class Stdio:
    """`agentmap mcp FLOWS` started as a client starts it, spoken to in raw lines."""

    def __init__(self, folder: Path) -> None:
        (folder / "flows.csv").write_text(FLOWS, encoding="utf-8")
        env = clean_env()
        self.err = open(folder / "server.err", "w+b")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentmap", "mcp", "flows.csv"],
            cwd=folder,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
        )

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 60) -> dict[str, Any]:
        """The next message the server writes (an AssertionError after `timeout` seconds without one)."""
        assert self.proc.stdout is not None
        give_up = deadline(timeout)
        while not select.select([self.proc.stdout], [], [], 0.1)[0]:
            assert self.proc.poll() is None, self.log()
            assert time.monotonic() < give_up, f"no answer within {timeout} s: {self.log()}"
        line = self.proc.stdout.readline()
        assert line, self.log()
        found: dict[str, Any] = json.loads(line)
        return found

    def until(self, request_id: int) -> list[dict[str, Any]]:
        """Every message the server writes up to and including the answer to `request_id`."""
        found = [self.answer()]
        while found[-1].get("id") != request_id or "method" in found[-1]:
            found.append(self.answer())
        return found

    def initialize(self, capabilities: dict[str, Any] | None = None) -> None:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": capabilities or {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).encode())
        assert "result" in self.answer()
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def log(self) -> str:
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")[-3000:]

    def close(self) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(scaled(60))
        log = self.log()
        self.err.close()
        return log


@pytest.fixture
def stdio(tmp_path: Path) -> Iterator[Stdio]:
    server = Stdio(tmp_path)
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            server.close()


def test_bad_input_over_stdio_gets_one_answer_per_request_with_its_json_rpc_code(stdio: Stdio) -> None:
    stdio.initialize()
    for message, _ in BAD_MCP:
        stdio.send(message)
    stdio.send(b"x" * (65 << 20))  # a line over the 64 MiB a message may take: dropped whole, answered once
    stdio.send(call(b"99", b'{"item": "tea", "qty": "2"}'))
    *refused, done = stdio.until(99)
    expected = [answer for _, answer in BAD_MCP if answer is not None]
    expected.append((-32700, None, "a message longer than 67108864 bytes is not read"))
    assert [(r["error"]["code"], r["id"]) for r in refused] == [(code, rid) for code, rid, _ in expected], refused
    for answer, (_, _, text) in zip(refused, expected, strict=True):
        assert answer["error"]["message"].startswith(text), answer
    assert done["result"]["structuredContent"]["quote"] == "2 x tea"  # still serving
    assert "Traceback" not in stdio.close()


def test_a_refused_response_of_the_client_fails_the_call_that_waits_on_it(stdio: Stdio) -> None:
    stdio.initialize({"elicitation": {}})
    stdio.send(call(b"1", b'{"draft": "the post"}', name=b"Publish"))
    asked = stdio.answer()
    assert asked["method"] == "elicitation/create"
    reply = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"approved": "\\ud800"}}}
    stdio.send(json.dumps(reply).replace("\\\\ud800", "\\ud800").encode())  # a lone surrogate in the form
    (failed,) = stdio.until(1)
    assert failed["error"]["message"].startswith("the client's response was refused: result.content.approved holds")
    stdio.send(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')
    assert [t["name"] for t in stdio.until(2)[-1]["result"]["tools"]] == ["Quote", "Publish", "resume"]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[served.Served]:
    (tmp_path / "flows.csv").write_text(FLOWS, encoding="utf-8")
    env = clean_env()
    server = served.Served(ROOT / "graphs" / "hello_world.csv", "flows.csv", cwd=tmp_path, env=env).start()
    try:
        yield server
    finally:
        server.stop(signal.SIGTERM)
        assert server.proc is not None
        log = server.proc.communicate(scaled(5))[1]
        assert "Traceback" not in log, log[-3000:]


JSON = {"Content-Type": "application/json"}  # what every A2A client sends (the server refuses other bodies)


def test_bad_input_to_mcp_over_http_gets_its_json_rpc_code_and_never_a_500(serve: served.Served) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=serve.url, headers=headers, timeout=scaled(60)) as http:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        started = http.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        assert started.status_code == 200
        http.headers.update({"mcp-session-id": started.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"})
        assert (
            http.post("/mcp", content=b'{"jsonrpc": "2.0", "method": "notifications/initialized"}').status_code == 202
        )
        for message, expected in BAD_MCP:
            answer = http.post("/mcp", content=message)
            if expected is None:  # a notification: refused, not answered with a message
                assert answer.status_code == 400, answer.text
                continue
            code, request_id, text = expected
            assert answer.status_code == (200 if request_id is not None else 400), answer.text  # a request: answered
            body = answer.json()
            assert (body["error"]["code"], body["id"]) == (code, request_id), body
            assert body["error"]["message"].startswith(text), body
        done = http.post("/mcp", content=call(b"99", b'{"item": "tea", "qty": "2"}'))
        assert '"quote":"2 x tea"' in done.text  # still serving (an event stream with the one answer)


def test_bad_input_to_a2a_is_invalid_params_naming_the_field(serve: served.Served) -> None:
    pytest.importorskip("a2a")

    def send(parts: bytes, request_id: bytes = b"1") -> dict[str, Any]:
        message = b'{"role": "user", "messageId": "m1", "parts": ' + parts + b"}"
        body = b'{"jsonrpc": "2.0", "id": ' + request_id + b', "method": "message/send", "params": {"message": '
        answer = httpx.post(
            f"{serve.url}/a2a/HelloWorld", content=body + message + b"}}", headers=JSON, timeout=scaled(60)
        )
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    objects = b'{"a": ' * 40 + b"1" + b"}" * 40  # deeper than the SDK's protobuf Struct takes
    cases = [  # before: -32603 internal error, the first two with id null
        (b'[{"kind": "data", "data": {"name": ' + DEEP + b"}}]", "params.message.parts[0].data.name[0][0]"),
        (b'[{"kind": "data", "data": {"name": ' + objects + b"}}]", "params.message.parts[0].data.name.a.a"),
        (b'[{"kind": "data", "data": {"name": ' + HUGE + b"}}]", "params.message.parts[0].data.name is an integer"),
        (b'[{"kind": "text", "text": "\\ud800"}]', "params.message.parts[0].text holds a lone surrogate"),
        (
            b'[{"kind": "data", "data": {"name": "\\udc00"}}]',
            "params.message.parts[0].data.name holds a lone surrogate",
        ),
    ]
    for parts, text in cases:
        error = send(parts)
        assert (error["id"], error["error"]["code"]) == (1, -32602), error
        assert error["error"]["message"].startswith(text), error
    shapes = [  # before: -32600 with pydantic's whole report, and a traceback in the server's log
        (b'[{"kind": "nope", "text": "Ada"}]', "params.message.parts[0].kind: Input should be 'text' or 'file' or"),
        (b'[{"kind": "data", "data": [1]}]', "params.message.parts[0].data: Input should be a valid dictionary"),
        (b"[]", "graph 'HelloWorld' takes 1 input keys (name)"),  # fits the method: the graph's own answer
    ]
    for parts, text in shapes:
        error = send(parts)
        assert (error["id"], error["error"]["code"]) == (1, -32602), error
        assert error["error"]["message"].startswith(text), error
    body = b'{"jsonrpc": "2.0", "id": 5, "method": "tasks/get", "params": {}}'
    error = httpx.post(f"{serve.url}/a2a/HelloWorld", content=body, headers=JSON, timeout=scaled(60)).json()
    assert (error["id"], error["error"]["code"], error["error"]["message"]) == (5, -32602, "params.id: Field required")
    refused = send(b'[{"kind": "text", "text": "Ada"}]', request_id=b'{"a": 1}')
    assert (refused["id"], refused["error"]["code"]) == (None, -32600)
    assert send(b'[{"kind": "text", "text": "Ada"}]')["result"]["status"]["state"] == "completed"  # still serving
