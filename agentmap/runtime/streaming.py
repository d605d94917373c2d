"""`TokenWriter`: the text of the LLM nodes of a run, written as the model streams it (`agentmap run --stream`).

A LangChain callback handler passed in the run's config (`callbacks`): chat models called inside a node stream
when it is there (it is a streaming handler, as LangGraph's `stream_mode="messages"` one is), and each reply is
written as `Node: text...` followed by a new line (replies of parallel branches that stream at once take turns,
each turn on a new line under its node's name); a reply that did not stream (a provider that does not, a call
the journal replays) is written whole when it ends. Calls tagged `nostream` and calls outside a node are skipped.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers._streaming import _StreamingCallbackHandler  # makes chat models stream

__all__ = ["TokenWriter"]

T = TypeVar("T")


class TokenWriter(BaseCallbackHandler, _StreamingCallbackHandler[Any]):
    """Writes each LLM node's reply with `write` as its tokens arrive.

    Args:
        write: Called with each piece of text (a `Node: ` heading, the tokens, the closing new line).
    """

    run_inline = True  # called in the model's own thread, in order

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._nodes: dict[UUID, str] = {}
        self._written: set[UUID] = set()
        self._current: UUID | None = None  # the reply whose line is being written
        self._lock = threading.Lock()  # parallel branches: one reply's piece at a time

    def tap_output_aiter(self, run_id: UUID, output: AsyncIterator[T]) -> AsyncIterator[T]:
        return output

    def tap_output_iter(self, run_id: UUID, output: Iterator[T]) -> Iterator[T]:
        return output

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        node = (metadata or {}).get("langgraph_node")
        if node and "nostream" not in (tags or ()):
            self._nodes[run_id] = str(node)

    def on_llm_new_token(
        self, token: str | list[str | dict[str, Any]], *, chunk: Any = None, run_id: UUID, **kwargs: Any
    ) -> None:
        node = self._nodes.get(run_id)
        token = token if isinstance(token, str) else str(getattr(chunk, "text", ""))
        if node is None or not token:
            return
        with self._lock:
            self._written.add(run_id)
            if self._current != run_id:  # a new reply, or one of parallel branches taking turns: a new line
                self._write(("\n" if self._current is not None else "") + f"{node}: ")
                self._current = run_id
            self._write(token)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id not in self._written and run_id in self._nodes:  # not streamed: the whole reply at once
            generation = response.generations[0][0] if response.generations and response.generations[0] else None
            text = generation.message.text if isinstance(generation, ChatGeneration) else ""
            self.on_llm_new_token(text, run_id=run_id)
        self.on_llm_error(None, run_id=run_id)

    def on_llm_error(self, error: BaseException | None, *, run_id: UUID, **kwargs: Any) -> None:
        """The reply ends (or breaks off): its line ends."""
        self._nodes.pop(run_id, None)
        self._written.discard(run_id)
        with self._lock:
            if self._current == run_id:
                self._write("\n")
                self._current = None
