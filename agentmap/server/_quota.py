"""Quotas per identity (`agentmap serve --quota runs=60/min,concurrent=5`): how many runs a user may start in a
period, and how many may be pending or running at once.

A run is counted when it is accepted, in the transaction that accepts it (`RunRows.accept`), under a lock of the
identity (PostgreSQL: an advisory lock; SQLite: its writer lock), so replicas on one database count together and
two replicas cannot both let the last run in. Over the quota, the run is refused: 429 `quota-exceeded` with
`Retry-After` (the seconds until the oldest counted run leaves the period; 1 for `concurrent`). Without `--auth`
every caller is one identity: the quota is the server's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from agentmap.errors import ConfigError, ErrorCode
from agentmap.server._database import Database, Tx
from agentmap.server._models import ApiError
from agentmap.server._run_states import UNFINISHED, sql_list

__all__ = ["QUOTA_TABLE", "Quota", "QuotaExceeded", "take_quota"]

QUOTA_TABLE = (
    "CREATE TABLE IF NOT EXISTS agentmap_quota (identity TEXT, at DOUBLE PRECISION)",
    "CREATE INDEX IF NOT EXISTS agentmap_quota_identity ON agentmap_quota (identity, at)",
)
"""The runs counted against `runs=N/PERIOD`, by identity and time (the database's clock); older ones are dropped."""

_PERIODS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}
_RATE = re.compile(r"^(\d+)\s*/\s*(\d*\.?\d*)\s*([a-z]+)$")
_FORM = "runs=N/PERIOD (period: s, min, h or day, e.g. runs=60/min), concurrent=N, separated by commas"


@dataclass(frozen=True, slots=True)
class Quota:
    """What one identity may do: `runs` runs started per `period` seconds, `concurrent` pending or running at once
    (None: no limit)."""

    runs: int | None = None
    period: float = 60.0
    concurrent: int | None = None

    @classmethod
    def parse(cls, text: str) -> Quota:
        """`runs=60/min,concurrent=5` (either part may be left out).

        Raises:
            ConfigError: `usage`, naming the part that is wrong and the form.
        """
        runs: int | None = None
        period = 60.0
        concurrent: int | None = None
        for part in (p.strip() for p in text.split(",") if p.strip()):
            name, _, value = (s.strip().lower() for s in part.partition("="))
            if name == "runs" and (found := _RATE.match(value)):
                count, scale, unit = found.groups()
                if unit in _PERIODS and float(scale or 1) > 0:
                    runs, period = int(count), float(scale or 1) * _PERIODS[unit]
                    continue
            elif name == "concurrent" and value.isdigit():
                concurrent = int(value)
                continue
            raise ConfigError(f"--quota {text!r}: {part!r} is no quota", code=ErrorCode.USAGE, hint=f"write {_FORM}")
        if runs is None and concurrent is None:
            raise ConfigError(f"--quota {text!r} sets no quota", code=ErrorCode.USAGE, hint=f"write {_FORM}")
        return cls(runs, period, concurrent)


class QuotaExceeded(ApiError):
    """A run over its caller's quota: 429 with `Retry-After`."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(
            429,
            ErrorCode.QUOTA_EXCEEDED,
            message,
            hint=f"try again in {retry_after} s; the server's --quota sets what each user may run",
            headers={"Retry-After": str(retry_after)},
        )
        self.retry_after = retry_after


def take_quota(tx: Tx, db: Database, quota: Quota, identity: str) -> None:
    """Count a run of `identity` against `quota` in `tx` (the transaction accepting it).

    Raises:
        QuotaExceeded: Over the quota (the transaction rolls back: no run, nothing counted).
    """
    db.lock_thread(tx, f"quota {identity}")
    who = f"user {identity!r}" if identity else "this server"
    if quota.concurrent is not None:
        running = tx.rows(
            f"SELECT COUNT(*) AS n FROM agentmap_runs WHERE user_id = ? AND status IN {sql_list(UNFINISHED)}",
            (identity,),
        )[0]["n"]
        if int(running) >= quota.concurrent:
            raise QuotaExceeded(f"{who} has {running} runs pending or running, the most its quota allows at once", 1)
    if quota.runs is None:
        return
    clock = db.clock
    found = tx.rows(
        f"SELECT COUNT(*) AS n, MIN(at) AS first, {clock} AS now FROM agentmap_quota WHERE identity = ? "
        f"AND at > {clock} - ?",
        (identity, quota.period),
    )[0]
    if int(found["n"]) >= quota.runs:
        first = found["first"] if found["first"] is not None else found["now"]
        wait = max(1, math.ceil(float(first) + quota.period - float(found["now"])))
        raise QuotaExceeded(
            f"{who} started {found['n']} runs in {_period(quota.period)}, the most its quota allows", wait
        )
    tx.count(f"DELETE FROM agentmap_quota WHERE identity = ? AND at <= {clock} - ?", (identity, quota.period))
    tx.count(f"INSERT INTO agentmap_quota (identity, at) VALUES (?, {clock})", (identity,))


def _period(seconds: float) -> str:
    for name, scale in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= scale and seconds % scale == 0:
            count = int(seconds // scale)
            return f"the last {name}" if count == 1 else f"the last {count} {name}s"
    return f"the last {seconds:g} s"
