"""What the user documents (README.md, csv_specs/*.md) write as code, read the way a user reads them.

`documents()` gives each page's code: the `inline spans` of its prose (a span may run over a line break), the
lines of its shell blocks (```text, ```bash, ```console, untagged; a usage line's indented continuation lines
joined to it) and its tables, each with the page and line it is on and the `agentmap` commands that the
headings above it name (`## \\`agentmap serve ...\\``): what a bare `--port` in that section is an option of.
The tests that hold the documents to the program (tests/cli/test_cli_docs_agree.py, tests/test_error_codes.py)
read them through this module.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", *sorted(f"csv_specs/{p.name}" for p in (ROOT / "csv_specs").glob("*.md")))
"""The user documents, relative to the repository's root."""

SHELL_BLOCKS = frozenset({"", "text", "bash", "console", "sh", "shell"})
"""The fenced blocks that hold command lines (the others hold CSV, JSON, Python, YAML...)."""

_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w-]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n\s*\n).)+?)(?<!`)\1(?!`)", re.S)  # not across a blank line
_COMMAND_IN_HEADING = re.compile(r"`agentmap ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Code:
    """A piece of code a page shows: an inline span's text or a shell block's (logical) line."""

    page: str
    line: int
    text: str
    block: bool
    section: tuple[str, ...]
    """The command names (`serve`, `eval run`) the nearest heading above that names any names."""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Table:
    """A table of a page: its header cells and its rows (cells as written, `\\|` read as `|`), and where each is."""

    page: str
    line: int
    header: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]
    section: tuple[str, ...]
    heading: str
    """The text of the nearest heading above the table."""


@dataclass(frozen=True)
class Page:
    name: str
    text: str
    code: tuple[Code, ...]
    tables: tuple[Table, ...]
    prose: str
    """The page with its fenced blocks blanked (line numbers kept): where spans, tables and sentences are."""
    sections: tuple[tuple[str, ...], ...]
    """For each line (from line 1 at index 0), the commands the nearest heading above it that names any names."""

    def line_of(self, offset: int) -> int:
        return self.prose.count("\n", 0, offset) + 1

    def where(self, offset: int) -> str:
        """`page:line` of `offset` in `prose`."""
        return f"{self.name}:{self.line_of(offset)}"

    def section_at(self, offset: int) -> tuple[str, ...]:
        """The commands the section holding `offset` of `prose` is about."""
        return self.sections[self.line_of(offset) - 1]


@functools.cache
def documents() -> tuple[Page, ...]:
    """Every user document, read."""
    return tuple(read_page(name, (ROOT / name).read_text(encoding="utf-8")) for name in PAGES)


def read_page(name: str, text: str) -> Page:
    """`text` (the page `name`) read into its code and its tables."""
    lines = text.splitlines()
    sections, headings = _sections(lines)
    prose_lines: list[str] = []
    code: list[Code] = []
    fence: tuple[str, str] | None = None
    block: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence, block = (opened.group(1), opened.group(2).lower()), []
            prose_lines.append("")
        elif fence is not None and line.strip().startswith(fence[0]):
            if fence[1] in SHELL_BLOCKS:
                code += (Code(name, n, t, True, sections[n - 1]) for n, t in _logical_lines(block))
            fence = None
            prose_lines.append("")
        elif fence is not None:
            block.append((number, line))
            prose_lines.append("")
        else:
            prose_lines.append(line)
    prose = "\n".join(prose_lines)
    page = Page(name, text, (), (), prose, tuple(sections))
    for match in _SPAN.finditer(prose):
        first = page.line_of(match.start())
        spanned = re.sub(r"\s*\n\s*", " ", match.group(2).strip()).replace("\\|", "|")
        code.append(Code(name, first, spanned, False, sections[first - 1]))
    code.sort(key=lambda c: c.line)
    tables = tuple(_tables(name, prose_lines, sections, headings))
    return Page(name, text, tuple(code), tables, prose, tuple(sections))


def cells(row: str) -> tuple[str, ...]:
    """The cells of a table row, `\\|` read as `|`."""
    inner = row.strip().removeprefix("|").removesuffix("|")
    return tuple(cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(inner))


def spans(text: str) -> list[str]:
    """The inline code spans of `text`."""
    return [match.group(2).strip() for match in _SPAN.finditer(text)]


def _sections(lines: list[str]) -> tuple[list[tuple[str, ...]], list[str]]:
    """For each line: the commands the headings above it name, and the text of the nearest heading."""
    named: list[tuple[int, tuple[str, ...]]] = []  # (level, commands) of the headings open at this line
    found: list[tuple[str, ...]] = []
    headings: list[str] = []
    heading = ""
    fenced = False
    for line in lines:
        fenced ^= bool(_FENCE.match(line))
        match = None if fenced else _HEADING.match(line)
        if match:
            level = len(match.group(1))
            named = [(lvl, cmds) for lvl, cmds in named if lvl < level]
            commands = tuple(dict.fromkeys(_COMMAND_IN_HEADING.findall(match.group(2))))
            if commands:
                named.append((level, commands))
            heading = match.group(2)
        found.append(named[-1][1] if named else ())
        headings.append(heading)
    return found, headings


def _logical_lines(block: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A shell block's lines, a usage line's indented continuation (`    [--more ...]`) or `\\` line joined to it."""
    joined: list[tuple[int, str]] = []
    continued = False
    for number, line in block:
        if joined and (continued or re.match(r"^\s+\[", line)):
            joined[-1] = (joined[-1][0], f"{joined[-1][1].rstrip().removesuffix(chr(92))} {line.strip()}")
        else:
            joined.append((number, line))
        continued = line.rstrip().endswith("\\")
    return joined


def _tables(name: str, lines: list[str], sections: list[tuple[str, ...]], headings: list[str]) -> list[Table]:
    tables: list[Table] = []
    index = 0
    while index < len(lines):
        if (
            lines[index].lstrip().startswith("|")
            and index + 1 < len(lines)
            and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[index + 1])
        ):
            start = index
            rows: list[tuple[int, tuple[str, ...]]] = []
            index += 2
            while index < len(lines) and lines[index].lstrip().startswith("|"):
                rows.append((index + 1, cells(lines[index])))
                index += 1
            tables.append(Table(name, start + 1, cells(lines[start]), tuple(rows), sections[start], headings[start]))
        else:
            index += 1
    return tables
