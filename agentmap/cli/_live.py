"""The live table of `agentmap run` and `agentmap resume`: the hooks of the run it shows, redrawn on stderr."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from agentmap import RunHooks
from agentmap.cli import render

if TYPE_CHECKING:
    from rich.console import RenderableType

    from agentmap import NodeExecution, RunInfo

__all__ = ["LiveView"]


class LiveView(RunHooks):
    """A live table of the nodes of a run, redrawn on stderr as they start and finish.

    Give it to the run as its hooks (`invoke(..., hooks=[view])`); on a resumed thread it hears the earlier
    steps' nodes first. Its node events may come from parallel branches. It only records:
    rich's refresh thread draws (8 times a second), so drawing is never counted in a node's duration.
    `write` takes the LLM nodes' text as it streams (`Node: text`, a line a reply): the last lines show under
    the table.
    """

    _TEXT_LINES = 5

    def __init__(self, title: str) -> None:
        self._title = title
        self._text = ""
        self._executions: list[NodeExecution] = []
        self._seen: set[int] = set()
        self._lock = threading.Lock()
        self._live: Any = None

    def update(self, execution: NodeExecution) -> None:
        """Record a node starting or finishing."""
        with self._lock:
            if id(execution) not in self._seen:
                self._seen.add(id(execution))
                self._executions.append(execution)

    def node_started(self, run: RunInfo, node: NodeExecution) -> None:
        """A node of the run starts."""
        self.update(node)

    def node_ended(self, run: RunInfo, node: NodeExecution) -> None:
        """A node of the run ends (on a resumed thread, first each node of its earlier steps)."""
        self.update(node)

    def write(self, text: str) -> None:
        """Add streamed text (kept to the last lines shown)."""
        with self._lock:
            self._text = "\n".join((self._text + text).split("\n")[-self._TEXT_LINES :])

    def _render(self) -> RenderableType:
        from rich.console import Group
        from rich.text import Text

        with self._lock:
            executions, text = list(self._executions), self._text.strip("\n")
        table = render.summary_table(executions, title=self._title)
        if not text:
            return table
        return Group(table, *(Text(line, no_wrap=True, overflow="ellipsis") for line in text.split("\n")))

    def start(self) -> None:
        """Start drawing; the last frame stays on screen as the run's summary table."""
        from rich.live import Live

        self._live = Live(
            console=render.console(stderr=True),
            get_renderable=self._render,
            transient=False,
            refresh_per_second=8,
            redirect_stdout=False,
            redirect_stderr=True,  # log lines print above the table instead of breaking it
        )
        self._live.start()

    def stop(self, title: str | None = None) -> None:
        """Stop drawing, leaving the final table (retitled `title`, when given) on screen."""
        if title is not None:
            self._title = title
        if self._live is not None:
            self._live.stop()
            self._live = None
