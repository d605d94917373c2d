"""How the runner reads LangGraph's streams and errors: stopping between steps, per-node updates of fused
chains, and LangGraph's recursion and concurrent-update errors turned into AgentMap errors."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError, InvalidUpdateError

from agentmap.errors import ErrorCode, NodeError

__all__ = ["clear_errors", "node_updates", "run_until"]


def run_until(chunks: Any, stop: threading.Event) -> tuple[dict[str, Any], bool]:
    """The final values (with `__interrupt__`) of a `values`+`updates` stream, ended early once `stop` is set.

    Closing LangGraph's stream between steps finishes writing the last step's checkpoint.
    """
    final: dict[str, Any] = {}
    interrupts: list[Any] = []
    stopped = False
    with closing(chunks) as stream:
        for mode, chunk in stream:
            if mode == "updates":
                interrupts.extend(chunk.get("__interrupt__", ()) if isinstance(chunk, Mapping) else ())
                continue
            final = dict(chunk) if isinstance(chunk, Mapping) else final
            if stop.is_set():
                stopped = True
                break
    if interrupts:
        final["__interrupt__"] = tuple(interrupts)
    return final, stopped


def node_updates(chunks: Any, fused: Mapping[str, list[str]]) -> Iterator[Any]:
    """`updates` chunks as an unfused graph streams them: a fused chain's per-node custom chunks stand in for
    its one combined update (`Command` routing included, which LangGraph reports as the node's update)."""
    from agentmap.runtime.fusion import STREAM_MARK

    for mode, chunk in chunks:
        if mode == "custom":
            if isinstance(chunk, Mapping) and STREAM_MARK in chunk:
                yield {chunk[STREAM_MARK]: chunk["update"]}
        elif not (isinstance(chunk, Mapping) and len(chunk) == 1 and next(iter(chunk)) in fused):
            yield chunk


@contextmanager
def clear_errors(config: RunnableConfig | None) -> Iterator[None]:
    """Turn LangGraph's recursion and concurrent-update errors into actionable AgentMap errors.

    A run on a thread is marked as running in this process meanwhile (`agentmap.threads` shows it so).
    """
    thread = (config or {}).get("configurable", {}).get("thread_id")
    try:
        if thread is None:
            yield
        else:
            from agentmap.runtime.threads import running_here

            with running_here(str(thread)):
                yield
    except GraphRecursionError as exc:
        limit = (config or {}).get("recursion_limit")
        raise NodeError(
            f"the run stopped after reaching the recursion limit{f' ({limit})' if limit else ''}: a loop in the "
            "graph never reaches a node without a next node",
            code=ErrorCode.RECURSION_LIMIT,
            hint="check the loop's exit condition, or raise the limit: `agentmap run ... --recursion-limit 500`, "
            'or config={"recursion_limit": 500} in Python',
        ) from exc
    except InvalidUpdateError as exc:
        raise NodeError(
            f"two nodes running at the same time wrote the same state key: {exc}".split("\nFor trouble")[0],
            code=ErrorCode.PARALLEL_WRITE,
            hint="give each parallel branch its own Output_Field and combine them after the branches join",
        ) from exc
