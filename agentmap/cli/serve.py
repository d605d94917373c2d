"""`agentmap serve [FILE|FOLDER ...]`: serve workflows over the LangGraph server protocol, with the run viewer.

One assistant per graph; threads in a SQLite file (`.agentmap/runs.db` unless `--checkpoint`). Listening on a
host other than loopback needs an API key, read from the environment variable `--api-key-env` names (a key
on the command line would show in the process list).
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentmap.cli._common import (
    AllowHostOption,
    ApiKeyEnvOption,
    ConfigOption,
    DebugOption,
    HostOption,
    PortOption,
    StrictOption,
    api_key_from,
    load,
    missing_inputs_mode,
)
from agentmap.cli._durable import durability_mode
from agentmap.cli._observe import TraceContentOption, TraceOption, tracing_for
from agentmap.errors import ConfigError, ErrorCode

if TYPE_CHECKING:
    from agentmap._cli_api import MissingInputs

__all__ = ["register", "serve_command"]


def serve_command(
    targets: list[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8123,
    api_key_env: str | None = None,
    checkpoint: str | None = None,
    cors_origins: list[str] | None = None,
    allowed_hosts: list[str] | None = None,
    max_body: int = 1_048_576,
    max_connections: int = 1000,
    header_timeout: str = "10s",
    durability: str | None = "sync",
    workers: int = 16,
    lease: str = "30s",
    grace: str = "30s",
    config: Path | None = None,
    debug: bool = False,
    trace: str | None = None,
    trace_content: bool = False,
    missing_inputs: MissingInputs = "error",
    webhook_hosts: list[str] | None = None,
    webhook_secret_env: str | None = None,
    webhook_timeout: str = "10s",
    reload: bool = False,
    auth: str | None = None,
    quota: str | None = None,
    audit: str | None = None,
    audit_content: bool = False,
) -> None:
    """Check the options, compile every workflow, and serve until Ctrl-C.

    Raises:
        ConfigError: No workflow, a missing API key (variable unset, or needed for a non-loopback host), or the
            `serve` extra not installed.
    """
    mode = durability_mode(durability)
    durations = {"--lease": lease, "--grace": grace, "--header-timeout": header_timeout}
    for option, value in {**durations, "--webhook-timeout": webhook_timeout}.items():
        seconds(value, option)  # checked first
    settings = load(config, debug)
    tracing = tracing_for(settings, trace, trace_content)  # OpenTelemetry is imported only when tracing is on
    if not targets:
        targets = [_active_workflow() or settings.workflow or ""]
        if not targets[0]:
            raise ConfigError(
                "no workflow to serve",
                code=ErrorCode.NO_WORKFLOW,
                hint="name files or folders, e.g. `agentmap serve graphs/`, set `workflow:` in agentmap.yaml, "
                "or set ACTIVE_AGENT_PATH to a workflow",
            )
    api_key = api_key_from(api_key_env, "the server")
    webhook_secret = _webhook_secret(webhook_secret_env or settings.serve.webhook_secret_env)
    webhook_hosts = [*(webhook_hosts or ()), *settings.serve.webhook_hosts]
    allowed_hosts = [*(allowed_hosts or ()), *settings.serve.allowed_hosts]

    from agentmap._cli_api import ServeConfig, require_key, serve

    users = _users(settings, auth, quota, audit, audit_content)
    require_key(host, api_key, auth=users["auth"] is not None)  # before anything starts
    if not debug:  # one access line per request, with its request id
        logging.getLogger("agentmap.server").setLevel(logging.INFO)

    from agentmap import CompileOptions

    options = CompileOptions.from_settings(settings).but(tracing=tracing)
    serve_config = ServeConfig(
        targets=tuple(targets),
        api_key=api_key,
        cors_origins=tuple(cors_origins or ()),
        allowed_hosts=tuple(allowed_hosts),
        max_body=max_body,
        max_connections=max_connections,
        header_timeout=seconds(header_timeout, "--header-timeout"),
        durability=mode,
        workers=workers,
        lease=seconds(lease, "--lease"),
        grace=seconds(grace, "--grace"),
        compile_options=options,
        missing_inputs=missing_inputs,
        webhook_hosts=tuple(dict.fromkeys(h.strip().lower() for h in webhook_hosts)),
        webhook_secret=webhook_secret,
        webhook_timeout=seconds(webhook_timeout, "--webhook-timeout"),
        reload=1.0 if reload else None,
        **users,
    )
    if checkpoint is not None:  # else ServeConfig's default: runs.db in AgentMap's own folder
        serve_config = replace(serve_config, checkpoint=checkpoint)
    try:
        serve(serve_config, host=host, port=port, log_level="debug" if debug else "info")
    finally:
        if tracing is not None:  # the server sent its spans as it stopped; anything left goes now
            from agentmap._cli_api import flush_traces

            flush_traces()


def _users(
    settings: Any, auth: str | None, quota: str | None, audit: str | None, audit_content: bool
) -> dict[str, Any]:
    """The server's users: its auth handlers, the quota of each identity and the audit log (`ServeConfig`'s fields),
    from the options, else the settings' `serve` section (its paths resolved against the config file's folder)."""
    from agentmap._cli_api import quota as read_quota

    quota_text = quota or settings.serve.quota
    return {
        "auth": auth or settings.serve.auth,
        "quota": read_quota(quota_text) if quota_text else None,
        "audit": audit or settings.serve.audit,
        "audit_content": audit_content or settings.serve.audit_content,
    }


def _webhook_secret(env: str | None) -> str | None:
    """The key signing webhook deliveries, from the variable `--webhook-secret-env` names (None without it).

    Raises:
        ConfigError: The variable is unset or empty.
    """
    if env is None:
        return None

    secret = os.environ.get(env, "").strip()
    if not secret:
        raise ConfigError(
            f"--webhook-secret-env (or serve.webhook_secret_env) names {env}, which is not set (or empty)",
            code=ErrorCode.USAGE,
            hint=f"export {env}=<a long random key> (receivers check deliveries with it) before starting the server",
        )
    return secret


def _active_workflow() -> str:
    """The workflow `ACTIVE_AGENT_PATH` names, resolved as `ask`, `chat` and `run_agent` resolve it ("" if unset).

    Raises:
        ConfigError: It names a Python `run_agent` file or a module: the server serves workflows only.
    """
    from agentmap._cli_api import ACTIVE_AGENT_ENV, active_agent_target
    from agentmap.cli.chat import _WORKFLOW_SUFFIXES

    target = active_agent_target()
    if target and Path(target.partition("::")[0]).suffix.lower() not in _WORKFLOW_SUFFIXES:
        raise ConfigError(
            f"{ACTIVE_AGENT_ENV} names {target}, which is not a workflow: agentmap serve serves workflows",
            code=ErrorCode.NO_WORKFLOW,
            hint=f"name a workflow file to serve (`agentmap serve graph.csv`), or point {ACTIVE_AGENT_ENV} at one; "
            "a Python run_agent file is used by ask, chat and eval run",
        )
    return target


def seconds(value: str, option: str) -> float:
    """A duration such as `30s`, `2m`, `1.5` (seconds) in seconds.

    Raises:
        ConfigError: Not a positive duration (`nan` and `inf` are none).
    """
    text = value.strip().lower()
    scale = 60.0 if text.endswith("m") else 1.0
    try:
        found = float(text.rstrip("sm")) * scale
    except ValueError:
        found = -1.0
    if not math.isfinite(found) or (found <= 0 and not (option == "--grace" and found == 0)):
        raise ConfigError(f"{option} must be a duration such as 30s or 2m, not {value!r}", code=ErrorCode.USAGE)
    return found


def register(app: typer.Typer) -> None:
    """Add `agentmap serve`."""

    @app.command("serve")
    def serve(
        targets: Annotated[
            list[str] | None,
            typer.Argument(
                metavar="[FILE[::GRAPH]|FOLDER]...",
                help="Workflow files and folders (with their subfolders) to serve, one assistant per graph "
                "(default: `workflow` from the config file).",
                show_default=False,
            ),
        ] = None,
        host: HostOption = "127.0.0.1",
        port: PortOption = 8123,
        api_key_env: ApiKeyEnvOption = None,
        checkpoint: Annotated[
            str | None,
            typer.Option(
                "--checkpoint",
                metavar="FILE|URL|memory",
                help="Where threads, runs and the run queue are kept: a SQLite file, a postgresql:// URL "
                "(shared by every replica), or `memory` (default: .agentmap/runs.db, or runs.db in "
                "$AGENTMAP_STATE_DIR).",
                show_default=False,
            ),
        ] = None,
        cors_origin: Annotated[
            list[str] | None,
            typer.Option(
                "--cors-origin", help="An origin browsers may call the API from (repeatable; none by default)."
            ),
        ] = None,
        allow_host: AllowHostOption = None,
        max_body: Annotated[
            int, typer.Option("--max-body", min=1, help="Largest request body accepted, in bytes.")
        ] = 1_048_576,
        max_connections: Annotated[
            int,
            typer.Option(
                "--max-connections", min=1, help="Open connections served at once; a request beyond them gets 503."
            ),
        ] = 1000,
        header_timeout: Annotated[
            str,
            typer.Option(
                "--header-timeout",
                metavar="DURATION",
                help="Time a connection has to send a whole request's headers before it is closed (10s, 1m).",
            ),
        ] = "10s",
        durability: Annotated[
            str,
            typer.Option(
                "--durability",
                metavar="[sync|async|exit]",
                help="When runs write checkpoints: sync (after every step, before the next: a run taken over after "
                "a crash runs again at most its step in flight), async (while the next step runs, LangGraph's "
                "default: saves may lag steps behind under load), or exit (once per run, at its end or pause: "
                "fastest, no per-step history; a crashed run starts again).",
            ),
        ] = "sync",
        workers: Annotated[
            int,
            typer.Option("--workers", min=1, help="Runs that may execute at once; more queue up."),
        ] = 16,
        lease: Annotated[
            str,
            typer.Option(
                "--lease",
                metavar="DURATION",
                help="How long a run stays claimed by a replica that stopped renewing it (it renews every third); "
                "after that another replica continues it from its last checkpoint.",
            ),
        ] = "30s",
        grace: Annotated[
            str,
            typer.Option(
                "--grace",
                metavar="DURATION",
                help="On SIGTERM, how long runs may finish before the rest are handed to the other replicas.",
            ),
        ] = "30s",
        missing_inputs: Annotated[
            str | None,
            typer.Option(
                "--missing-inputs",
                metavar="[error|warn|ignore]",
                help="A run whose input (with its thread's values) lacks a key some node reads and no node writes: "
                "error (refuse it, 422 missing-state; the default), warn (run it, a warning in its metadata and the "
                "log) or ignore.",
                show_default=False,
            ),
        ] = None,
        strict: StrictOption = False,
        webhook_host: Annotated[
            list[str] | None,
            typer.Option(
                "--webhook-host",
                metavar="HOST",
                help="A host a run's webhook URL may name (repeatable; `*.example.com` for its subdomains). "
                "Without any, runs may not have webhooks.",
                show_default=False,
            ),
        ] = None,
        webhook_secret_env: Annotated[
            str | None,
            typer.Option(
                "--webhook-secret-env",
                metavar="VAR",
                help="Environment variable holding the key that signs webhook deliveries (X-AgentMap-Signature).",
                show_default=False,
            ),
        ] = None,
        webhook_timeout: Annotated[
            str,
            typer.Option(
                "--webhook-timeout",
                metavar="DURATION",
                help="How long a webhook try waits for an answer before it is tried again.",
            ),
        ] = "10s",
        reload: Annotated[
            bool,
            typer.Option(
                "--reload",
                help="Look at the served files every second: a changed one becomes a new version of its "
                "assistants, which new threads take; threads of earlier versions finish on theirs.",
            ),
        ] = False,
        auth: Annotated[
            str | None,
            typer.Option(
                "--auth",
                metavar="FILE.py:NAME",
                help="A langgraph_sdk.Auth object whose handlers say who calls and what each user may do "
                "(auth.py:my_auth, module:name, or a langgraph.json naming one in auth.path).",
                show_default=False,
            ),
        ] = None,
        quota: Annotated[
            str | None,
            typer.Option(
                "--quota",
                metavar="runs=N/PERIOD,concurrent=N",
                help="What each identity may run: runs started per period (s, min, h, day) and runs at once; over "
                "it, 429 with Retry-After.",
                show_default=False,
            ),
        ] = None,
        audit: Annotated[
            str | None,
            typer.Option(
                "--audit",
                metavar="FILE|table",
                help="Keep an audit log (who created, read, answered, cancelled or deleted what, when, from where): "
                "a JSON-lines file, or `table` (agentmap_audit in the run store's database).",
                show_default=False,
            ),
        ] = None,
        audit_content: Annotated[
            bool,
            typer.Option("--audit-content", help="Let audit entries carry the inputs (a run's input, a stored value)."),
        ] = False,
        trace: TraceOption = None,
        trace_content: TraceContentOption = False,
        config: ConfigOption = None,
        debug: DebugOption = False,
    ) -> None:
        """Serve workflows to LangGraph clients (langgraph-sdk) over HTTP, with a live run viewer at /."""
        serve_command(
            list(targets or ()),
            host=host,
            port=port,
            api_key_env=api_key_env,
            checkpoint=checkpoint,
            cors_origins=cors_origin,
            allowed_hosts=allow_host,
            max_body=max_body,
            max_connections=max_connections,
            header_timeout=header_timeout,
            durability=durability,
            workers=workers,
            lease=lease,
            grace=grace,
            config=config,
            debug=debug,
            trace=trace,
            trace_content=trace_content,
            missing_inputs=missing_inputs_mode(missing_inputs, strict),
            webhook_hosts=webhook_host,
            webhook_secret_env=webhook_secret_env,
            webhook_timeout=webhook_timeout,
            reload=reload,
            auth=auth,
            quota=quota,
            audit=audit,
            audit_content=audit_content,
        )
