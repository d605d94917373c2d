"""Python source parsed into a syntax tree, one parse at a time in the process.

CPython 3.11 keeps the syntax-tree builder's recursion depth per interpreter, not per thread: two threads
parsing at once (two resumes compiling a custom agents folder, two server requests checking a condition) can
fail with `SystemError: AST constructor recursion depth mismatch` (fixed in later CPython releases). Every
parse in AgentMap goes through `parse`, which holds one lock for it; a parse takes microseconds.
"""

from __future__ import annotations

import ast
import threading

__all__ = ["parse_expression", "parse_module"]

_PARSING = threading.Lock()


def parse_module(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse(source, filename)`, never two at once (see the module's docstring)."""
    with _PARSING:
        return ast.parse(source, filename=filename)


def parse_expression(text: str) -> ast.expr:
    """The expression `text` (`ast.parse(text, mode="eval").body`), never two parses at once."""
    with _PARSING:
        return ast.parse(text, mode="eval").body
