"""A scripted Anthropic-shaped server (the Messages API) on 127.0.0.1, for tests that drive the real
`ChatAnthropic` (`langchain-anthropic`).

Usage (importable from any test under tests/llm)::

    from anthropic_stub import AnthropicStub
    from openai_stub import streamed, text

    with AnthropicStub() as stub:
        stub.script(text("Hello.", usage=(1000, 200, 400)))   # input, output, cache-read input tokens
        ...   # Context {"model": "anthropic:claude-sonnet-4-5", "base_url": stub.base_url}

The script, the replies (`text`, `streamed` with `gate`), `requests` and `sent` are the OpenAI stub's; each
POST (`/v1/messages`) is answered as the Messages API answers: a `message` with `content` blocks and `usage`
(`input_tokens` not counting the prompt read from the cache, `cache_read_input_tokens`), or for `"stream":
true` the events `message_start`, `content_block_start`, one `content_block_delta` per piece,
`content_block_stop`, `message_delta` (the usage) and `message_stop`.
"""

from __future__ import annotations

import json
from typing import Any

from openai_stub import OpenAIStub, Reply

__all__ = ["AnthropicStub"]


class AnthropicStub(OpenAIStub):
    """The server; a context manager that starts it on a free port and stops it on exit."""

    @property
    def base_url(self) -> str:
        """The Anthropic base URL of this server (the client adds `/v1/messages`)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        prompt, completion, *cached = reply.usage
        read = cached[0] if cached else 0
        return {
            "id": f"msg_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stub"),
            "content": [{"type": "text", "text": reply.content or ""}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": prompt - read,
                "output_tokens": completion,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": 0,
            },
        }

    def _events(self, body: dict[str, Any], reply: Reply) -> list[bytes]:
        message = self._completion(body, reply)
        usage, texts = message["usage"], reply.pieces or (reply.content or "",)
        start = message | {"content": [], "stop_reason": None, "usage": usage | {"output_tokens": 1}}
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
        ]  # fmt: skip
        deltas = [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": t}}) for t in texts]  # fmt: skip
        events += [
            *deltas,
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": usage}),  # the whole usage, as the API sends it now
            ("message_stop", {"type": "message_stop"}),
        ]  # fmt: skip
        sent = [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]
        return [b"".join(sent[:3]), *sent[3:]]  # the start and the first piece at once: `gate` holds the rest
