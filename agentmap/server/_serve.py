"""Running the application with uvicorn: in the foreground (`agentmap serve`) or in a background thread."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agentmap.errors import ConfigError, ErrorCode
from agentmap.server._reach import hosts_for
from agentmap.server._security import MAX_HEADERS, require_key

__all__ = ["background", "serve"]

_log = logging.getLogger("agentmap.server")


def _uvicorn() -> Any:
    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError:
        raise ConfigError(
            "agentmap serve needs FastAPI and uvicorn, which are not installed",
            code=ErrorCode.MISSING_EXTRA,
            hint='pip install "agentmap[serve]"',
        ) from None
    return uvicorn


def _server(config: Any, host: str, port: int, log_level: str) -> Any:
    uvicorn = _uvicorn()
    require_key(host, config.api_key, auth=config.auth is not None)
    from agentmap.server._app import create_app
    from agentmap.server._connections import http_protocol

    config = dataclasses.replace(config, allowed_hosts=hosts_for(host, config.allowed_hosts))
    if config.allowed_hosts == ("*",):
        _log.info("listening on %s: requests naming any host are answered (--allow-host NAME limits them)", host)
    app = create_app(config)
    settings = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=5,
        lifespan="on",
        http=http_protocol(config.header_timeout),
        limit_concurrency=config.max_connections,
        timeout_keep_alive=5,
        # h11 (without httptools) would refuse headers over 16 KiB itself, in plain text: up to 1 MiB reach the Guard,
        # which answers 413 beyond MAX_HEADERS
        h11_max_incomplete_event_size=1_048_576 + MAX_HEADERS,
    )
    return uvicorn.Server(settings)


def serve(config: Any, *, host: str = "127.0.0.1", port: int = 8123, log_level: str = "info") -> None:
    """Serve `config` until interrupted (Ctrl-C).

    Raises:
        ConfigError: A host beyond loopback without an API key, or the `serve` extra missing.
        WorkflowFileError, WorkflowValidationError: A workflow cannot be served.
    """
    _server(config, host, port, log_level).run()


@contextmanager
def background(config: Any, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning") -> Iterator[str]:
    """Serve `config` from a thread of this process; yields the base URL (port 0: a free port is chosen).

    The server stops when the block ends.
    """
    server = _server(config, host, port, log_level)
    thread = threading.Thread(target=server.run, name="agentmap-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start (see the log above)")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()
    try:
        yield f"http://{host}:{bound[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
