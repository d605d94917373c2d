"""AgentMap: turn a spreadsheet into a running agent workflow on LangGraph.

```python
import agentmap

app = agentmap.compile("graphs/hello_world.csv")
result = app.invoke({"name": "Ada"})
print(result.state["greeting"], result.success)
```

Names are imported on first use, so `import agentmap` stays cheap until a workflow is compiled.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agentmap._lazy import lazy_exports
from agentmap._version import __version__

if TYPE_CHECKING:
    from agentmap.agents.base import AgentEnvironment, BaseAgent
    from agentmap.agents.registry import agent, registry
    from agentmap.agents.state import StateAdapter
    from agentmap.batch import BatchResult, batch
    from agentmap.errors import (
        AgentMapError,
        AgentNotFoundError,
        ConfigError,
        ErrorCode,
        GraphNotFoundError,
        NodeError,
        ValidationError,
        WorkflowFileError,
        WorkflowValidationError,
    )
    from agentmap.runtime.api import compile, load, run, validate
    from agentmap.runtime.checkpoint import async_checkpointer, checkpointer
    from agentmap.runtime.events import RunHooks, RunInfo
    from agentmap.runtime.items import item_store
    from agentmap.runtime.options import CompileOptions
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.threads import ThreadInfo, threads
    from agentmap.runtime.tracking import ExecutionTracker, NodeExecution
    from agentmap.spec.models import GraphSpec, Issue, NodeSpec, Workflow

__all__ = [  # noqa: RUF022 (grouped by topic)
    # Workflows
    "CompiledWorkflow",
    "CompileOptions",
    "RunResult",
    "RunHooks",
    "RunInfo",
    "compile",
    "load",
    "run",
    "validate",
    # The agent contract
    "AgentEnvironment",
    "BaseAgent",
    "ExecutionTracker",
    "NodeExecution",
    "StateAdapter",
    "agent",
    "registry",
    # The specification
    "GraphSpec",
    "Issue",
    "NodeSpec",
    "Workflow",
    # Errors
    "AgentMapError",
    "AgentNotFoundError",
    "ConfigError",
    "GraphNotFoundError",
    "NodeError",
    "ValidationError",
    "WorkflowFileError",
    "WorkflowValidationError",
    "ErrorCode",
    "__version__",
    # Durable runs
    "ThreadInfo",
    "async_checkpointer",
    "checkpointer",
    "item_store",
    "threads",
    # Batch runs
    "BatchResult",
    "batch",
    # Tools
    "tool",
]

_HOMES = {
    "CompiledWorkflow": "agentmap.runtime.runner",
    "CompileOptions": "agentmap.runtime.options",
    "RunResult": "agentmap.runtime.results",
    "RunHooks": "agentmap.runtime.events",
    "RunInfo": "agentmap.runtime.events",
    "compile": "agentmap.runtime.api",
    "load": "agentmap.runtime.api",
    "run": "agentmap.runtime.api",
    "validate": "agentmap.runtime.api",
    "AgentEnvironment": "agentmap.agents.base",
    "BaseAgent": "agentmap.agents.base",
    "ExecutionTracker": "agentmap.runtime.tracking",
    "NodeExecution": "agentmap.runtime.tracking",
    "StateAdapter": "agentmap.agents.state",
    "agent": "agentmap.agents",  # the package, which registers the built-in types
    "registry": "agentmap.agents",
    "GraphSpec": "agentmap.spec.models",
    "Issue": "agentmap.spec.models",
    "NodeSpec": "agentmap.spec.models",
    "Workflow": "agentmap.spec.models",
    "AgentMapError": "agentmap.errors",
    "AgentNotFoundError": "agentmap.errors",
    "ConfigError": "agentmap.errors",
    "GraphNotFoundError": "agentmap.errors",
    "NodeError": "agentmap.errors",
    "ValidationError": "agentmap.errors",
    "WorkflowFileError": "agentmap.errors",
    "WorkflowValidationError": "agentmap.errors",
    "ErrorCode": "agentmap.errors",
    "ThreadInfo": "agentmap.runtime.threads",
    "async_checkpointer": "agentmap.runtime.checkpoint",
    "checkpointer": "agentmap.runtime.checkpoint",
    "item_store": "agentmap.runtime.items",
    "threads": "agentmap.runtime.threads",
    "BatchResult": "agentmap.batch",
    "batch": "agentmap.batch",
    "tool": "agentmap.agents.journal",
}

logging.getLogger("agentmap").addHandler(logging.NullHandler())


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
