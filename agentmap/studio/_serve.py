"""Serving the studio with uvicorn: in the foreground (`agentmap studio`) or from a thread (tests, notebooks)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentmap.server import hosts_for, require_key
from agentmap.studio._app import StudioConfig, create_studio_app
from agentmap.studio._files import Files

__all__ = ["background", "studio"]


def _server(config: StudioConfig, host: str, port: int, log_level: str) -> Any:
    import uvicorn

    require_key(host, config.api_key)
    app = create_studio_app(config.model_copy(update={"allowed_hosts": hosts_for(host, config.allowed_hosts)}))
    settings = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False, lifespan="on")
    return uvicorn.Server(settings)


def studio(
    config: StudioConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8124,
    log_level: str = "warning",
    started: Callable[[str], None] | None = None,
) -> None:
    """Serve the studio until interrupted (Ctrl-C); `started(url)` is called once it listens, with the address of
    the page opening the file it was started on (a workbook: its first sheet), its token at the end.

    Raises:
        ConfigError: A host beyond loopback without an API key.
        WorkflowFileError: The target does not exist.
    """
    server = _server(config, host, port, log_level)
    if started is None:
        server.run()
        return
    with _running(server, host) as url:
        opening = _opening(config.target, config.graph)
        started(f"{url}{opening}{'&' if opening else '?'}token={quote(config.token)}")
        while not server.should_exit:
            time.sleep(0.2)


def _opening(target: Path, graph: str | None = None) -> str:
    """The query naming what the page opens first: the file the studio was started on, a workbook's first sheet
    (`?file=flows.xlsx%5BSheet1%5D`, as the page lists it) or the sheet named `graph`, and else the tab of `graph`
    (`&graph=Main`); nothing for a folder (the page opens its first file)."""
    names = Files(target).names() if target.is_file() else []
    if not names:
        return ""
    sheet = f"{target.name}[{graph}]"
    if sheet in names:
        return f"?file={quote(sheet)}"
    return f"?file={quote(names[0])}" + (f"&graph={quote(graph)}" if graph else "")


@contextmanager
def background(config: StudioConfig, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve the studio from a thread of this process; yields its URL (port 0: a free port). Stops with the block.

    The page is `url + "?token=" + config.token`; a script sends the token as the `X-AgentMap-Token` header."""
    with _running(_server(config, host, port, "warning"), host) as url:
        yield url


@contextmanager
def _running(server: Any, host: str) -> Iterator[str]:
    thread = threading.Thread(target=server.run, name="agentmap-studio", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the studio did not start (see the log above)")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
