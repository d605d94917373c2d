"""What `agentmap.batch`'s keyword arguments become, checked before any row runs: how the rows run (`BatchOptions`),
the `--llm-batch` options, the store each row's thread is saved in, and the model limits each row's run keeps."""

from __future__ import annotations

import math
import re
import socket
from dataclasses import dataclass, replace
from pathlib import Path

from agentmap.agents.costs import is_budget
from agentmap.batch._llm_rounds import LLMBatchOptions
from agentmap.batch.executors import Executor
from agentmap.errors import ConfigError, ErrorCode
from agentmap.runtime.checkpoint import is_postgres
from agentmap.runtime.options import CompileOptions

__all__ = ["BatchOptions", "checked_budget", "llm_batch_options", "parse_rate", "row_store", "with_model_limits"]

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:/\s*(s|sec|second|m|min|minute|h|hour))?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class BatchOptions:
    """How `run_batch` runs the rows, as `batch` checked them (its keyword arguments of the same names).

    Raises:
        ConfigError: `concurrency`, `workers` or `chunk_size` below 1 (None workers is the default, the CPUs; 0 is
            no number of workers, not the default), checked as the options are made, before the batch touches a file.
    """

    executor: Executor = "thread"
    concurrency: int = 8
    workers: int | None = None
    chunk_size: int = 16
    ray_address: str | None = None
    redo_failed: bool = False
    keep_rows: bool = True
    budget: float | None = None
    csv_formulas: str = "keep"
    llm: LLMBatchOptions | None = None

    def __post_init__(self) -> None:
        counts = (("concurrency", self.concurrency), ("workers", self.workers), ("chunk size", self.chunk_size))
        for name, value in counts:
            if value is not None and value < 1:
                raise ConfigError(f"the {name} must be at least 1, got {value}", code=ErrorCode.USAGE)


def parse_rate(text: str | float) -> float:
    """Requests per second from `5/s`, `300/min`, `1000/h` or a bare number (per second).

    Raises:
        ConfigError: The text is not such a rate, or is not a finite number above zero.
    """
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = _RATE.match(text)
        if match is None:
            raise ConfigError(
                f"bad rate limit {text!r}",
                code=ErrorCode.USAGE,
                hint="write requests per time, e.g. 5/s, 300/min or 1000/h",
            )
        unit = (match.group(2) or "s")[0].lower()
        value = float(match.group(1)) / {"s": 1.0, "m": 60.0, "h": 3600.0}[unit]
    if not 0 < value < math.inf:  # NaN, or more digits than a float holds, is no rate either
        raise ConfigError(f"the rate limit must be a finite number above zero, got {text!r}", code=ErrorCode.USAGE)
    return value


def checked_budget(budget: float | None) -> float | None:
    """`budget` (USD) as a float, or None for no budget.

    Raises:
        ConfigError: It is not a finite number above zero (`costs.is_budget`, the rule every budget keeps).
    """
    if budget is None:
        return None
    if not is_budget(budget):
        raise ConfigError(f"the budget must be a positive number of US dollars, got {budget!r}", code=ErrorCode.USAGE)
    return float(budget)


def with_model_limits(
    options: CompileOptions, rate_limit: str | float | None, budget: float | None, share: int
) -> CompileOptions:
    """`options` whose model calls keep the batch's limits: `rate_limit` split evenly over the `share` processes
    that run rows (each makes its own calls), and `budget`, which each row's run is held to where rows do not share
    the batch's meter (worker processes, Ray)."""
    llm: dict[str, float] = {}
    if rate_limit is not None:
        llm["rate_limit"] = parse_rate(rate_limit) / share
    if budget is not None:
        llm["budget"] = budget
    if not llm:
        return options
    settings = dict(options.settings or {})
    return replace(options, settings={**settings, "llm": {**(settings.get("llm") or {}), **llm}})


def llm_batch_options(on: bool, retry: str, timeout: float, poll: float, detach: bool) -> LLMBatchOptions | None:
    """The `--llm-batch` options, checked (None without `--llm-batch`).

    Raises:
        ConfigError: `--detach` without `--llm-batch`, an unknown `--llm-batch-retry`, or a timeout or poll that is
            not a finite number of seconds above zero.
    """
    if not on:
        if detach:
            raise ConfigError("--detach goes with --llm-batch", code=ErrorCode.USAGE, hint="add --llm-batch")
        return None
    if retry not in ("fail", "sync"):
        raise ConfigError(
            f"--llm-batch-retry {retry!r}: use fail or sync", code=ErrorCode.USAGE, hint="--llm-batch-retry sync"
        )
    for name, value in (("--llm-batch-timeout", timeout), ("--llm-batch-poll", poll)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}", code=ErrorCode.USAGE)
    return LLMBatchOptions(retry, float(timeout), float(poll), detach)


_THIS_MACHINE = ("auto", "local", "localhost", "127.0.0.1", "::1")


def row_store(checkpoint: str | Path | None, executor: Executor, ray_address: str | None) -> str | None:
    """The checkpointer string each row's thread is saved in (`--checkpoint`): a PostgreSQL URL as given, else a
    SQLite file (absolute for Ray, whose workers run in other folders; refused when Ray runs elsewhere).

    Raises:
        ConfigError: A SQLite file, and a Ray cluster on another machine.
    """
    if checkpoint is None:
        return None
    text = str(checkpoint)
    if is_postgres(text):
        return text
    path = Path(text.removeprefix("sqlite:"))
    if executor != "ray":
        return f"sqlite:{path}"
    if ray_address is not None and not _on_this_machine(ray_address):
        raise ConfigError(
            f"--checkpoint {text}: a SQLite file is on this machine only, and the Ray cluster at {ray_address!r} "
            "runs rows elsewhere",
            code=ErrorCode.USAGE,
            hint="use a postgresql:// checkpoint that every Ray node reaches, or leave out --ray-address",
        )
    return f"sqlite:{path.resolve()}"


def _on_this_machine(address: str) -> bool:
    """Whether a `--ray-address` names a Ray on this machine: `auto`, `local`, localhost, this host's name, or an
    address of one of its interfaces (the one Ray itself reports for a cluster started here, such as 192.0.2.2)."""
    host = address.removeprefix("ray://")
    host = host[1 : host.rindex("]")] if host.startswith("[") else host.partition(":")[0]
    if host.lower() in _THIS_MACHINE or host.startswith("127.") or host == socket.gethostname():
        return True
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    for family, kind, proto, _, where in found:
        try:  # a socket binds only to an address of this machine
            with socket.socket(family, kind, proto) as probe:
                probe.bind((where[0], 0))
        except OSError:
            continue
        return True
    return False
