"""Runs from the studio go through `agentmap serve`'s own application, mounted at `/server`.

The page speaks the LangGraph server protocol to it, as `langgraph-sdk` does (threads, streamed runs, answers
to paused nodes); the studio only decides which saved file it serves. When the file on disk changes (a save),
the next run gets a fresh server application compiled from it; threads live on in the same SQLite file
(`.agentmap/studio.db` in the working folder), so earlier runs stay listed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap.runtime.options import CompileOptions

__all__ = ["ServedFile"]

Scope = MutableMapping[str, Any]


class ServedFile:
    """An ASGI application forwarding to the serve application of the file last prepared (503 before any).

    Args:
        checkpoint: Where the served threads are kept (as `agentmap serve --checkpoint`).
        api_key: The key the served routes ask for (the studio's own).
        options: The served workflow's compile options.
        hosts: The names the `Host` header may carry besides this machine's (the studio's own).
        max_body: The largest request body accepted, in bytes (the studio's own).
        auth: The auth handlers of the served routes (`agentmap serve --auth`), or None.
    """

    def __init__(
        self,
        checkpoint: str,
        api_key: str | None,
        options: CompileOptions,
        *,
        hosts: tuple[str, ...] = (),
        max_body: int = 1_048_576,
        auth: str | None = None,
    ) -> None:
        self._checkpoint = checkpoint
        self._auth = auth
        self._api_key = api_key
        self._options = options
        self._hosts = hosts
        self._max_body = max_body
        self._app: Any = None
        self._stop: asyncio.Event | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._served: tuple[Path, str] | None = None
        self._lock = asyncio.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentmap-studio-compile")

    async def prepare(self, path: Path, version: str) -> list[dict[str, Any]]:
        """Serve `path` as it is on disk at `version` (compiled again only when that changed); its assistants.

        Raises:
            WorkflowValidationError: The saved file does not compile (its findings say why).
        """
        async with self._lock:
            if self._served != (path, version):
                from agentmap.server import ServeConfig, create_app

                config = ServeConfig(
                    targets=(str(path),),
                    checkpoint=self._checkpoint,
                    api_key=self._api_key,
                    allowed_hosts=self._hosts,
                    max_body=self._max_body,
                    compile_options=self._options,
                    auth=self._auth,
                )
                Path(self._checkpoint).parent.mkdir(parents=True, exist_ok=True)
                await self.close()
                # compiled on a thread of our own: the loop's default executor is the closed server's until the
                # new one's lifespan installs its own
                app = await asyncio.get_running_loop().run_in_executor(self._pool, create_app, config)
                stop, entered = asyncio.Event(), asyncio.get_running_loop().create_future()
                keeper = asyncio.create_task(_keep(app.router.lifespan_context(app), entered, stop))
                await entered
                self._app, self._stop, self._keeper, self._served = app, stop, keeper, (path, version)
            server = self._app.state.server
            return [a.to_json() for a in server.assistants.all]

    async def close(self) -> None:
        """Stop the application served now (its runs end, its files close)."""
        stop, keeper = self._stop, self._keeper
        self._app, self._stop, self._keeper, self._served = None, None, None, None
        if stop is not None and keeper is not None:
            stop.set()
            await keeper

    async def shutdown(self) -> None:
        """Close the served application and the compiling thread (the studio is stopping)."""
        await self.close()
        self._pool.shutdown(wait=False)

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Scope]],
        send: Callable[[Scope], Awaitable[None]],
    ) -> None:
        if scope["type"] == "http" and self._app is not None:
            await self._app(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        body = b'{"code": "not-prepared", "message": "no workflow is served yet: save it, then run it"}'
        await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


async def _keep(life: AbstractAsyncContextManager[Any], entered: asyncio.Future[None], stop: asyncio.Event) -> None:
    """Run a served application's lifespan until `stop`: entered and left in this one task, as the task groups
    it starts (the MCP session manager of `/mcp`) require, whichever request prepares or replaces it."""
    try:
        async with life:
            entered.set_result(None)
            await stop.wait()
    except BaseException as exc:
        if entered.done():
            raise
        entered.set_exception(exc)
