"""The runtime's pictures and traces (`agentmap.runtime.views.Views`), provided by this room.

Declared as the entry point `views` of the group `agentmap.runtime` in pyproject.toml: the runtime loads it the
first time `draw()`, a Jupyter view or tracing is asked for, and never imports this room.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.observe.draw import draw_graph, draw_run
from agentmap.observe.outputs import run_bundle, save
from agentmap.observe.tracing import installed_provider_observer, resolve_tracing

if TYPE_CHECKING:
    from agentmap.runtime.events import RunHooks
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["VIEWS"]


class _Views:
    def draw_graph(self, app: CompiledWorkflow, path: str | Path | None) -> str:

        return save(draw_graph(app), path)

    def draw_run(self, app: CompiledWorkflow, result: RunResult, path: str | Path | None) -> str:

        return save(draw_run(app, result), path)

    def graph_bundle(self, app: CompiledWorkflow) -> dict[str, Any]:

        return {"image/svg+xml": draw_graph(app), "text/vnd.mermaid": app.draw_mermaid(), "text/plain": repr(app)}

    def run_bundle(self, result: RunResult) -> dict[str, Any]:

        return run_bundle(result)

    def tracing(self, value: Any) -> RunHooks | None:

        return resolve_tracing(value)

    def installed_provider(self) -> RunHooks | None:

        return installed_provider_observer()


VIEWS = _Views()
