"""The workflow specification: read a file into `Workflow` -> `GraphSpec` -> `NodeSpec`, and check it.

Nothing here knows about agents or LangGraph; the runtime joins the two.
"""

from agentmap.spec.loader import parse_selector, read_workflow
from agentmap.spec.models import FuncRef, GraphSpec, Issue, NodeSpec, Workflow
from agentmap.spec.validation import check_graph

__all__ = ["FuncRef", "GraphSpec", "Issue", "NodeSpec", "Workflow", "check_graph", "parse_selector", "read_workflow"]
