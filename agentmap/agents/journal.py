"""The call journal: every model and tool call a node makes, recorded in the checkpoint's database.

A node that crashed (or was killed) runs again from its start when its thread resumes. Before each model or
tool call, `journaled` looks the call up in the table `agentmap_journal` of the run's checkpoint database,
keyed by (thread, checkpoint namespace, step, node, task id, call index): LangGraph gives a task resumed from
the same checkpoint the same task id, and a node makes its calls in the same order, so the key of a call is
the same in the run that crashed and in the one that resumes it.

- finished, with the same request digest (sha256 of the request as canonical JSON): the recorded response is
  returned and nothing is called;
- finished or started with another digest (the prompt or the code changed): called again, and logged why;
- started, never finished: a model call (idempotent) is made again; a tool that is not idempotent is *in
  doubt*: the run pauses with a question (`done`, `retry` or `fail`, or `{"done": RESULT}`).
- queued (`agentmap batch --llm-batch`, `llm_batch.py`): a model call waiting for a provider batch job; the run
  pauses again until the batch writes its answer (`finished`) or its error (`failed`: the row's error, or with
  `--llm-batch-retry sync` a call made as usual). A run that does not batch makes a queued call as usual.

Nothing is journaled without a checkpointer (no thread), nor outside a node. SQLite and PostgreSQL savers keep
the table; the in-memory saver's entries are kept beside it in the process (`_journal_rows.py`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from agentmap._langgraph import CHECKPOINTER_KEY, TASK_ID_KEY, current_config
from agentmap.agents._checkpoint_saves import Key, await_saved, step_checkpoint, wait_saved
from agentmap.agents._journal_rows import TABLE, CallKey, JournalRow, JournalRows, rows_of
from agentmap.agents._journal_seal import check_task, opened, seal
from agentmap.agents._node_calls import NODE as _NODE
from agentmap.agents._node_calls import begin_node
from agentmap.agents.llm_batch import ERROR_KEY, WAIT_KIND, BatchCallFailed, Queued, mode_of
from agentmap.agents.questions import AnswerError, question

__all__ = [
    "TABLE",
    "InDoubt",
    "begin_node",
    "journaled",
    "journaled_sync",
    "tool",
    "unwrap_answer",
]

_ANSWERS = ("done", "retry", "fail")
_logger = logging.getLogger("agentmap.journal")
T = TypeVar("T")


def tool(func: Any = None, *, idempotent: bool = False) -> Any:
    """Mark a Python tool: `@tool(idempotent=True)` says a call made twice has the effect of one.

    A tool that is not idempotent (the default) and was started but never finished before a crash is in doubt
    on resume: the run asks whether it took effect instead of calling it again.
    """

    def mark(function: Any) -> Any:
        function.__agentmap_idempotent__ = idempotent
        return function

    return mark(func) if func is not None else mark


class InDoubt(RuntimeError):
    """A person answered `fail` to an in-doubt call: it did not take effect and must not be made again."""


@dataclass(frozen=True)
class _Where:
    rows: JournalRows
    key: CallKey
    checkpoint: Key | None  # the checkpoint the node's step started from: saved before a call is made
    announced: bool  # whether the saver announces its saves (agents/_checkpoint_saves.py)
    batching: str | None = None  # `on` or `sync` when the run sends its model calls in provider batch jobs


def _where() -> _Where | None:
    """Where the current call is journaled, or None (no node, no checkpointer, a saver of another kind)."""
    node = _NODE.get()
    if node is None:
        return None
    config = current_config()
    configurable = config.get("configurable") or {}
    saver = configurable.get(CHECKPOINTER_KEY)
    task_id = configurable.get(TASK_ID_KEY)
    thread = configurable.get("thread_id")
    rows = rows_of(saver)
    if rows is None and saver is not None:
        _say_unjournaled(saver)
    if rows is None or not task_id or thread is None:
        return None
    step = (config.get("metadata") or {}).get("langgraph_step", -1)
    index = node.calls
    node.calls += 1
    ns = str(configurable.get("checkpoint_ns") or "")
    key = CallKey(str(thread), ns, int(step), node.name, str(task_id), index)
    announced = bool(getattr(saver, "announces_saves", False))
    return _Where(rows, key, step_checkpoint(configurable), announced, mode_of(configurable))


_UNJOURNALED: set[type] = set()


def _say_unjournaled(saver: Any) -> None:
    """Warn once per kind of saver that keeps no journal: a crash would make that run's calls again."""
    if type(saver) in _UNJOURNALED:
        return
    _UNJOURNALED.add(type(saver))
    _logger.warning(
        "model and tool calls are not journaled with a %s: a run resumed after a crash makes them again; "
        "use a saver agentmap.checkpointer(...) or agentmap.async_checkpointer(...) makes (csv_specs/llm.md)",
        type(saver).__name__,
    )


def digest(request: Any) -> str:
    """sha256 of `request` as canonical JSON (sorted keys, no spaces; other values by their text)."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


async def journaled(
    kind: str,
    name: str,
    request: Any,
    call: Callable[[], Awaitable[T]],
    *,
    encode: Callable[[T], Any],
    decode: Callable[[Any], T],
    idempotent: bool,
    failed: Callable[[T], bool] = lambda _: False,
    unsure: Callable[[T], bool] = lambda _: False,
    done: Callable[[Any], T] | None = None,
    queue: Callable[[], Queued | None] | None = None,
) -> T:
    """Make `call` through the journal (see the module docstring); `request` is what its digest is made of.

    `encode` turns the response into JSON values, `decode` back. A response `failed` says is a failure is journaled
    `failed` (made again on a rerun); one `unsure` says may yet take effect (a tool that timed out, still running)
    stays `started` unless idempotent (a rerun asks); `done` makes an in-doubt call's response from a person's result.
    `queue` gives the call as a provider's batch API takes it (None: it has none): in a run that batches its model
    calls, a call with no answer yet is journaled `queued` and the run waits (`llm_batch.py`).

    Raises:
        InDoubt: A person answered `fail` to the question about this call.
        BatchCallFailed: The provider's batch job did not answer the call (and failed requests are not retried).
    """
    plan = _plan(kind, name, request, idempotent, (encode, decode, done), queue)
    if isinstance(plan, _Queue):
        if plan.where.checkpoint is not None:
            await await_saved(plan.where.checkpoint, *_store_check(plan.where))
        plan = plan.put()
    if not isinstance(plan, _Call):
        return plan.value  # type: ignore[no-any-return]
    if plan.where is None:
        return await call()
    if plan.where.checkpoint is not None:
        await await_saved(plan.where.checkpoint, *_store_check(plan.where))
    plan.begin()
    try:
        result = await call()
    except Exception:  # a cancelled or interrupted call stays `started`: a tool cut short is in doubt
        plan.end("failed", None)
        raise
    if plan.idempotent or not unsure(result):
        plan.end("failed" if failed(result) else "finished", encode(result))
    return result


def journaled_sync(
    kind: str,
    name: str,
    request: Any,
    call: Callable[[], T],
    *,
    encode: Callable[[T], Any],
    decode: Callable[[Any], T],
    idempotent: bool,
    queue: Callable[[], Queued | None] | None = None,
) -> T:
    """The synchronous twin of `journaled`."""
    plan = _plan(kind, name, request, idempotent, (encode, decode, None), queue)
    if isinstance(plan, _Queue):
        if plan.where.checkpoint is not None:
            wait_saved(plan.where.checkpoint, *_store_check(plan.where))
        plan = plan.put()
    if not isinstance(plan, _Call):
        return plan.value  # type: ignore[no-any-return]
    if plan.where is None:
        return call()
    if plan.where.checkpoint is not None:
        wait_saved(plan.where.checkpoint, *_store_check(plan.where))
    plan.begin()
    try:
        result = call()
    except Exception:  # a cancelled or interrupted call stays `started`: a tool cut short is in doubt
        plan.end("failed", None)
        raise
    plan.end("finished", encode(result))
    return result


@dataclass
class _Replay:
    value: Any


@dataclass
class _Queue:
    """A model call to journal `queued` for a provider batch job, once its step's checkpoint is saved (as a call
    made is: journaled before, a kill would leave an entry that a rerun, starting from an earlier checkpoint with
    another task id, never reads, and the batch would send it beside the rerun's own)."""

    where: _Where
    meta: tuple[str, str, str]
    queued: Queued
    idempotent: bool

    def put(self) -> _Call:
        """Journal the call `queued` and pause the run until the batch writes its answer (a pause answered
        otherwise: the call is made as usual)."""
        _put(self.where, self.meta, "queued", self.queued.to_dict(), time.time(), None)
        _wait(self.where, self.meta[1])
        return _Call(self.where, self.meta, self.idempotent)


@dataclass
class _Call:
    where: _Where | None
    meta: tuple[str, str, str] = ("", "", "")
    idempotent: bool = True
    started_at: float = 0.0
    started: float = 0.0

    def begin(self) -> None:
        """Journal the call as started before it is made: only where a rerun must know that it was (a call
        made again when cut short needs no record until it finishes)."""
        assert self.where is not None
        self.started_at = time.time()
        if not self.idempotent:
            _put(self.where, self.meta, "started", None, self.started_at, None)
        self.started = time.perf_counter()

    def end(self, status: str, response: Any) -> None:
        assert self.where is not None
        _put(self.where, self.meta, status, response, self.started_at, (time.perf_counter() - self.started) * 1000)


def _plan(
    kind: str,
    name: str,
    request: Any,
    idempotent: bool,
    codecs: tuple[Any, Any, Any],
    queue: Callable[[], Queued | None] | None = None,
) -> _Replay | _Call | _Queue:
    """Replay the journaled response, or say how to make the call (asking first when it is in doubt), or to queue it
    for a provider batch job when the run batches its model calls."""
    encode, decode, done = codecs
    where = _where()
    if where is None:
        return _Call(None)
    meta = (kind, name, digest({"kind": kind, "name": name, "request": request}))
    batching = where.batching if queue is not None else None
    found = where.rows.get(where.key)
    if found is None:
        check_task(where.rows, where.key)
    else:
        status = found.status
        response = opened(found)
        if found.digest != meta[2]:
            changed = "%s call %s of node %s: the request changed since it was journaled; calling again"
            _logger.info(changed, kind, name, where.key.node)
        elif status == "finished":
            value = decode(json.loads(response) if response is not None else None)
            where.rows.replayed(where.key, time.time())
            return _Replay(value)
        elif status == "queued" and batching:
            _wait(where, name)
        elif status == "failed" and batching and _batch_error(response) is not None:
            if batching == "on":
                _batch_failed(where, name, _batch_error(response))
            return _Call(where, meta, idempotent)  # --llm-batch-retry sync: made again as a normal call
        elif status == "started" and not idempotent:
            answer = _ask(name, request, where)
            if isinstance(answer, dict):
                result = (done or decode)(answer["done"])
                _put(where, meta, "finished", encode(result), time.time(), 0.0)
                return _Replay(result)
            if answer == "fail":
                _put(where, meta, "failed", None, time.time(), 0.0)
                raise InDoubt(f"{kind} {name!r} was answered `fail`: it did not take effect and is not made again")
    if batching and queue is not None:
        queued = queue()
        if queued is not None:
            return _Queue(where, meta, queued, idempotent)
    return _Call(where, meta, idempotent)


def _wait(where: _Where, name: str) -> None:
    """Pause the run while its model call waits for a provider batch job (a question of kind `llm-batch`, which
    the batch reads as waiting, never asks a person)."""
    from langgraph.types import interrupt

    text = f"model call {where.key.call_index} of node {where.key.node!r} ({name}) waits for a provider batch job"
    interrupt(question(where.key.node, WAIT_KIND, text, call_index=where.key.call_index))


def _batch_error(response: str | None) -> Any:
    """Why a provider batch job did not answer a call (a `failed` entry the batch wrote), or None."""
    try:
        return json.loads(response).get(ERROR_KEY) if response else None
    except (ValueError, AttributeError):
        return None


def _batch_failed(where: _Where, name: str, error: Any) -> None:
    """Fail the node whose model call the provider's batch job answered with an error."""
    raise BatchCallFailed(
        f"node {where.key.node!r}, model call {where.key.call_index} ({name}): {error}",
        hint="run the batch again with --redo-failed, or add --llm-batch-retry sync to make such calls as normal calls",
    )


def _store_check(where: _Where) -> tuple[Callable[[], bool], bool]:
    """How to ask the store whether the checkpoint of `where`'s step is saved, and whether its saver announces its
    saves (agents/_checkpoint_saves.py: once found saved, a checkpoint is remembered, so the node's later calls,
    and those it makes at the same time, cost a look-up)."""

    checkpoint = where.checkpoint
    assert checkpoint is not None

    def in_store() -> bool:
        return where.rows.saved(checkpoint)

    return in_store, where.announced


def _put(
    where: _Where, meta: tuple[str, str, str], status: str, response: Any, at: float, duration_ms: float | None
) -> None:
    text = None if response is None else json.dumps(response, ensure_ascii=False, default=str)
    text = seal(where.key, status, meta[2], text)
    finished = None if duration_ms is None else time.time()
    duration = None if duration_ms is None else round(duration_ms, 3)
    where.rows.put(JournalRow(where.key, *meta, status, text, at, finished, duration))


def _ask(name: str, request: Any, where: _Where) -> Any:
    """Pause the run with the in-doubt question; the checked answer (`retry`, `fail` or `{"done": RESULT}`)."""
    from langgraph.types import interrupt

    arguments = request.get("arguments") if isinstance(request, Mapping) else request
    shown = json.dumps(arguments, ensure_ascii=False, default=str)
    text = (
        f"did `{name}` with these arguments take effect? {shown} (it was started before the run stopped and "
        "never reported back): answer done (it did; --data '{\"done\": RESULT}' gives its result), retry (call "
        "it again) or fail (it did not; the call fails)"
    )
    payload = question(where.key.node, "journal", text, options=list(_ANSWERS), tool=name, arguments=arguments)
    return unwrap_answer(payload, interrupt(payload))


def unwrap_answer(payload: Mapping[str, Any], answer: Any) -> Any:
    """An in-doubt answer as `journaled` reads it: `retry`, `fail` or `{"done": RESULT}` (`done` alone: None).

    Raises:
        AnswerError: For anything else.
    """

    word = answer.strip().lower() if isinstance(answer, str) else answer
    if word == "done":
        return {"done": None}
    if word in ("retry", "fail"):
        return word
    if isinstance(answer, Mapping) and set(answer) == {"done"}:
        return dict(answer)
    raise AnswerError(
        f"node {payload.get('node', '?')!r} asks whether `{payload.get('tool')}` took effect; {answer!r} is not "
        "an answer to that",
        hint="answer done, retry or fail (or --data '{\"done\": RESULT}' to give the result of a call that took "
        "effect)",
    )
