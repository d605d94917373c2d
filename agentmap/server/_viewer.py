"""The run viewer's page, drawn on the server: the served graphs, the selected one's drawing and its form.

`GET /` is whole without scripts (a screenshot, a browser that blocks them): the list of graphs (links), the
selected graph (`?graph=ID`, else the first) drawn as the offline SVG `agentmap export --format svg` writes
(`CompiledWorkflow.draw`), and one field per input key. `viewer.js` adds the live parts: runs, the nodes lit
as they run, answers to paused nodes, other graphs drawn from `GET /assistants/{id}/svg`. A server with an API
key or users (`--auth`) serves the page empty, as before: the page is public, the workflows are not (the script
fills it once the key or the user's Authorization is entered, as `assistants.read` lets that user see them).
"""

from __future__ import annotations

import re
from html import escape
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from agentmap.server._app import Server
    from agentmap.server._graphs import Assistant

__all__ = ["viewer_page"]

_SYSTEM_KEYS = ("last_action_success", "graph_success", "errors")


def viewer_page(server: Server, graph: str | None) -> str:
    """The viewer's HTML: `graph` (or the first served graph) drawn with its form, unless the server has a key or
    users (`--auth`)."""
    page = (resources.files("agentmap.server") / "static" / "index.html").read_text(encoding="utf-8")
    assistants = server.assistants.all
    shown = (
        None
        if server.config.api_key or server.auth is not None
        else next(
            (a for a in assistants if graph in (a.graph_id, a.assistant_id)), assistants[0] if assistants else None
        )
    )
    if shown is None:
        return _fill(page, graphs="", title="Choose a workflow", description="", drawn="", diagram="", fields="")
    return _fill(
        page,
        graphs="".join(_link(a, a is shown) for a in assistants),
        title=escape(shown.graph_id),
        description=escape(shown.description),
        drawn=escape(shown.graph_id, quote=True),
        diagram=shown.svg(),
        fields="".join(_field(key) for key in input_fields(shown)),
    )


def input_fields(assistant: Assistant) -> list[str]:
    """The keys the form asks for: the graph's inputs (keys no node writes), else every state key of its own."""
    return list(assistant.input_keys) or [k for k in assistant.state_keys if k not in _SYSTEM_KEYS]


def _link(assistant: Assistant, current: bool) -> str:
    graph = escape(assistant.graph_id, quote=True)
    address = escape(f"/?graph={quote(assistant.graph_id, safe='')}", quote=True)
    return (
        f'<li><a href="{address}" data-graph="{graph}" aria-current="{"true" if current else "false"}">'
        f"{escape(assistant.graph_id)}</a></li>"
    )


def _field(key: str) -> str:
    return f'<label><span>{escape(key)}</span><input name="{escape(key, quote=True)}"></label>'


def _fill(page: str, **parts: str) -> str:
    """`page` with each `{{name}}` replaced by its part, in one pass (a part's own text is never read again)."""
    return re.sub(r"\{\{(\w+)\}\}", lambda found: parts[found.group(1)], page)
