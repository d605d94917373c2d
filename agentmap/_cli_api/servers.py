"""serve, studio, mcp: the HTTP server, the studio and MCP on stdin/stdout, and the API-key rule they share."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap.runtime.options import CompileOptions
    from agentmap.server import ServeConfig
    from agentmap.server._quota import Quota

__all__ = ["quota", "require_key", "serve", "serve_stdio", "studio"]


def require_key(host: str, api_key: str | None, *, auth: bool = False) -> None:
    """serve, studio: refuse to listen beyond this machine without an API key or auth handlers (`--auth`), before
    anything starts."""
    from agentmap.server import require_key

    require_key(host, api_key, auth=auth)


def quota(text: str) -> Quota:
    """serve: `--quota runs=60/min,concurrent=5` (or `serve.quota`) read, a mistake a usage error naming the part."""
    from agentmap.server._quota import Quota

    return Quota.parse(text)


def serve(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8123, log_level: str = "info") -> None:
    """serve: the HTTP server until Ctrl-C."""
    from agentmap.server import serve

    serve(config, host=host, port=port, log_level=log_level)


if TYPE_CHECKING:  # the real signature, for the type checker; the call below forwards to it
    from agentmap.studio import studio
else:

    def studio(*args: Any, **kwargs: Any) -> Any:
        """studio: the editor's server until Ctrl-C (`started` hears its address once it listens)."""
        from agentmap.studio import studio

        return studio(*args, **kwargs)


def serve_stdio(targets: Sequence[str | Path], *, checkpoint: str = "memory", options: CompileOptions) -> None:
    """mcp: the graphs as MCP tools on stdin/stdout, compiled with the settings' `options`."""
    from agentmap.protocols.mcp_stdio import serve_stdio

    serve_stdio(targets, checkpoint=checkpoint, options=options)
