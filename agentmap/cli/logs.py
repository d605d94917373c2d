"""`agentmap logs`: the decisions (and tool calls) `assistant` nodes logged, latest last.

The log is `--db`, else the `llm.decision_log` setting, `$AGENTMAP_DECISION_LOG`, or
`.agentmap/decisions.db` in the working directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agentmap.cli._common import ConfigOption, DebugOption, JsonOption, load

__all__ = ["register", "render_logs", "show_logs"]


def show_logs(
    db: Path | None = None,
    *,
    conversation: str | None = None,
    user: str | None = None,
    limit: int = 20,
    tools: bool = True,
    json_output: bool = False,
    config: Path | None = None,
    debug: bool = False,
) -> int:
    """The `logs` command: print the latest decisions; returns the exit code (0, or 3 with no log)."""
    from agentmap._cli_api import SQLiteDecisionLog, configured_log_path

    settings = load(config, debug)
    path = db or configured_log_path(settings.agent_settings())
    if path is None:
        typer.echo("Decision logging is turned off (llm.decision_log is false).", err=True)
        return 3
    if not path.exists():
        typer.echo(f"No decision log at {path} (an `assistant` node writes one when it runs).", err=True)
        return 3
    if not json_output:
        typer.echo(render_logs(path, conversation_id=conversation, user_id=user, limit=limit, show_tools=tools))
        return 0
    with SQLiteDecisionLog(path) as log:
        decisions: list[dict[str, Any]] = []
        for d in log.list_decisions(conversation_id=conversation, user_id=user, limit=limit):
            item = {**vars(d), "created_at": d.created_at.isoformat(), "updated_at": d.updated_at.isoformat()}
            if tools:
                item["tool_invocations"] = [
                    {**vars(t), "created_at": t.created_at.isoformat()} for t in log.get_tool_invocations(d.decision_id)
                ]
            decisions.append(item)
    typer.echo(json.dumps({"log": str(path), "decisions": decisions}, default=str, ensure_ascii=False))
    return 0


def render_logs(
    path: str | Path | None = None,
    *,
    conversation_id: str | None = None,
    user_id: str | None = None,
    limit: int = 20,
    show_tools: bool = True,
) -> str:
    """Render the latest decisions (and their tool calls) as text; what `agentmap logs` prints.

    Args:
        path: The decision log file; None means `default_log_path()`.
        conversation_id: Only this conversation.
        user_id: Only this user.
        limit: How many of the latest decisions to show.
        show_tools: Whether to list each decision's tool calls under it.
    """
    from agentmap._cli_api import SQLiteDecisionLog, dumps

    log = SQLiteDecisionLog(path)
    if not log.path.exists():
        return f"No decision log at {log.path} (an `assistant` node writes one when it runs)."
    try:
        decisions = log.list_decisions(conversation_id=conversation_id, user_id=user_id, limit=limit)
        lines: list[str] = []
        for d in decisions:
            when = d.created_at.strftime("%Y-%m-%d %H:%M:%S")
            lines.append(
                f"{when}  {d.decision_id[:12]}  conv={d.conversation_id} user={d.user_id}  "
                f"{d.decision_type} / {d.outcome_category}  {d.duration_ms:.0f} ms"
            )
            lines.append(f"    user: {_clip(d.message)}")
            if d.response_text:
                lines.append(f"    reply: {_clip(d.response_text)}")
            if d.error:
                lines.append(f"    error: {_clip(d.error)}")
            for t in log.get_tool_invocations(d.decision_id) if show_tools else ():
                status = "ok" if t.success else f"FAILED {t.error_code or ''}: {t.error_message or ''}".rstrip()
                lines.append(
                    f"    tool {t.tool_name}({_clip(dumps(t.parameters), 60)}) -> {status}  {t.duration_ms:.0f} ms"
                )
        return "\n".join(lines) if lines else f"No decisions logged in {log.path}."
    finally:
        log.close()


def _clip(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def register(app: typer.Typer) -> None:
    """Add `agentmap logs` to `app`."""

    @app.command("logs")
    def logs(
        db: Annotated[
            Path | None, typer.Option("--db", help="The decision log file.", show_default=False, dir_okay=False)
        ] = None,
        conversation: Annotated[
            str | None, typer.Option("--conversation", help="Only this conversation.", show_default=False)
        ] = None,
        user: Annotated[str | None, typer.Option("--user", help="Only this user.", show_default=False)] = None,
        limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many of the latest decisions.")] = 20,
        tools: Annotated[bool, typer.Option("--tools/--no-tools", help="List each decision's tool calls.")] = True,
        json_output: JsonOption = False,
        config: ConfigOption = None,
        debug: DebugOption = False,
    ) -> None:
        """Show the decisions assistant nodes logged (latest last), with their tool calls."""
        code = show_logs(
            db,
            conversation=conversation,
            user=user,
            limit=limit,
            tools=tools,
            json_output=json_output,
            config=config,
            debug=debug,
        )
        if code:
            raise typer.Exit(code)
