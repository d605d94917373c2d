"""Text tools for graphs/llm_offline.csv: plain Python functions, loaded as LangChain tools."""

from __future__ import annotations

__all__ = ["reverse_text", "title_case", "word_count"]


def word_count(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text to count.
    """
    return len(text.split())


def reverse_text(text: str) -> str:
    """Reverse a text, character by character.

    Args:
        text: The text to reverse.
    """
    return text[::-1]


def title_case(text: str) -> str:
    """Capitalize every word of a text (title case).

    Args:
        text: The text to capitalize.
    """
    return text.title()
