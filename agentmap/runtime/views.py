"""Pictures and traces of the runtime's own objects, provided by the room that makes them.

`CompiledWorkflow.draw()`, `RunResult.draw()`, their Jupyter views, `compile(tracing=...)` and a TracerProvider
the user installed need the observe room, which sits above the runtime. The runtime says here what it needs
(`Views`); observe provides it as the entry point `views` of the group `agentmap.runtime` (pyproject.toml),
loaded the first time a picture or a trace is asked for. The runtime never imports observe.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from agentmap.errors import ConfigError

if TYPE_CHECKING:
    from agentmap.runtime.events import RunHooks
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["GROUP", "Views", "views"]

GROUP = "agentmap.runtime"


class Views(Protocol):
    """What the runtime asks of the room that draws and traces."""

    def draw_graph(self, app: CompiledWorkflow, path: str | Path | None) -> str:
        """The graph as SVG, also written to `path` (`.svg` or `.png`)."""

    def draw_run(self, app: CompiledWorkflow, result: RunResult, path: str | Path | None) -> str:
        """The graph as SVG with the path `result` took, also written to `path`."""

    def graph_bundle(self, app: CompiledWorkflow) -> dict[str, Any]:
        """Jupyter's mime bundle of a workflow."""

    def run_bundle(self, result: RunResult) -> dict[str, Any]:
        """Jupyter's mime bundle of a run."""

    def tracing(self, value: Any) -> RunHooks | None:
        """The run hooks `compile(..., tracing=value)` adds (ImportError without OpenTelemetry)."""

    def installed_provider(self) -> RunHooks | None:
        """Run hooks for the TracerProvider the user installed (None when none was)."""


@functools.cache
def views() -> Views:
    """The installed `Views` (the observe room's).

    Raises:
        ConfigError: AgentMap's entry points are not declared (`bad-config`): it was not installed.
    """
    from importlib.metadata import entry_points

    for ep in entry_points(group=GROUP, name="views"):
        return cast("Views", ep.load())
    raise ConfigError(
        f"drawing and tracing are not installed (no entry point 'views' of group {GROUP!r})",
        hint='reinstall AgentMap (pip install -e ".[dev]" in a checkout) so its entry points are declared',
    )
