"""`agentmap serve`: CSV workflows over the LangGraph server protocol, with a live run viewer.

LangGraph's own clients (`langgraph-sdk`, sync and async) talk to it unchanged: one assistant per graph,
threads kept in the same checkpointers as the command line, runs that wait, stream over SSE, pause on
`interrupt()` and resume with `command={"resume": ...}`. `GET /` is the run viewer.

```python
from agentmap.server import ServeConfig, create_app, serve

app = create_app(ServeConfig(targets=("graphs/",)))     # an ASGI app (needs the `serve` extra)
serve(ServeConfig(targets=("graphs/",)), port=8123)     # serve until Ctrl-C, as `agentmap serve` does
with background(ServeConfig(targets=("graphs/",))) as url:   # in a thread, on a free port (tests, notebooks)
    ...
```

FastAPI and uvicorn are imported only here, never by `import agentmap`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmap._lazy import lazy_exports

if TYPE_CHECKING:
    from agentmap.server._app import create_app
    from agentmap.server._config import ServeConfig
    from agentmap.server._reach import TOKEN_HEADER, Reach, hosts_for, new_token
    from agentmap.server._security import Guard, require_key
    from agentmap.server._serve import background, serve

# Guard, Reach, hosts_for, new_token and TOKEN_HEADER: the studio stands behind the same guard
__all__ = [
    "TOKEN_HEADER",
    "Guard",
    "Reach",
    "ServeConfig",
    "background",
    "create_app",
    "hosts_for",
    "new_token",
    "require_key",
    "serve",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Guard": "agentmap.server._security",
        "Reach": "agentmap.server._reach",
        "ServeConfig": "agentmap.server._config",
        "TOKEN_HEADER": "agentmap.server._reach",
        "background": "agentmap.server._serve",
        "create_app": "agentmap.server._app",
        "hosts_for": "agentmap.server._reach",
        "new_token": "agentmap.server._reach",
        "require_key": "agentmap.server._security",
        "serve": "agentmap.server._serve",
    },
)
