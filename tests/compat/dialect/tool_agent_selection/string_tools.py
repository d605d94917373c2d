# ruff: noqa  (written in the AgentMap 0.9 style on purpose)
from langchain_core.tools import tool


@tool
def uppercase(text: str) -> str:
    """Convert text to uppercase."""
    return text.upper()


@tool
def reverse(text: str) -> str:
    """Reverse the text."""
    return text[::-1]
