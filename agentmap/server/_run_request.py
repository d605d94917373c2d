"""A run request checked: the body against the graph and the thread (bound to the graph, made, or refused), the
version it runs (`_run_version.py`), the answer to a pause taken, its breakpoints and its input, into the
`RunRequest` the queue records.

The routes (`_run_routes.py`, through `_run_start.start_run`), the crons (`_crons.py`) and a run taken over from
another replica (`_rebuild.py`) go through `resolve_request`, so a request is checked the same way wherever it is
executed.
"""

from __future__ import annotations

import difflib
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError, ErrorCode
from agentmap.server._models import ApiError, RunCreate, check_json, check_thread_id, refuse_unsupported
from agentmap.server._records import ThreadRecord
from agentmap.server._run_auth import AUTH_KEYS, with_user
from agentmap.server._run_version import choose_version, thread_binding
from agentmap.server._runs import STREAM_MODES, RunRequest
from agentmap.server._threads import snapshot_of
from agentmap.server._users import Caller
from agentmap.server._webhooks import check_webhook

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._filters import Filter
    from agentmap.server._graphs import Assistant

__all__ = ["breakpoints", "check_inputs", "resolve_request", "stream_modes"]

_log = logging.getLogger("agentmap.server")


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
    config["configurable"] = with_user(configurable, caller, assistant)
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
    latest version (`_run_version.py`), which it is recorded with. `caller` is who runs it (its user goes into the
    run's config and record; its auth handlers were asked already, `_run_auth.admit_run`, whose filter `visible`
    hides the threads of others). `claimant` names who claims a resume's answer: a new run's own, or the one
    recorded with a run taken over (whose webhook was checked when it was accepted, maybe by another replica: it is
    called as recorded), and `revision` the revision that run was accepted with.
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
    version = choose_version(server, body, assistant, thread_id, ran=ran, revision=revision)
    view = version.assistant
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
    binding = thread_binding(record, view) if record is not None and thread_id is not None else None
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
        pinned=version.pinned,
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
