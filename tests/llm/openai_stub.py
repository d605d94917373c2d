"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests that drive the real `ChatOpenAI`.

Usage (importable from any test under tests/llm: pytest puts this folder on `sys.path`)::

    from openai_stub import OpenAIStub, chat_model, counted, error, slow, text, tool_calls

    with OpenAIStub() as stub:
        stub.script(tool_calls(("add_task", {"title": "milk"})), text("Added."))
        model = chat_model(stub)              # ChatOpenAI(base_url=stub.base_url, max_retries=0)
        ...
        assert stub.requests[0]["temperature"] == 0.0

Each POST to `/v1/chat/completions` takes the next scripted reply; an exhausted script answers 500 with
"no scripted reply left", so a test that calls the model more than it planned fails loudly. Replies:
`text(...)`, `tool_calls(...)`, `error(status, ...)` (429, 500, ...), `slow(seconds, reply)`, `counted(...)`, or
any callable taking the request body and returning one of those.

A `counted` reply's usage is what the provider would count: the prompt's tokens (`tokens`: 4 characters each, the
tools' JSON first, then each message), and, as OpenAI caches a prompt of 1,024 tokens or more by itself, the
longest prefix it shares with an earlier prompt to the same model, from 1,024 tokens up in steps of 128
(`prompt_tokens_details.cached_tokens`). Streaming requests (`"stream": true`) are
answered as server-sent events, sent as they are written (chunked): `streamed("Hel", "lo")` sends one content
chunk per piece, `gate=` holds the pieces after the first until the test sets the event, and `sent` records when
(`time.perf_counter()`) each piece left the server.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from timing import scaled

__all__ = ["OpenAIStub", "Reply", "chat_model", "counted", "error", "slow", "streamed", "text", "tokens", "tool_calls"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a completion, or an HTTP error, optionally after a delay."""

    content: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    status: int = 200
    error_message: str = ""
    delay: float = 0.0
    usage: tuple[int, ...] | None = (10, 5)
    """(prompt, completion[, cached]) tokens; None: counted from the request as the provider counts them."""
    headers: dict[str, str] = field(default_factory=dict)
    pieces: tuple[str, ...] = ()
    gate: threading.Event | None = None


ScriptItem = Reply | Callable[[dict[str, Any]], Reply]


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up a kept-alive connection (at its exit) is no error worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def text(content: str, *, usage: tuple[int, ...] = (10, 5)) -> Reply:
    """A plain assistant reply; `usage` is (prompt_tokens, completion_tokens), or with a third number the prompt
    tokens read from the provider's cache (`prompt_tokens_details.cached_tokens`)."""
    return Reply(content=content, usage=usage)


def counted(content: str) -> Reply:
    """A plain assistant reply whose usage the server counts from the request, cache reads (and, for Anthropic,
    writes) included, as the provider would."""
    return Reply(content=content, usage=None)


def tokens(text: str) -> int:
    """What the test servers count `text` as: a token per 4 characters, rounded up."""
    return -(-len(text) // 4)


def streamed(*pieces: str, gate: threading.Event | None = None) -> Reply:
    """A text reply whose content a streaming request gets in `pieces`, one chunk each, the later ones only once
    `gate` (when given) is set."""
    return Reply(content="".join(pieces), pieces=pieces, gate=gate)


def tool_calls(*calls: tuple[str, dict[str, Any]], content: str | None = None) -> Reply:
    """A reply calling tools: each call is `(name, arguments)`."""
    return Reply(content=content, calls=tuple(calls))


def error(status: int, message: str = "stub error") -> Reply:
    """An HTTP error reply (429 for a rate limit, 500 for a server failure, ...)."""
    kind = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(status, "server_error")
    return Reply(status=status, error_message=message, headers={"x-error-type": kind})


def slow(seconds: float, reply: Reply | None = None) -> Reply:
    """`reply` (by default a text reply) sent only after `seconds`."""
    base = reply or text("finally")
    return Reply(base.content, base.calls, base.status, base.error_message, seconds, base.usage, base.headers)


class OpenAIStub:
    """The server; a context manager that starts it on a free port and stops it on exit.

    Attributes:
        requests: The JSON body of every request received, in order.
        base_url: `http://127.0.0.1:<port>/v1`, for `ChatOpenAI(base_url=...)`.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.sent: list[float] = []
        self._script: deque[ScriptItem] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._ids = itertools.count(1)
        self._prompts: dict[str, list[str]] = {}  # model -> the prompts it was sent (what OpenAI caches)
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="openai-stub", daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of this server."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, *replies: ScriptItem) -> None:
        """Queue replies, answered in order, one per request."""
        with self._lock:
            self._script.extend(replies)

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been used."""
        with self._lock:
            return len(self._script)

    def close(self) -> None:
        """Stop the server (slow replies in progress are cut short)."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=scaled(5))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- serving -------------------------------------------------------------------------------

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            item = self._script.popleft() if self._script else None
        if item is None:
            return error(500, "no scripted reply left")
        return item(body) if callable(item) else item

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for name, args in reply.calls
            ]
        prompt, completion, *cached = reply.usage or self._counted(body, reply)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if cached:
            usage["prompt_tokens_details"] = {"cached_tokens": cached[0]}
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.calls else "stop"}],
            "usage": usage,
        }

    def _counted(self, body: dict[str, Any], reply: Reply) -> tuple[int, int, int]:
        """(prompt, completion, cached) tokens of a request as OpenAI counts them: its prompt cached from 1,024
        tokens of prefix shared with an earlier prompt to the same model, in steps of 128."""
        prompt = _prompt_text(body)
        with self._lock:
            seen = self._prompts.setdefault(str(body.get("model")), [])
            shared = max((_shared(prompt, earlier) for earlier in seen), default=0)
            seen.append(prompt)
        held = shared // 4
        cached = 0 if held < 1024 else 1024 + (held - 1024) // 128 * 128
        return tokens(prompt), max(tokens(reply.content or ""), 1), cached

    def _events(self, body: dict[str, Any], reply: Reply) -> list[bytes]:
        """The server-sent events answering a streaming request (the first content piece comes second)."""
        return _sse_events(self._completion(body, reply), reply.pieces)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = stub._next(body)
                if reply.delay and stub._closing.wait(reply.delay):
                    return
                try:
                    if reply.status != 200:
                        payload = {
                            "error": {
                                "message": reply.error_message,
                                "type": reply.headers.get("x-error-type", "server_error"),
                                "code": None,
                            }
                        }
                        self._send(reply.status, json.dumps(payload).encode(), "application/json")
                    elif body.get("stream"):
                        self._stream(stub._events(body, reply), reply.gate)
                    else:
                        self._send(200, json.dumps(stub._completion(body, reply)).encode(), "application/json")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def _send(self, status: int, data: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: list[bytes], gate: threading.Event | None) -> None:
                """Send the events as HTTP chunks, each as soon as it is written (the first content chunk, then
                the rest once `gate` is set)."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for index, event in enumerate(events):
                    if index == 1 and gate is not None:
                        while not gate.wait(0.05):
                            if stub._closing.is_set():
                                return
                    stub.sent.append(time.perf_counter())  # before the write: a client may read it at once
                    self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler


def _shared(one: str, other: str) -> int:
    """How many characters `one` and `other` begin with alike."""
    return next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))


def _prompt_text(body: dict[str, Any]) -> str:
    """A chat completion request's prompt as one text, in the order the model reads it: the tools, then each
    message's role and text."""
    parts = [json.dumps(t) for t in body.get("tools") or ()]
    for message in body.get("messages") or ():
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(f"{message.get('role')}: {content or ''}")
    return "\n".join(parts)


def _sse_events(completion: dict[str, Any], pieces: tuple[str, ...] = ()) -> list[bytes]:
    """A completion as the server-sent events a streaming client expects: one per content piece (the whole
    content when no pieces are given), the finish, the usage and `[DONE]`."""
    choice = completion["choices"][0]
    message = choice["message"]
    texts = pieces or (message["content"] or "",)
    deltas: list[dict[str, Any]] = [{"content": t} for t in texts]
    deltas[0]["role"] = "assistant"
    if "tool_calls" in message:
        deltas[-1]["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = [base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks += [
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        base | {"choices": [], "usage": completion["usage"]},
    ]
    return [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]


def chat_model(stub: OpenAIStub, **kwargs: Any) -> Any:
    """A real `ChatOpenAI` pointed at `stub` (dummy key, no retries); `kwargs` override its settings."""
    from langchain_openai import ChatOpenAI

    settings: dict[str, Any] = {"model": "gpt-stub", "api_key": "sk-test", "base_url": stub.base_url, "max_retries": 0}
    settings.update(kwargs)
    return ChatOpenAI(**settings)
