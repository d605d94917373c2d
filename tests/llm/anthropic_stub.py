"""A scripted Anthropic-shaped server (the Messages API) on 127.0.0.1, for tests that drive the real
`ChatAnthropic` (`langchain-anthropic`).

Usage (importable from any test under tests/llm)::

    from anthropic_stub import AnthropicStub
    from openai_stub import counted, streamed, text

    with AnthropicStub() as stub:
        stub.script(text("Hello.", usage=(1000, 200, 400)))   # input, output, cache-read (, cache-write) tokens
        stub.script(counted("Hello."))                         # usage counted from the request, as Anthropic does
        ...   # Context {"model": "anthropic:claude-sonnet-4-5", "base_url": stub.base_url}

The script, the replies (`text`, `counted`, `streamed` with `gate`), `requests` and `sent` are the OpenAI stub's;
each POST (`/v1/messages`) is answered as the Messages API answers: a `message` with `content` blocks and `usage`
(`input_tokens` not counting the prompt read from or written to the cache, `cache_read_input_tokens`,
`cache_creation_input_tokens` and its `cache_creation` by lifetime), or for `"stream": true` the events
`message_start`, `content_block_start`, one `content_block_delta` per piece, `content_block_stop`, `message_delta`
(the usage) and `message_stop`.

The prompt cache, as Anthropic's works: the prompt is its blocks in order (tools, system, messages), a token per 4
characters of text (`openai_stub.tokens`); a block marked `cache_control` ends a prefix that is cached when it has
at least `cache_minimum` tokens (1,024, the Sonnet and Opus minimum). A `counted` reply reads the longest marked
prefix a request to the same model cached before (`cache_read_input_tokens`) and writes the rest up to its last
marked prefix (`cache_creation_input_tokens`, 5-minute lifetime); a prefix shorter than the minimum is neither.
More than 4 marks, or a blank text block, is refused with 400, as the API refuses them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from openai_stub import OpenAIStub, Reply, error, tokens

__all__ = ["AnthropicStub"]


class AnthropicStub(OpenAIStub):
    """The server; a context manager that starts it on a free port and stops it on exit.

    Attributes:
        cache_minimum: The fewest tokens a marked prefix caches (Anthropic: 1,024 for Sonnet and Opus models).
    """

    def __init__(self, *, cache_minimum: int = 1024) -> None:
        self.cache_minimum = cache_minimum
        self._cached: set[str] = set()  # the digests of the prefixes held in the cache
        super().__init__()

    @property
    def base_url(self) -> str:
        """The Anthropic base URL of this server (the client adds `/v1/messages`)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _next(self, body: dict[str, Any]) -> Reply:
        problem = _refused(body)
        if problem is None:
            return super()._next(body)
        with self._lock:
            self.requests.append(body)
        return error(400, problem)

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        if reply.usage is None:
            fresh, completion, read, written = self._cache_usage(body, reply)
        else:
            prompt, completion, *cache = reply.usage
            read, written = (*cache, 0, 0)[:2]
            fresh = prompt - read - written
        return {
            "id": f"msg_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stub"),
            "content": [{"type": "text", "text": reply.content or ""}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": fresh,
                "output_tokens": completion,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
                "cache_creation": {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0},
            },
        }

    def _cache_usage(self, body: dict[str, Any], reply: Reply) -> tuple[int, int, int, int]:
        """(uncached input, output, cache read, cache write) tokens of a request, as Anthropic counts them."""
        digest = hashlib.sha256(str(body.get("model")).encode())
        total, marks = 0, []
        for text, marked in _blocks(body):
            digest.update(text.encode() + b"\0")
            total += tokens(text)
            if marked and total >= self.cache_minimum:
                marks.append((total, digest.hexdigest()))
        with self._lock:
            read = max((n for n, key in marks if key in self._cached), default=0)
            last = max((n for n, _ in marks), default=0)
            self._cached.update(key for _, key in marks)
        written = max(last - read, 0)
        return total - read - written, max(tokens(reply.content or ""), 1), read, written

    def _events(self, body: dict[str, Any], reply: Reply) -> list[bytes]:
        message = self._completion(body, reply)
        usage, texts = message["usage"], reply.pieces or (reply.content or "",)
        start = message | {"content": [], "stop_reason": None, "usage": usage | {"output_tokens": 1}}
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
        ]
        deltas = [
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
            )
            for t in texts
        ]
        events += [
            *deltas,
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": usage},
            ),  # the whole usage, as the API sends it now
            ("message_stop", {"type": "message_stop"}),
        ]
        sent = [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]
        return [b"".join(sent[:3]), *sent[3:]]  # the start and the first piece at once: `gate` holds the rest


def _blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request's prompt as (text, marked) blocks in the order Anthropic caches them: tools, system, messages
    (a text block is its text; any other block or tool its JSON without `cache_control`)."""
    found: list[tuple[str, bool]] = []

    def add(block: Any, role: str = "") -> None:
        if isinstance(block, str):
            found.append((role + block, False))
            return
        marked = "cache_control" in block
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        text = plain["text"] if plain.get("type") == "text" else json.dumps(plain, sort_keys=True)
        found.append((role + text, marked))

    for tool in body.get("tools") or ():
        add(tool)
    system = body.get("system")
    for block in [system] if isinstance(system, str) else system or ():
        add(block)
    for message in body.get("messages") or ():
        content = message.get("content")
        for block in [content] if isinstance(content, str) else content or ():
            add(block, f"{message.get('role')}: ")
    return found


def _refused(body: dict[str, Any]) -> str | None:
    """What the Messages API would answer 400 to in this request's cache marks and text blocks; None: nothing."""
    blocks: list[Any] = [*(body.get("tools") or ())]
    system = body.get("system")
    blocks += system if isinstance(system, list) else []
    for message in body.get("messages") or ():
        content = message.get("content")
        blocks += content if isinstance(content, list) else []
    if sum(1 for b in blocks if isinstance(b, dict) and "cache_control" in b) > 4:
        return "A maximum of 4 blocks with cache_control may be provided."
    if any(isinstance(b, dict) and b.get("type") == "text" and not str(b.get("text", "")).strip() for b in blocks):
        return "messages: text content blocks must contain non-whitespace text"
    return None
