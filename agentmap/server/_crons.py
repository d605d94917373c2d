"""Crons: routes to create, search, count, update and delete them, and the ticker that starts their runs.

A cron is a row of the run store: its schedule (a cron expression, read by croniter; a sixth field gives
seconds), the run body each tick starts, and `next_run`, the time of its next tick. Every replica looks once a
second for crons that are due; the run of a tick is accepted only together with moving `next_run` on from the
value that replica read (one transaction, `RunRows.accept`), so each tick starts one run however many replicas
serve, and the run is an ordinary accepted run (recorded, queued, taken over if its replica dies). Ticks missed
while no replica ran start one run, then the schedule goes on from now.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import APIRouter, Response

from agentmap.errors import AgentMapError, ErrorCode
from agentmap.server._auth import AuthUser
from agentmap.server._bodies import api_router
from agentmap.server._models import (
    ApiError,
    CronCreate,
    CronSearch,
    CronUpdate,
    RunCreate,
    check_json,
    refuse_unsupported,
)
from agentmap.server._quota import QuotaExceeded
from agentmap.server._records import CronChanges, CronRecord, Tick, now
from agentmap.server._run_request import breakpoints, check_inputs, resolve_request
from agentmap.server._users import Caller, CallerOf
from agentmap.server._webhooks import check_webhook

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._filters import Filter

__all__ = ["cron_routes", "tick_crons"]

_log = logging.getLogger("agentmap.server")

_SCHEDULE_HINT = (
    "five fields (minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5'), or six with seconds last "
    "(e.g. '* * * * * */10' for every ten seconds)"
)
_INSTALL = 'pip install "agentmap[serve]" (it includes croniter)'
_RUN_FIELDS = (
    "input",
    "config",
    "metadata",
    "interrupt_before",
    "interrupt_after",
    "multitask_strategy",
    "stream_mode",
    "durability",
    "checkpoint_during",
    "stream_subgraphs",
    "stream_resumable",
    "webhook",
)
"""The fields of a cron's body that go into the body of each run it starts."""


def _zone(name: str | None, what: str) -> Any:
    if name is None:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ApiError(
            422, "bad-request", f"{what}: timezone {name!r} is not an IANA time zone", hint="e.g. 'Europe/Paris'"
        ) from None


def _next_tick(schedule: str, zone: Any, after: float, end_time: str | None, what: str) -> int | None:
    """The first tick of `schedule` (in `zone`) after `after` (epoch seconds); None when it is past `end_time`."""
    try:
        from croniter import croniter
    except ImportError:  # an install from before crons were part of the extra
        raise ApiError(
            501, ErrorCode.MISSING_EXTRA, f"{what}: crons need croniter, which is not installed", hint=_INSTALL
        ) from None
    if not croniter.is_valid(schedule):
        raise ApiError(
            422,
            "bad-request",
            f"{what}: schedule {schedule!r} is not a cron expression",
            hint=f"schedule takes {_SCHEDULE_HINT}",
        )
    tick = int(croniter(schedule, datetime.fromtimestamp(after, zone)).get_next(float))
    if end_time is not None and tick > datetime.fromisoformat(end_time).timestamp():
        return None
    return tick


def _public(cron: CronRecord) -> dict[str, Any]:
    """A stored cron as LangGraph's server returns it (its user's identity, not the user it keeps for its runs)."""
    following = cron.next_run
    payload = {k: v for k, v in cron.payload.items() if k != "user"}
    return {
        "cron_id": cron.cron_id,
        "assistant_id": cron.assistant_id,
        "thread_id": cron.thread_id,
        "on_run_completed": cron.on_run_completed,
        "end_time": cron.end_time,
        "schedule": cron.schedule,
        "timezone": cron.payload.get("timezone"),
        "created_at": cron.created_at,
        "updated_at": cron.updated_at,
        "payload": payload,
        "user_id": (cron.payload.get("user") or {}).get("identity"),
        "next_run_date": datetime.fromtimestamp(following, UTC).isoformat() if following is not None else None,
        "metadata": cron.metadata,
        "enabled": cron.enabled,
    }


def _run_body(
    payload: dict[str, Any], cron_id: str | None, on_run_completed: str | None, tick: int | None = None
) -> RunCreate:
    """The body of the run a tick starts (its metadata names the cron and the tick, in UTC)."""
    fields = {k: payload[k] for k in _RUN_FIELDS if payload.get(k) is not None}
    fields["metadata"] = {**(fields.get("metadata") or {}), "cron_id": cron_id}
    if tick is not None:
        fields["metadata"]["cron_tick"] = datetime.fromtimestamp(tick, UTC).isoformat()
    fields["on_completion"] = on_run_completed
    return RunCreate(assistant_id=payload["assistant_id"], **fields)


def _check(
    server: Server, payload: dict[str, Any], thread_id: str | None, what: str, visible: Filter | None = None
) -> None:
    """Refuse, when the cron is made, a run body its ticks could not start (on a thread the caller's filter
    `visible` lets them run on)."""
    body = _run_body(payload, None, payload.get("on_run_completed"))
    refuse_unsupported(body, what)
    for name in ("input", "config", "metadata"):
        check_json(getattr(body, name), name)
    if body.webhook is not None:  # each tick's run posts to it: refused now, not at every tick
        check_webhook(body.webhook, server.config.webhook_hosts)
    assistant = server.assistant(body.assistant_id)
    assistant.check_input(body.input)
    if thread_id is not None:
        server.thread(thread_id, visible)
    breakpoints(body, assistant, thread_id is None and body.on_completion != "keep", what)
    check_inputs(server, assistant, body.input or {}, thread_id, what, "cron")  # refused now, not at every tick


def _matching(server: Server, cron: CronRecord, body: CronSearch) -> bool:
    wanted = server.assistants.get(body.assistant_id) if body.assistant_id is not None else None
    return (
        (body.assistant_id is None or (wanted is not None and wanted.assistant_id == cron.assistant_id))
        and (body.thread_id is None or cron.thread_id == body.thread_id)
        and (body.enabled is None or cron.enabled == body.enabled)
        and all(cron.metadata.get(k) == v for k, v in (body.metadata or {}).items())
    )


def _changes(server: Server, cron: CronRecord, body: CronUpdate) -> CronChanges:
    """The columns `crons.update` changes: the merged run body, and the next tick of the (new) schedule."""
    changes = body.model_dump(mode="json", exclude_unset=True)
    payload = {**cron.payload, **{k: v for k, v in changes.items() if k != "end_time"}}
    _check(server, payload, cron.thread_id, "crons.update")
    end_time = cron.end_time
    if "end_time" in body.model_fields_set:
        end_time = body.end_time.astimezone(UTC).isoformat() if body.end_time else None
    schedule, zone = payload["schedule"], _zone(payload.get("timezone"), "crons.update")
    fields: CronChanges = {
        "schedule": schedule,
        "end_time": end_time,
        "payload": payload,
        "next_run": _next_tick(schedule, zone, time.time(), end_time, "crons.update"),
    }
    if body.enabled is not None:
        fields["enabled"] = body.enabled
    if body.on_run_completed is not None:
        if cron.thread_id is not None:
            raise ApiError(
                422,
                "bad-request",
                "crons.update: on_run_completed is for crons without a thread; this one runs on its thread",
                hint="leave on_run_completed out",
            )
        fields["on_run_completed"] = body.on_run_completed
    if body.metadata is not None:
        fields["metadata"] = body.metadata
    return fields


def _thread_of_cron(caller: Caller, thread_id: str | None, assistant_id: str) -> Filter | None:
    """The filter of the threads the caller may start runs on (`threads.create_run`, as each tick does), when the
    cron runs on a thread."""
    if thread_id is None:
        return None
    value = {"thread_id": thread_id, "assistant_id": assistant_id, "metadata": {}, "status": "pending"}
    return caller.decide_now("threads", "create_run", value)


def cron_routes(server: Server) -> APIRouter:
    """The cron routes (each asks the caller's `crons` handlers; a cron keeps its creator's user for its runs)."""
    router = api_router(tags=["crons"])

    def create(body: CronCreate, thread_id: str | None, caller: Caller) -> dict[str, Any]:
        what = "crons.create" if thread_id is None else "crons.create_for_thread"
        refuse_unsupported(body, what)
        payload = body.model_dump(mode="json", exclude_none=True)
        payload["assistant_id"] = server.assistant(body.assistant_id).assistant_id
        cron_id = str(uuid.uuid4())
        end_time = body.end_time.astimezone(UTC).isoformat() if body.end_time else None
        value: dict[str, Any] = {
            "payload": payload,
            "schedule": body.schedule,
            "cron_id": cron_id,
            "thread_id": thread_id,
            "user_id": caller.identity,
            "end_time": end_time,
            "metadata": dict(body.metadata or {}),
        }
        caller.decide_now("crons", "create", value)
        metadata = dict(value.get("metadata") or {})  # as the handler left it: the cron's, and its runs'
        check_json(metadata, "metadata")
        payload["metadata"] = metadata
        following = _next_tick(body.schedule, _zone(body.timezone, what), time.time(), end_time, what)
        _check(server, payload, thread_id, what, _thread_of_cron(caller, thread_id, payload["assistant_id"]))
        if caller.user is not None:
            payload["user"] = caller.user.to_json()  # each tick runs as the cron's creator
        stamp = now()
        cron = CronRecord(
            cron_id=cron_id,
            assistant_id=payload["assistant_id"],
            thread_id=thread_id,
            schedule=body.schedule,
            end_time=end_time,
            next_run=following,
            payload=payload,
            metadata=metadata,
            enabled=body.enabled,
            on_run_completed=None if thread_id else body.on_run_completed or "delete",
            created_at=stamp,
            updated_at=stamp,
        )
        server.store.crons.create(cron)
        return _public(_found(cron.cron_id))

    @router.post("/runs/crons")
    def create_cron(body: CronCreate, caller: CallerOf) -> dict[str, Any]:
        """A cron whose ticks start stateless runs (a new thread each, kept with `on_run_completed='keep'`)."""
        return create(body, None, caller)

    @router.post("/threads/{thread_id}/runs/crons")
    def create_thread_cron(thread_id: str, body: CronCreate, caller: CallerOf) -> dict[str, Any]:
        """A cron whose ticks start runs on the thread."""
        return create(body, thread_id, caller)

    def searched(body: CronSearch, caller: Caller, what: str) -> list[CronRecord]:
        refuse_unsupported(body, what)
        value = {
            "assistant_id": body.assistant_id,
            "thread_id": body.thread_id,
            "limit": body.limit,
            "offset": body.offset,
            "metadata": dict(body.metadata or {}),
        }
        visible = caller.decide_now("crons", "search", value)
        wanted = body.model_copy(update={"metadata": value.get("metadata") or None})  # as the handler left it
        return [c for c in server.store.crons.all(visible) if _matching(server, c, wanted)]

    @router.post("/runs/crons/search")
    def search(body: CronSearch, caller: CallerOf) -> list[dict[str, Any]]:
        """The crons matching the filters, oldest first."""
        found = [_public(c) for c in searched(body, caller, "crons.search")]
        return found[body.offset : body.offset + body.limit]

    @router.post("/runs/crons/count")
    def count(body: CronSearch, caller: CallerOf) -> int:
        """How many crons match the filters."""
        return len(searched(body, caller, "crons.count"))

    @router.patch("/runs/crons/{cron_id}")
    def update(cron_id: str, body: CronUpdate, caller: CallerOf) -> dict[str, Any]:
        """Change a cron: its schedule (the next tick is computed again), end time, run body, or whether it runs."""
        refuse_unsupported(body, "crons.update")
        changes = body.model_dump(mode="json", exclude_unset=True)
        value = {"cron_id": cron_id, "payload": changes, "schedule": body.schedule}
        visible = caller.decide_now("crons", "update", value)
        fields = _changes(server, _found(cron_id, visible), body)
        server.store.crons.update(cron_id, fields)
        return _public(_found(cron_id))

    @router.delete("/runs/crons/{cron_id}")
    def delete(cron_id: str, caller: CallerOf) -> Response:
        """Stop a cron: no tick starts a run any more (the runs it started stay)."""
        _found(cron_id, caller.decide_now("crons", "delete", {"cron_id": cron_id}))
        server.store.crons.delete(cron_id)
        return Response(status_code=204)

    def _found(cron_id: str, visible: Filter | None = None) -> CronRecord:
        found = server.store.crons.get(cron_id, visible)
        if found is None:
            raise ApiError(404, "cron-not-found", f"no cron {cron_id!r}", hint="crons.search() lists the crons")
        return found

    return router


async def tick_crons(server: Server) -> None:
    """Start the runs of the crons that are due, once a second, until cancelled."""
    while True:
        at = int(time.time())
        try:
            due = await asyncio.to_thread(server.store.crons.due, at)
        except Exception as exc:  # the database may be away for a while: keep trying
            _log.warning("cannot read the crons: %s", exc)
            due = []
        for cron in due:
            try:
                await _fire(server, cron, at)
            except Exception as exc:
                _log.warning("cron %s could not start its run: %s", cron.cron_id, exc)
        await asyncio.sleep(1.0 - time.time() % 1.0 + 0.001)


async def _fire(server: Server, cron: CronRecord, at: int) -> None:
    """Start the run of `cron`'s due tick, unless another replica did; move the cron to its next tick."""
    cron_id, due, payload = cron.cron_id, cron.next_run, cron.payload
    if due is None or server.assistants.get(payload["assistant_id"]) is None:  # a graph another replica serves: its
        return  # tick (`CronRows.due` finds no cron without a next tick)
    zone = _zone(payload.get("timezone"), "cron")
    tick = Tick(cron_id, due, _next_tick(cron.schedule, zone, float(at), cron.end_time, "cron"))
    body = _run_body(payload, cron_id, cron.on_run_completed, due)
    user = payload.get("user")
    caller = Caller(AuthUser(user)) if isinstance(user, dict) else Caller()  # its creator, whose handlers said yes
    try:
        request = await asyncio.to_thread(lambda: resolve_request(server, body, cron.thread_id, "crons", caller=caller))
    except AgentMapError as exc:  # the run does not fit any more
        if await asyncio.to_thread(server.store.crons.skip_tick, tick):
            _log.warning("cron %s skipped a tick: %s", cron_id, exc.message)
        return
    reject = cron.thread_id is not None and request.multitask_strategy == "reject"
    try:
        run = await server.runs.acceptor.submit(request, here=False, reject_if_busy=reject, tick=tick)
    except QuotaExceeded as exc:  # its user's quota is spent: the tick passes without a run
        run = None
        if await asyncio.to_thread(server.store.crons.skip_tick, tick):
            _log.warning("cron %s skipped a tick: %s", cron_id, exc.message)
    if run is None and cron.thread_id is None and request.thread_id is not None:
        await asyncio.to_thread(server.store.threads.delete, request.thread_id)  # kept thread of a tick not run
