"""`ServeConfig`: how a server runs (no web framework imported here, so the command can check it first)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentmap.runtime.checkpoint import state_file
from agentmap.runtime.options import CompileOptions, MissingInputs

if TYPE_CHECKING:
    from agentmap.runtime.durable import Durability
    from agentmap.server._quota import Quota

__all__ = ["ServeConfig"]


@dataclass(frozen=True)
class ServeConfig:
    """How a server runs.

    Attributes:
        targets: Workflow files (`file.csv`, `file.csv::Graph`) and folders of them; one assistant per graph.
        checkpoint: Where threads are kept: a SQLite file (default `runs.db` in `$AGENTMAP_STATE_DIR`, else in
            `.agentmap/`), `memory`, or what the runtime's checkpointers accept.
        api_key: The key clients must send (`X-Api-Key` or `Authorization: Bearer`); None: no key asked.
        cors_origins: Origins allowed to call the API from a browser (none unless configured); their pages may
            also write (POST, PUT, PATCH, DELETE), which a page of any other origin may not.
        allowed_hosts: Names the `Host` header may carry besides this machine's own (`localhost`, loopback
            addresses, the address a connection reached): `name`, `*.domain` for its subdomains, or `*` for any
            (the check off). Others are refused (403 `host-not-allowed`): a page whose domain was made to point
            at this machine (DNS rebinding) names its own domain. `serve()` and `background()` allow any name
            when they listen beyond loopback and none is given (an API key then guards the server).
        max_body: The largest request body accepted, in bytes.
        max_connections: Open connections served at once; beyond them a request is answered 503.
        header_timeout: Seconds a connection has to send a whole request's headers (when it opens, and once the
            next request on a kept-alive connection starts) before it is closed; an idle kept-alive connection
            is closed after 5 s.
        workers: Runs that execute at once (more wait their turn); their synchronous nodes run in a pool of
            threads (4 per worker, at least 32).
        durability: When runs write checkpoints, unless a run says: `sync` (the default: after every step, before
            the next one starts, so a replica that dies mid-run leaves at most the step in flight to run again),
            `async` (LangGraph's default: while the next step runs; under load the saves can fall several steps
            behind, and a run taken over runs them all again), or `exit` (once per run, at its end or pause:
            fastest, but a run taken over after a crash starts again from its input); None: LangGraph's default.
        heartbeat: Seconds of silence after which a stream sends a comment line, so proxies keep it open.
        lease: Seconds a replica holds a run it claimed without renewing (it renews every third of it); a run
            whose replica died is claimed by another once its lease has run out.
        grace: Seconds a stopping replica lets its runs finish before it hands the rest over to the others.
        compile_options: `agentmap.compile`'s options for every served graph (functions and agents folders,
            success policy, tracing, ...; the checkpointer and item store are the server's).
        missing_inputs: A run whose input (with its thread's values) lacks a key some node reads and no node
            writes: `error` refuses it (422 `missing-state` naming the key), `warn` runs it with a warning in its
            metadata (`warnings`) and the server's log, `ignore` runs it without a word.
        webhook_hosts: The hosts a run's `webhook` URL may name (`host`, or `*.domain` for its subdomains); a
            run naming another is refused (422). None allowed: no run may have a webhook.
        webhook_secret: The key that signs every webhook delivery (`X-AgentMap-Signature`); None: unsigned.
        webhook_timeout: Seconds a webhook try waits for an answer before it counts as failed; a try of a
            replica that died is made again by another once `lease` plus this has run out.
        reload: Seconds between looks at the served files (`agentmap serve --reload`): a changed one becomes a
            new version of its assistants, the latest, without a restart. None: only `POST /assistants/reload`.
        auth: A `langgraph_sdk.Auth` object to ask who calls and what they may do: `auth.py:my_auth`,
            `module:name`, or a `langgraph.json` naming one in `auth.path` (csv_specs/serve.md, "Users and
            permissions"); None: no user. With it, the API key (if any) is read from `X-Api-Key` only.
        quota: What each identity may run (`Quota.parse("runs=60/min,concurrent=5")`); None: no limit.
        audit: Where the audit log goes: a JSON-lines file, or `table` (the run store's `agentmap_audit`); None:
            no log.
        audit_content: Whether audit entries carry the inputs (a run's input or answer, a stored value).
    """

    targets: tuple[str, ...]
    checkpoint: str = field(default_factory=lambda: str(state_file("runs.db")))
    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    max_body: int = 1_048_576
    max_connections: int = 1000
    header_timeout: float = 10.0
    workers: int = 16
    durability: Durability | None = "sync"
    heartbeat: float = 15.0
    lease: float = 30.0
    grace: float = 30.0
    compile_options: CompileOptions = field(default_factory=CompileOptions)
    missing_inputs: MissingInputs = "error"
    webhook_hosts: tuple[str, ...] = ()
    webhook_secret: str | None = None
    webhook_timeout: float = 10.0
    reload: float | None = None
    auth: str | None = None
    quota: Quota | None = None
    audit: str | None = None
    audit_content: bool = False
