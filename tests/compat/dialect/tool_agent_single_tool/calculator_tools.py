# ruff: noqa  (written in the AgentMap 0.9 style on purpose)
from langchain_core.tools import tool


@tool
def add(a: float, b: float) -> float:
    """Add two numbers together."""
    return a + b
