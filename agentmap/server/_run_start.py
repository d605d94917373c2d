"""From a run request to an accepted run: the body checked against the graph and the thread, the answer to a
pause taken, the thread made way for (`multitask_strategy`), the run recorded and queued.

The routes (`_run_routes.py`) and a run taken over from another replica (`_rebuild.py`) go through
`resolve_request`, so a request is checked the same way wherever it is executed.
"""

from __future__ import annotations

import difflib
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from agentmap.errors import ErrorCode
from agentmap.server._models import ApiError, RunCreate, check_json, check_thread_id, refuse_unsupported
from agentmap.server._records import ThreadRecord
from agentmap.server._runs import STREAM_MODES, Run, RunRequest
from agentmap.server._threads import snapshot_of
from agentmap.server._users import Caller
from agentmap.server._versions import VERSION_FIELD, asked_version
from agentmap.server._webhooks import check_webhook

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._filters import Filter
    from agentmap.server._graphs import Assistant

__all__ = [
    "AUTH_KEYS",
    "QUEUED",
    "Admitted",
    "admit_run",
    "breakpoints",
    "check_inputs",
    "resolve_request",
    "start_run",
    "stream_modes",
]

AUTH_KEYS = ("langgraph_auth_user", "langgraph_auth_user_id", "langgraph_auth_permissions")
"""The `configurable` keys a run's user travels under, as LangGraph's server sets them: the server's alone (a
client's are dropped, so no request can claim to be another user)."""

_log = logging.getLogger("agentmap.server")

QUEUED = ("runs.create", "runs.create_batch")
"""Runs no client waits on here: any replica may claim them."""


def stream_modes(value: str | list[str] | None, default: tuple[str, ...] = ("values",)) -> tuple[str, ...]:
    if value is None:
        return default
    modes = (value,) if isinstance(value, str) else tuple(value)
    for mode in modes:
        if mode not in STREAM_MODES:
            raise ApiError(
                422,
                "not-supported",
                f"stream mode {mode!r} is not supported by agentmap serve",
                hint=f"use one or more of: {', '.join(STREAM_MODES)}",
            )
    return modes or ("values",)


def _resume(assistant: Assistant, command: dict[str, Any], thread_id: str, claimant: str | None) -> Any:
    """The `Command` that resumes a paused thread: the runtime's answer rule (`Thread.run_input`), each answer
    checked against its question as the client sent it (a refusal is 422 naming `command.resume`) and claimed
    (one answer per pause: a second one is `already-answered`, HTTP 409; `claimant` may claim it again). A thread
    that asks nothing is 409 `nothing-to-resume`."""
    from agentmap.errors import ConfigError

    for key in command:
        if key != "resume":
            raise ApiError(
                422,
                "not-supported",
                f"command {key!r} is not supported by agentmap serve",
                hint='resume a paused run with command={"resume": answer}',
            )
    snapshot = snapshot_of(assistant, thread_id)
    answer = command.get("resume")
    try:
        if snapshot is not None and (snapshot.interrupts or answer is not None):
            return assistant.app.thread(thread_id).run_input(answer, claimant=claimant, snapshot=snapshot)
    except ConfigError as exc:
        if exc.code == ErrorCode.ALREADY_ANSWERED:
            raise ApiError(409, ErrorCode.ALREADY_ANSWERED, exc.message, hint=exc.hint) from None
        for code in (ErrorCode.BAD_ANSWER, ErrorCode.AMBIGUOUS_RESUME):  # the answer does not fit: 422 naming it
            if exc.code == code:
                raise ApiError(422, code, f"command.resume: {exc.message}", hint=exc.hint) from None
        if exc.code not in ("not-paused", "nothing-to-resume"):
            raise
    raise ApiError(
        409,
        ErrorCode.NOTHING_TO_RESUME,
        f"thread {thread_id!r} has no paused run to resume",
        hint="threads.get_state(thread_id)['interrupts'] lists what a thread waits for",
    )


def _bind_thread(
    server: Server, body: RunCreate, assistant: Assistant, thread_id: str | None, visible: Filter | None
) -> tuple[str | None, bool, ThreadRecord | None]:
    """The run's thread (a new one for `on_completion="keep"`), whether it is stateless, and its record.

    A thread the run makes (`on_completion="keep"`, `if_not_exists="create"`) gets the run's metadata, as
    LangGraph's server gives it (so its owner, stamped by an auth handler, finds it again); another user's thread
    (one the user's filter `visible` hides) is not found; a thread bound to another graph is refused. The binding
    (`_bound`: the thread's metadata naming its graph and version) is saved only once the run is known to be good.
    """
    stateless = thread_id is None
    made = dict(body.metadata or {})
    if stateless and body.on_completion == "keep":
        thread_id, stateless = str(uuid.uuid4()), False
        server.store.threads.create(thread_id, made)
    if thread_id is None:
        return None, stateless, None
    record = server.store.threads.get(thread_id, visible)
    if record is None and body.if_not_exists == "create":
        record = server.store.threads.create(check_thread_id(thread_id), made)
    if record is None:
        record = server.thread(thread_id, visible)  # raises the 404
    bound = record.metadata.get("graph_id")
    if bound is not None and bound != assistant.graph_id:
        raise ApiError(
            409,
            "thread-graph-mismatch",
            f"thread {thread_id!r} runs graph {bound!r}, not {assistant.graph_id!r}",
            hint="create a new thread for this assistant",
        )
    return thread_id, stateless, record


def _bound(record: ThreadRecord, view: Assistant) -> dict[str, Any] | None:
    """The thread's metadata naming its graph and the version it runs, when that is news (None: nothing to save)."""
    wanted = {"graph_id": view.graph_id, "assistant_id": view.assistant_id, "assistant_version": view.version}
    if all(record.metadata.get(k) == v for k, v in wanted.items()):
        return None
    return {**record.metadata, **wanted}


def _may_move(body: RunCreate, chosen: Assistant, thread_id: str) -> None:
    """Let a run naming another version than its thread's go on from the thread's checkpoint (its latest, or the
    one it forks from) on that version, when moving the thread there is safe (`runtime.changes`): a thread that
    finished starts its next run on it; one that waits goes on there only when nothing it holds or waits at is
    gone or renamed. A pause is answered on the version that asked.

    Raises:
        ApiError: 409 `unsafe-move` or `needs-migration` (with the reasons and the lines of the map that would move
            it: `agentmap resume ID --migrate MAP`).
    """
    from agentmap.runtime.durable import Thread

    version = f"version {chosen.version}"
    if body.command is not None:
        raise ApiError(
            409,
            ErrorCode.UNSAFE_MOVE,
            f"{VERSION_FIELD}: thread {thread_id!r} waits on a question of another version than {version}; its answer "
            "goes to the version that asked",
            hint="answer without assistant_version (the thread finishes on its version), or move the thread first "
            f"(agentmap resume {thread_id} --latest)",
        )
    checkpoint_id = body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id")
    thread = Thread(chosen.app, thread_id, checkpoint_id)
    if not thread.snapshot().next:
        return  # it finished: its next run starts over on the version named, with the state it holds
    verdict = thread.plan_move()
    if verdict.verdict == "safe":
        return
    code = ErrorCode.UNSAFE_MOVE if verdict.verdict == "unsafe" else ErrorCode.NEEDS_MIGRATION
    lines = "; ".join(verdict.lines)
    raise ApiError(
        409,
        code,
        f"{VERSION_FIELD}: thread {thread_id!r} cannot go on at {version} ({verdict.verdict}): "
        + "; ".join(verdict.reasons),
        hint=f"let it finish on its own version (no assistant_version), or move it with agentmap resume {thread_id} "
        + (f"--migrate MAP, MAP holding: kind,old,new; {lines}" if lines else "--restart"),
    )


def _run_config(body: RunCreate, caller: Caller, assistant: Assistant) -> dict[str, Any]:
    """The run's LangGraph config: the body's, with the checkpoint to start from, and the user as LangGraph's server
    gives it to a graph (`langgraph_auth_user`, its id and permissions; with the assistant and graph ids, which
    LangGraph's `get_runtime().server_info` reads). The version the body names is the server's to read, not the
    graph's."""
    config = dict(body.config or {})
    configurable = {k: v for k, v in (config.get("configurable") or {}).items() if k not in AUTH_KEYS}
    configurable.pop("assistant_version", None)
    checkpoint_id = body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id")
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    user = caller.user
    if user is not None:
        configurable.update(zip(AUTH_KEYS, (user, user.identity, user.permissions), strict=True))
        configurable.setdefault("assistant_id", assistant.assistant_id)
        configurable.setdefault("graph_id", assistant.graph_id)
    config["configurable"] = configurable
    return config


def _run_input(body: RunCreate, assistant: Assistant, thread_id: str | None, what: str, claimant: str) -> Any:
    """The input checked against the graph, or the `Command` resuming the thread's paused run.

    No input on a thread stopped before a node (`interrupt_before`/`interrupt_after`), or from a checkpoint
    (`checkpoint_id`) with nodes left to run (a fork), continues it, as LangGraph's server does; on any other
    thread it starts a run with an empty input.
    """
    if body.command is None:
        if body.input is None and thread_id is not None:
            checkpoint_id = body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id")
            snapshot = snapshot_of(assistant, thread_id, checkpoint_id)
            if snapshot is not None and snapshot.next and not snapshot.interrupts:
                return None
        return assistant.check_input(body.input)
    if body.input is not None:
        raise ApiError(422, "bad-request", f"{what}: give input or command, not both")
    if thread_id is None:
        raise ApiError(422, ErrorCode.NOTHING_TO_RESUME, f"{what}: a stateless run has nothing to resume")
    return _resume(assistant, body.command, thread_id, claimant)


def resolve_request(
    server: Server,
    body: RunCreate,
    thread_id: str | None,
    what: str,
    *,
    caller: Caller,
    visible: Filter | None = None,
    claimant: str | None = None,
    revision: str | None = None,
) -> RunRequest:
    """Check a run's body against its assistant and thread; bind an unbound thread to the graph.

    The run takes the revision its thread runs, the version it names, or for a new thread (or none) the assistant's
    latest version (`_versions.py`), which it is recorded with. `caller` is who runs it (its user goes into the
    run's config and record; its auth handlers were asked already, `admit_run`, whose filter `visible` hides the
    threads of others). `claimant` names who claims a resume's answer: a new run's own, or the one recorded with a
    run taken over (whose webhook was checked when it was accepted, maybe by another replica: it is called as
    recorded), and `revision` the revision that run was accepted with.
    """
    if claimant is None and body.webhook is not None:
        check_webhook(body.webhook, server.config.webhook_hosts)
    claimant = claimant or uuid.uuid4().hex
    refuse_unsupported(body, what)
    for name in ("input", "command", "config", "metadata"):
        check_json(getattr(body, name), name)
    assistant = server.assistant(body.assistant_id)
    thread_id, stateless, record = _bind_thread(server, body, assistant, thread_id, visible)
    ran = record is not None and record.metadata.get("graph_id") is not None  # else no run of ours saved a step
    view = server.versions.for_run(assistant, thread_id if ran else None, revision)
    asked = asked_version(body.config)
    if asked is not None:  # the run names its version: it runs that one
        chosen = server.versions.named(assistant, asked)
        if ran and thread_id is not None and chosen.revision != view.revision:
            _may_move(body, chosen, thread_id)
        view = chosen
    config = _run_config(body, caller, view)
    run_input = _run_input(body, view, thread_id, what, claimant)
    metadata = dict(body.metadata or {})
    stops = breakpoints(body, view, stateless, what)  # the request's own mistakes first, then its input's
    warning = check_inputs(server, view, run_input, thread_id, what)
    if warning is not None:
        _log.warning("%s of %s on %s: %s", what, view.graph_id, thread_id or "no thread", warning)
        metadata["warnings"] = [*metadata.get("warnings", ()), warning]
    if view.version is not None:
        metadata["assistant_version"] = view.version
    binding = _bound(record, view) if record is not None and thread_id is not None else None
    if binding is not None and thread_id is not None:  # only once the run is known to be good
        server.store.threads.set_metadata(thread_id, binding)
    kwargs: dict[str, Any] = {}
    durability = body.durability or server.config.durability
    if durability is not None and not stateless:  # a stateless run writes no checkpoint
        kwargs["durability"] = durability
    kwargs.update(stops)
    return RunRequest(
        assistant=view,
        thread_id=thread_id,
        input=run_input,
        stream_modes=stream_modes(body.stream_mode, () if what == "runs.wait" else ("values",)),
        config=config,
        metadata=metadata,
        kwargs=kwargs,
        multitask_strategy=body.multitask_strategy or "enqueue",
        stateless=stateless,
        pinned=asked is not None,
        payload={
            "body": body.model_dump(mode="json", exclude_none=True),
            "thread_id": thread_id,
            "what": what,
            "claimant": claimant,
            "revision": view.revision,
            **({"user": caller.user.to_json()} if caller.user is not None else {}),
        },
        user_id=caller.identity,
    )


def breakpoints(body: RunCreate, assistant: Assistant, stateless: bool, what: str) -> dict[str, Any]:
    """`interrupt_before` / `interrupt_after` for LangGraph, once every node they name is known to pause there.

    Raises:
        ApiError: A stateless run (nothing would keep the paused run), a name that is no node of the graph,
            or a node run inside a fused chain (it is not a step of its own to stop at).
    """
    found: dict[str, Any] = {}
    nodes = [n.name for n in assistant.app.spec.nodes]
    fused = {name for chain in assistant.app.fused.values() for name in chain}
    for key in ("interrupt_before", "interrupt_after"):
        names = getattr(body, key)
        if not names:
            continue
        if stateless:
            raise ApiError(
                422,
                "not-supported",
                f"{what}: {key} needs a thread to keep the paused run",
                hint="create a thread (threads.create) and run on it",
            )
        for name in nodes if names == "*" else names:
            if name not in nodes:
                close = difflib.get_close_matches(name, nodes, n=1)
                raise ApiError(
                    422,
                    "bad-request",
                    f"{what}: {key} names {name!r}, which is no node of graph {assistant.graph_id!r}"
                    + (f"; did you mean {close[0]!r}?" if close else ""),
                    hint=f"nodes: {', '.join(nodes)}",
                )
            if name in fused and names != "*":
                raise ApiError(
                    422,
                    "not-supported",
                    f"{what}: node {name!r} runs inside a fused chain, so a run cannot stop {key[10:]} it",
                    hint="serve the workflow without chain fusion to stop at every node",
                )
        found[key] = names if names == "*" else list(names)
    return found


def check_inputs(
    server: Server, assistant: Assistant, run_input: Any, thread_id: str | None, what: str, where: str = "run"
) -> str | None:
    """What `--missing-inputs` says of a run input without an input no node writes (on a thread, its saved values
    count as given): refused (`error`), or the warning to record (`warn`); None when there is nothing to say.

    Raises:
        ApiError: 422 `missing-state` naming the keys, in `error` mode.
    """
    mode = server.config.missing_inputs
    if not isinstance(run_input, Mapping) or mode == "ignore":
        return None
    found = assistant.app.check_state(run_input, thread_id=thread_id)
    if found is None:
        return None
    if mode == "error":
        hint = found.hint(f"the {where}'s input")
        raise ApiError(422, ErrorCode.MISSING_STATE, f"{what}: {found.message}", hint=hint)
    return found.message


@dataclass(frozen=True, slots=True)
class Admitted:
    """A run request the caller's auth handlers let through: the body as they left it (its metadata edited), the
    filter of the threads the caller sees, and the run's id (the one the handler was shown)."""

    body: RunCreate
    visible: Filter | None
    run_id: str


async def admit_run(server: Server, body: RunCreate, thread_id: str | None, caller: Caller) -> Admitted:
    """Ask the caller's `threads.create_run` handler about a run (the value LangGraph gives it: the thread, the
    assistant, the run's id, status, metadata, multitask strategy, `if_not_exists`, and its `kwargs`); what it left.

    Raises:
        ApiError: The handler refused (403, its status) or failed (500); for a run that makes way for itself
            (`interrupt`, `rollback`), 404 when the thread is another user's.
    """
    run_id = str(uuid.uuid4())
    value: dict[str, Any] = {
        "thread_id": thread_id,
        "assistant_id": body.assistant_id,
        "run_id": run_id,
        "status": "pending",
        "metadata": dict(body.metadata or {}),
        "prevent_insert_if_inflight": body.multitask_strategy == "reject",
        "multitask_strategy": body.multitask_strategy or "enqueue",
        "if_not_exists": body.if_not_exists or "reject",
        "after_seconds": 0,
        "kwargs": body.model_dump(include={"input", "command", "config", "stream_mode", "webhook"}, exclude_none=True),
    }
    visible = await caller.decide("threads", "create_run", value)
    metadata = value.get("metadata")
    if isinstance(metadata, Mapping) and metadata != (body.metadata or {}):
        body = body.model_copy(update={"metadata": dict(metadata)})  # what the handler stamped is the run's
    if thread_id is not None and visible is not None and body.multitask_strategy in ("interrupt", "rollback"):
        await run_in_threadpool(server.thread, thread_id, visible)  # no other user's runs are stopped: a 404
    return Admitted(body, visible, run_id)


async def start_run(server: Server, body: RunCreate, thread_id: str | None, what: str, caller: Caller) -> Run:
    """Start a run for `caller` (`_users.Caller`: its auth handlers asked, its user in the run): what the run routes,
    `/mcp`, `/a2a` and the AG-UI endpoint call.

    Raises:
        ApiError: The request does not fit (422), the thread is not found or another user's (404), busy for
            `reject` (409), refused by the auth handlers (403, their status, 500), or over the caller's quota (429).
    """
    admitted = await admit_run(server, body, thread_id, caller)
    body = admitted.body
    if thread_id is not None and body.multitask_strategy in ("interrupt", "rollback"):
        body = await _take_over(server, body, thread_id)
    on_loop = body.command is None and body.input is not None  # reads only the small thread table: stay on the loop
    assistant = server.assistant(body.assistant_id)
    if on_loop and thread_id is not None:  # unless it reads the thread's checkpoint (its revision, its values)
        record = server.store.threads.get(thread_id)
        on_loop = record is None or record.metadata.get("graph_id") is None  # a thread that never ran
    if on_loop and thread_id is not None and isinstance(body.input, Mapping):
        on_loop = assistant.app.check_state(body.input) is None
    if on_loop:  # nor compiles a version this replica has not compiled yet
        on_loop = asked_version(body.config) is None and server.versions.latest_compiled(assistant)
    if on_loop:
        request = resolve_request(server, body, thread_id, what, caller=caller, visible=admitted.visible)
    else:  # a resume (or a continue) reads the checkpoint, which may wait on the checkpointer's lock
        request = await run_in_threadpool(
            lambda: resolve_request(server, body, thread_id, what, caller=caller, visible=admitted.visible)
        )
    reject = bool(request.thread_id) and request.multitask_strategy == "reject"
    run = await server.runs.acceptor.submit(
        request, here=what not in QUEUED, reject_if_busy=reject, run_id=admitted.run_id
    )
    if run is None:
        raise ApiError(
            409,
            ErrorCode.THREAD_BUSY,
            f"thread {request.thread_id!r} has a run in progress",
            hint="wait for it (runs.join), or send multitask_strategy='enqueue' to queue this run",
        )
    return run


async def _take_over(server: Server, body: RunCreate, thread_id: str) -> RunCreate:
    """Make way for a run sent with `interrupt` or `rollback` on a thread that has runs (on any replica).

    `interrupt`: they stop after the step they are in (ending `interrupted`, their steps kept) and this run
    comes next. `rollback`: they stop, their records are deleted, and this run starts from the checkpoint the
    first of them started from (their steps are left off the thread's state; a thread they began is emptied).
    """
    strategy = body.multitask_strategy
    stopped = await server.runs.acceptor.stop_thread(
        thread_id, f"replaced by a newer run (multitask_strategy={strategy!r})"
    )
    if strategy == "interrupt" or not stopped:
        return body
    for run_id in stopped:
        await server.runs.acceptor.wait_record(thread_id, run_id)
    before = await run_in_threadpool(_checkpoint_before, server, thread_id, set(stopped))
    await server.runs.acceptor.delete_runs(stopped)
    if before is None or body.checkpoint_id or body.checkpoint:
        return body
    return body.model_copy(update={"checkpoint_id": before})


def _checkpoint_before(server: Server, thread_id: str, runs: set[str]) -> str | None:
    """The checkpoint the first of `runs` started from; None (the checkpoints deleted) when they began the thread."""
    record = server.thread(thread_id)
    assistant = server.thread_view(record)
    if assistant is None:
        return None
    graph = assistant.app.graph
    first = None
    for snapshot in graph.get_state_history({"configurable": {"thread_id": thread_id}}):  # newest first
        if snapshot.metadata and snapshot.metadata.get("run_id") in runs:
            first = snapshot
    if first is None:
        return None
    parent = (first.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    if parent is None:
        server.checkpointer.delete_thread(thread_id)
    return parent
