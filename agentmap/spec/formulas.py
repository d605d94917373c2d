"""Text a spreadsheet would run as a formula: formula injection (OWASP "CSV Injection").

A spreadsheet opening a CSV file (Excel, LibreOffice Calc) reads a cell starting with `=` as a formula, and
one starting with `+`, `-` or `@` as one too. A formula may call out (`=HYPERLINK(...)`, `=WEBSERVICE(...)`) or
start a program (DDE: `=cmd|' /C calc'!A0`), so a cell someone else wrote can act when the file is opened.
OWASP lists `=`, `+`, `-`, `@`, tab and carriage return as the characters that start such a cell.

The rule here is narrower for `+`, `-` and `@`, which start much text that is no threat (a bullet `- first`,
a number `-3` or `+1 555 0100`, a mention `@Ada`): text is formula-like when, after any tabs and carriage
returns it starts with,

- it starts with `=` and something follows (`=1+2`, `=SUM(A1)`, `=HYPERLINK("http://x")`), or
- it starts with `+`, `-` or `@` and its first word (up to a space) calls a function or a program: a name
  followed by `(` or `|` (`-2+3+cmd|' /C calc'!A0`, `@SUM(1+1)*cmd|...`, `+HYPERLINK("http://x")`).

`agentmap validate` warns of such a cell in a CSV workflow file (`formula-like-cell`), and `agentmap batch`
of such a value in a CSV output, which `escape_formula` writes as a spreadsheet shows text (`'=1+2`).

A workbook's cells are typed, so there text is simply kept text (`as_text`): the studio's saves and batch's
`.xlsx` outputs write no formula that was not one.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["as_text", "escape_formula", "formula_like"]

_FORMULA = re.compile(r"[\t\r]*(?:=.|[+\-@]\S*?[A-Za-z_][\w.]*[(|])", re.DOTALL)
_FIRST = frozenset("\t\r=+-@")  # what `_FORMULA` can start with: most text is told apart by its first character


def formula_like(text: str) -> bool:
    """Whether a spreadsheet opening a CSV file holding `text` in a cell would run it (see the module's rule)."""
    return text[:1] in _FIRST and _FORMULA.match(text) is not None


def escape_formula(text: str) -> str:
    """`text` with a `'` before it when it is formula-like (a spreadsheet then shows it as text, OWASP's escape);
    other text as it is. Escaping twice is escaping once: `'=1+2` is not formula-like."""
    return "'" + text if formula_like(text) else text


def as_text(cell: Any) -> bool:
    """Keep an openpyxl cell given text as text; True when it had to be retyped.

    openpyxl types a string starting with `=` as a formula and `#N/A` as an error value (`Cell._bind_value`),
    which would make text a formula Excel runs (and one openpyxl writes without a computed value, read back
    empty). Such a cell is typed as a string again; the caller then gives it Excel's quote prefix
    (`cell.quotePrefix = True`: shown as text, and kept text when edited in Excel).
    """
    if isinstance(cell.value, str) and cell.data_type != "s":
        cell.data_type = "s"
        return True
    return False
