"""What README.md and csv_specs/ say of the `agentmap` command is what the command does.

Each check reads one kind of statement from every user document (through tests/docs_text.py) and holds it to
the program: a command line written as code names a command and options it has; an option said to be `on` some
commands, or listed in a command's option table, is theirs; a default the documents state is the option's
default; an exit-code table lists the command line's exit codes (`agentmap.cli.app.EXIT_CODES`), as
`agentmap --help` does; the error paragraph cli.md shows is what `agentmap run` prints. A failure names the page
and line, and what the program says instead. (Error codes in the documents: tests/test_error_codes.py.)
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import typer
from cli_helpers import agentmap, write
from docs_text import Page, documents, read_page, spans

from agentmap.cli.app import EXIT_CODES, build_app

GENERAL_EXIT_TABLES = ("README.md", "csv_specs/cli.md")
"""The pages whose exit-code table is the command line's own: every code of `EXIT_CODES`, and no other."""

# A command line starts a span or a line, or follows a shell's `&&`, `|`, `;`, `$ `, `(` or the README's ` / `;
# `agentmap` elsewhere in a sentence ("the agentmap command", "db/agentmap") is not one.
_COMMAND_LINE = re.compile(
    r"(?:^|&&|\|\||\||;|\$|\(|\s/)\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:python -m )?agentmap (?=[\w-])"
)
_LINE_END = re.compile(r"\s{2,}|\s#|\s&&\s|;\s|\s>|\s2>|\s\|\s*(?:[a-z]|$)")  # a comment, another command, `>`
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_OPTION = re.compile(r"(?<![\w.:/=-])(--?[A-Za-z][\w-]*)")
_OPTION_ON = re.compile(r"`(--[\w-]+)(?: [^`]*)?`(?: \([^)]*\))? \(?on ((?:`[a-z][a-z ]*`(?:,? and |, | or )?)+)")


@cache
def commands() -> dict[str, Any]:
    """Every click command and group `agentmap` runs, by its path (`serve`, `eval run`, `threads`; "": the root)."""
    found: dict[str, Any] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        found[" ".join(path)] = command
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(build_app()), ())
    return found


def options_of(command: Any) -> dict[str, Any]:
    """Every option name `command` accepts (`--no-stream` and `-h` too), with its parameter."""
    accepted: dict[str, Any] = {name: None for name in ("-h", "--help")}
    for param in command.params:
        if param.param_type_name == "option":
            accepted.update(dict.fromkeys((*param.opts, *param.secondary_opts), param))
    return accepted


def _no_option(command: str, option: str) -> str:
    close = difflib.get_close_matches(option, [o for o in options_of(commands()[command]) if o.startswith("--")], 1)
    return f"`agentmap {command}` has no option {option}" + (f" (did you mean {close[0]}?)" if close else "")


# --- command lines ---------------------------------------------------------------------------------------------


def command_lines(text: str) -> Iterator[str]:
    """Each `agentmap ...` command line `text` holds, from its command's name to its end."""
    starts = list(_COMMAND_LINE.finditer(text))
    for index, match in enumerate(starts):
        line = text[match.end() : starts[index + 1].start() if index + 1 < len(starts) else len(text)]
        end = _LINE_END.search(line)
        yield line[: end.start()] if end else line


def checked_line(line: str) -> tuple[str, list[str]]:
    """The command `line` runs (`eval run`; "" for `agentmap` itself) and what is wrong with it."""
    command = ""
    for word in _QUOTED.sub("TEXT", line).split():
        subcommands = getattr(commands()[command], "commands", {})
        if word in subcommands:
            command = f"{command} {word}".strip()
        elif command == "" and not word.startswith("-"):
            close = difflib.get_close_matches(word, subcommands, 1)
            return "", [f"`agentmap` has no command {word!r}" + (f" (did you mean {close[0]!r}?)" if close else "")]
        else:
            break
    accepted = options_of(commands()[command])
    used = dict.fromkeys(_OPTION.findall(_QUOTED.sub("TEXT", line)))
    return command, [_no_option(command, option) for option in used if option not in accepted]


def command_line_problems(pages: Iterable[Page]) -> tuple[list[str], set[str]]:
    """What is wrong with the command lines of `pages`, and the commands they run."""
    wrong: list[str] = []
    seen: set[str] = set()
    for page in pages:
        for code in page.code:
            for line in command_lines(code.text):
                command, problems = checked_line(line)
                seen.add(command)
                wrong += [f"{code.where}: `agentmap {line.strip()}`: {problem}" for problem in problems]
    return wrong, seen


def test_every_command_line_the_documents_write_names_a_command_and_its_options() -> None:
    wrong, seen = command_line_problems(documents())
    assert {"run", "serve", "eval run", "threads show", "batch"} <= seen  # the scan reads the documents' commands
    assert not wrong, "\n".join(wrong)


# --- options said to be a command's ----------------------------------------------------------------------------


def option_problems(pages: Iterable[Page]) -> tuple[list[str], int]:
    """What is wrong with the options `pages` give commands: `--allow-root DIR` (on `run`, `validate`, ...), and
    the rows of a command's option table (`| option | meaning |` under `# \\`agentmap serve\\``); how many."""
    wrong: list[str] = []
    checked = 0
    for page in pages:
        for match in _OPTION_ON.finditer(page.prose):
            for name in spans(match.group(2)):
                checked += 1
                if name not in commands():
                    wrong.append(f"{page.where(match.start())}: `agentmap` has no command {name!r}")
                elif match.group(1) not in options_of(commands()[name]):
                    wrong.append(f"{page.where(match.start())}: {_no_option(name, match.group(1))}")
        for table in page.tables:
            if table.header[0].strip("` ").lower() not in ("option", "options") or not table.section:
                continue
            for line, row in table.rows:
                for option in re.findall(r"`(--[\w-]+)", row[0]):
                    checked += 1
                    if not any(option in options_of(commands()[name]) for name in table.section):
                        wrong.append(f"{page.name}:{line}: {_no_option(table.section[0], option)}")
    return wrong, checked


def test_the_options_the_documents_give_a_command_are_its_own() -> None:
    wrong, checked = option_problems(documents())
    assert checked > 20
    assert not wrong, "\n".join(wrong)


# --- defaults --------------------------------------------------------------------------------------------------

_VALUE = r"`[^`]+`|\d[\d,.]*(?: ?(?:MiB|KiB|s|ms)\b)?|[\w.:/~-]+"
_DEFAULT_SAID = (  # the forms a default is stated in, in the text after the option (its lines joined)
    re.compile(rf"^\s*\((?:default:? (?P<v>{_VALUE})|(?P<n>\d[\d,.]*(?: ?(?:MiB|KiB|s|ms)\b)?))\s*[;,):]"),
    re.compile(rf"\((?:by )?default:? (?P<v>{_VALUE})\s*[;,):]"),  # `--concurrency N` runs at once (default 4)
    re.compile(rf"\((?P<v>{_VALUE}) by default\b"),  # `--lease` (30 s by default)
    re.compile(r"(?P<v>`[^`]+`) \((?:the )?default\b"),  # `sync` (the default: ...)
)
_OPTION_SPAN = re.compile(r"`(--[\w-]+)((?: [^`]*)?)`")
_CLAUSE_END = re.compile(r"`--|\.\s|\|\s|\n")  # the next option, the sentence's or the table cell's end, a blank line
_UNITS = {"KiB": 1024, "MiB": 1024 * 1024}


def stated_defaults(page: Page) -> Iterator[tuple[str, tuple[str, ...], str, str]]:
    """(where, the section's commands, option, value) for each default `page` states for an option."""
    for match in _OPTION_SPAN.finditer(page.prose):
        option, value = match.group(1), match.group(2).strip()
        where, section = page.where(match.start()), page.section_at(match.start())
        after = re.sub(r"[ \t]*\n[ \t]*(?=\S)", " ", page.prose[match.end() : match.end() + 400])
        if value and re.match(r",? \(?the default\b", after):  # (`--k 1`, the default, ...)
            yield where, section, option, value
            continue
        row_start = page.prose.rfind("\n", 0, match.start()) + 1
        if re.fullmatch(r"\|\s*`--[\w-]+`", page.prose[row_start : match.end()]) and after.lstrip().startswith("|"):
            after = after.split("|", 2)[1]  # a table row of one option: what it says is in the next cell
        end = _CLAUSE_END.search(after)
        clause = after[: end.start()] if end else after
        for pattern in _DEFAULT_SAID:
            said = pattern.search(clause)
            if said:
                yield where, section, option, (said.group("v") or said.groupdict().get("n") or "").strip("`")
                break


def _is(said: str, default: Any) -> bool | None:
    """Whether the value `said` is `default` (None: a default no document can state, or a flag's)."""
    default = getattr(default, "value", default)  # a choice's Enum
    if default is None or isinstance(default, bool):
        return None
    if isinstance(default, int | float):
        number = re.fullmatch(r"(\d[\d,]*(?:\.\d+)?)\s*(KiB|MiB)?", said)
        return number is not None and float(number[1].replace(",", "")) * _UNITS.get(number[2] or "", 1) == default
    return said.replace(" ", "") == str(default).replace(" ", "")


def default_problems(pages: Iterable[Page]) -> tuple[list[str], int]:
    """What is wrong with the defaults `pages` state, and how many they compare.

    The option is the section's command's (`## \\`agentmap serve ...\\``), else every command's that has it; a
    default the program computes (`None`: "the CPUs", "eval_logs/<stem>") is not compared.
    """
    wrong: list[str] = []
    compared = 0
    for page in pages:
        for where, section, option, said in stated_defaults(page):
            having = {name: options_of(c)[option] for name, c in commands().items() if option in options_of(c)}
            candidates = {name: p for name, p in having.items() if name in section} or having
            verdicts = [_is(said, param.default) for param in candidates.values()]
            if all(verdict is None for verdict in verdicts):
                continue
            compared += 1
            if not any(verdicts):
                theirs = "; ".join(f"`agentmap {n}`'s is {_shown(p.default)}" for n, p in candidates.items())
                wrong.append(f"{where}: the default of {option} is said to be {said!r}; {theirs}")
    return wrong, compared


def _shown(default: Any) -> str:
    return repr(getattr(default, "value", default))


def test_the_defaults_the_documents_state_are_the_options_defaults() -> None:
    wrong, compared = default_problems(documents())
    assert compared > 15
    assert not wrong, "\n".join(wrong)


# --- exit codes ------------------------------------------------------------------------------------------------


def exit_code_problems(pages: Iterable[Page]) -> tuple[list[str], set[str]]:
    """What is wrong with the exit codes `pages` give, and the pages whose table is the command line's.

    A table of exit codes (`| exit code | meaning |`, or `| code | ... |` under "Exit codes") lists only the
    command line's; the README's and cli.md's list every one. An `exit N` in a sentence is one of them.
    """
    wrong: list[str] = []
    general: set[str] = set()
    known = ", ".join(map(str, EXIT_CODES))
    for page in pages:
        for table in page.tables:
            first = table.header[0].lower()
            if first != "exit code" and not (first == "code" and "exit code" in table.heading.lower()):
                continue
            listed = {int(row[0]): line for line, row in table.rows}
            wrong += [
                f"{page.name}:{line}: {code} is not an exit code ({known})"
                for code, line in listed.items()
                if code not in EXIT_CODES
            ]
            if page.name in GENERAL_EXIT_TABLES:
                general.add(page.name)
                wrong += [
                    f"{page.name}:{table.line}: the table lacks exit code {code} ({meaning})"
                    for code, meaning in EXIT_CODES.items()
                    if code not in listed
                ]
        for match in re.finditer(r"\bexit(?:s|ed)?(?: code)? (\d+)\b", page.prose):
            if int(match[1]) not in EXIT_CODES:
                wrong.append(f"{page.where(match.start())}: {match[0]!r}: {match[1]} is not an exit code ({known})")
    return wrong, general


def test_the_documents_exit_codes_are_the_command_lines() -> None:
    wrong, general = exit_code_problems(documents())
    assert general == set(GENERAL_EXIT_TABLES), "the command line's exit-code table is missing"
    assert not wrong, "\n".join(wrong)


def test_the_root_help_lists_every_exit_code() -> None:
    text = agentmap("--help").out
    listed = re.findall(r"^\s+(\d+)\s+(.+)$", text.split("Exit codes:")[1].split("\n\n")[0], re.M)
    assert {int(code): meaning.strip() for code, meaning in listed} == EXIT_CODES


# --- the error paragraph ---------------------------------------------------------------------------------------


def test_the_error_cli_md_shows_is_what_run_prints(tmp_path: Path) -> None:
    page = next(p for p in documents() if p.name == "csv_specs/cli.md").text
    shown = re.search(
        r"```csv\n(?P<csv>.*?)```\s+stops `agentmap run (?P<file>\S+)` with\s+```text\n(?P<err>.*?)```", page, re.S
    )
    assert shown, "csv_specs/cli.md: the sample workflow and the error `agentmap run` prints for it"
    write(tmp_path / shown["file"], shown["csv"])
    printed = agentmap("run", shown["file"], cwd=tmp_path)
    lines = shown["err"].splitlines()
    assert printed.code == 4 and len(printed.err.splitlines()) == len(lines), printed.err
    wrong = [
        f"csv_specs/cli.md shows {line!r}; `agentmap run` prints {out!r}"
        for line, out in zip(lines, printed.err.splitlines(), strict=True)
        if not re.fullmatch(".*".join(map(re.escape, line.split("..."))), out)  # `...`: the rest of the line
    ]
    assert not wrong, "\n".join(wrong)


# --- the checks themselves -------------------------------------------------------------------------------------

_WRONG_PAGE = """\
# `agentmap serve`

Run `agentmap serve graphs/ --prot 8123` or `agentmap srve`; `--webhook-host` on `serve` and `studio`.

| option | meaning |
|---|---|
| `--max-body` | the largest body (default 2 MiB) |
| `--colour` | none |

Options: `--port` (8000), `--host` (default 0.0.0.0).

| exit code | meaning |
|---|---|
| 0 | success |
| 8 | what |

It exits 9 then.
"""


def test_each_check_names_the_line_and_what_the_program_says() -> None:
    page = read_page("README.md", _WRONG_PAGE)
    assert command_line_problems([page])[0] == [
        "README.md:3: `agentmap serve graphs/ --prot 8123`: `agentmap serve` has no option --prot "
        "(did you mean --port?)",
        "README.md:3: `agentmap srve`: `agentmap` has no command 'srve' (did you mean 'serve'?)",
    ]
    assert [problem.split(" (did you mean")[0] for problem in option_problems([page])[0]] == [
        "README.md:3: `agentmap studio` has no option --webhook-host",
        "README.md:8: `agentmap serve` has no option --colour",
    ]
    assert default_problems([page])[0] == [
        "README.md:7: the default of --max-body is said to be '2 MiB'; `agentmap serve`'s is 1048576",
        "README.md:10: the default of --port is said to be '8000'; `agentmap serve`'s is 8123",
        "README.md:10: the default of --host is said to be '0.0.0.0'; `agentmap serve`'s is '127.0.0.1'",
    ]
    wrong, general = exit_code_problems([page])
    assert general == {"README.md"}
    codes = "(0, 1, 2, 3, 4, 5, 6, 7, 130, 143)"
    assert f"README.md:15: 8 is not an exit code {codes}" in wrong
    assert "README.md:12: the table lacks exit code 6 (the run's budget (--budget) was reached)" in wrong
    assert f"README.md:17: 'exits 9': 9 is not an exit code {codes}" in wrong
