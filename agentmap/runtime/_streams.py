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
from agentmap.runtime.fusion import STREAM_MARK

__all__ = ["clear_errors", "node_updates", "recursion_error", "run_until"]


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
        raise recursion_error((config or {}).get("recursion_limit")) from exc
    except InvalidUpdateError as exc:
        raise NodeError(
            f"two nodes running at the same time wrote the same state key: {exc}".split("\nFor trouble")[0],
            code=ErrorCode.PARALLEL_WRITE,
            hint="give each parallel branch its own Output_Field and combine them after the branches join",
        ) from exc


def recursion_error(limit: int | None) -> NodeError:
    """The `recursion-limit` error of a run stopped after `limit` steps; its hint offers four times as many."""
    raised = 4 * limit if limit else 500
    return NodeError(
        f"the run stopped after reaching the recursion limit{f' ({limit} steps)' if limit else ''}: a loop in "
        "the graph never reaches a node without a next node",
        code=ErrorCode.RECURSION_LIMIT,
        hint=f"check the loop's exit condition, or raise the limit: `--recursion-limit {raised}` on the command "
        f'line (run, resume), config={{"recursion_limit": {raised}}} in Python or in a served run\'s request',
    )
