"""Small adversarial workflow files: how long `agentmap.validate` takes on each, and its peak memory.

Each file is at most 1 MB (csv_specs/security.md, "No small file exhausts the machine": every such file
validates in at most 2 s or is refused with a located error). The yardstick is a plain 1 MB file of ordinary
rows, validated in the same process as each case, in pairs alternating with it (a busy machine slows both sides of
a pair alike): each case prints its seconds and the plain file's as min / median / max over the pairs, the ratio
of each pair, the peak memory the case's validation allocated (tracemalloc, a run of its own) and what validate
said (the finding codes, or the error code of a refused file). It asserts nothing: the figures are for reading
(tests/spec/test_small_files.py holds the checks that can fail).

Every case runs in a process of its own (after one validation of each file, so imports are not timed), with a
deadline (a case still running is printed as such).

Run: `python bench/small_files.py [--repeats N] [--deadline S] [--only NAME ...]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

MB = 1_000_000
HEADER = "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Context,Edge"


def _fill(path: Path, head: str, row: Callable[[int], str]) -> Path:
    """`head` then `row(0)`, `row(1)`, ... while the file stays within `MB` bytes."""
    parts, size, i = [head], len(head) + 1, 0
    while True:
        line = row(i)
        if size + len(line) + 1 > MB:
            break
        parts.append(line)
        size += len(line) + 1
        i += 1
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def plain(path: Path) -> Path:
    """Ordinary rows: graphs of 20 nodes, each a template node reading the last one's output."""
    return _fill(
        path,
        HEADER,
        lambda i: (
            f"Flow{i // 20},step{i % 20},template,Hello {{k{i % 20}}},k{i % 20},k{i % 20 + 1},,"
            + (f"step{i % 20 + 1}" if i % 20 < 19 else "")
        ),
    )


def subgraph_chain(path: Path) -> Path:
    """The issue's file scaled to 1 MB: graph i's one node calls graph i+1 (the last one is an echo)."""
    head = "GraphName,Node,AgentType,Context"
    rows = [head]
    size, i = len(head) + 1, 0
    while True:
        line = f'G{i},call,graph,"{{""workflow"": ""::G{i + 1}""}}"'
        if size + len(line) + 30 > MB:
            rows.append(f"G{i},leaf,echo,")
            break
        rows.append(line)
        size += len(line) + 1
        i += 1
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def long_chain_reversed(path: Path) -> Path:
    """One graph, one long chain of nodes written last to first (after the entry row): each node reads what the one
    before it in the chain writes, so what is known before a node travels against the order of the rows."""
    count = MB // 40
    rows = [HEADER, "G,entry,echo,,x,k0,,n0"]
    rows += [f"G,n{i},echo,,k{i},k{i + 1},,{f'n{i + 1}' if i + 1 < count else ''}" for i in range(count - 1, -1, -1)]
    return _rows_within(path, rows)


def wide_fan_out(path: Path) -> Path:
    """One node going to 18,000 nodes at once (`a|b|c|...`, a cell within the 131,072 characters read)."""
    count = 18_000
    targets = "|".join(f"b{i}" for i in range(count))
    rows = [HEADER, f"G,start,echo,,x,y,,{targets}"]
    rows += [f"G,b{i},echo,,y,o{i},," for i in range(count)]
    return _rows_within(path, rows)


def many_fan_outs(path: Path) -> Path:
    """Many nodes each fanning out to the same many nodes (every `|` edge a parallel branch)."""
    width = 300
    targets = "|".join(f"b{i}" for i in range(width))
    rows = [HEADER]
    rows += [f"G,b{i},echo,,y,o,,{f'b{i + 1}' if i + 1 < width else ''}" for i in range(width)]
    i = 0
    while sum(len(r) + 1 for r in rows) < MB - len(targets) - 40:
        rows.insert(1, f"G,s{i},echo,,x,y,,{targets}")
        i += 1
    return _rows_within(path, rows)


def many_nodes_one_graph(path: Path) -> Path:
    """One graph of as many nodes as fit, each going to the next."""
    return _fill(path, HEADER, lambda i: f"G,n{i},echo,,k{i},k{i + 1},,n{i + 1}")


def many_graphs(path: Path) -> Path:
    """As many one-node graphs as fit."""
    return _fill(path, HEADER, lambda i: f"G{i},n,echo,,,,,")


def long_cells(path: Path) -> Path:
    """Rows whose Prompt cells hold 100 KB each (the longest cell read is 131,072 characters)."""
    text = "word " * 20_000
    rows = [HEADER] + [f"G,n{i},template,{text},,out{i},,{f'n{i + 1}' if i < 8 else ''}" for i in range(9)]
    return _rows_within(path, rows)


def deep_context(path: Path) -> Path:
    """A Context cell of JSON nested as deep as one cell allows: `{"a": [[[[...]]]]}`, 60,000 levels."""
    depth = min(60_000, (MB - 200) // 2)
    cell = '{""a"": ' + "[" * depth + "]" * depth + "}"
    return _rows_within(path, [HEADER, f'G,n,echo,,,,"{cell}",'])


def many_pipes(path: Path) -> Path:
    """Cells of nothing but `|`: Input_Fields, Output_Field and Edge of 130,000 each."""
    pipes = "|" * 130_000
    return _rows_within(path, [HEADER, f"G,n,echo,,{pipes},{pipes},,{pipes}"])


def quoted_rows(path: Path) -> Path:
    """Ordinary rows, each second one's last cell a quoted cell of three lines that each read as a row."""
    row = "Flow{g},s{i},template,Hello {{k}},k,k,,"
    hidden = 'Flow{g},q{i},echo,,k,k,,"x\n' + "\n".join(["Flow,h,echo,p,i,o,c,e"] * 2) + '"'
    return _fill(path, HEADER, lambda i: (hidden if i % 2 else row).format(g=i // 20, i=i))


def unclosed_quote(path: Path) -> Path:
    """Ordinary rows, then one quote left open: the rest of the file would be one cell."""
    plain(path)
    text = path.read_text(encoding="utf-8").splitlines()
    text[1] = text[1].replace("Hello", '"Hello', 1)
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def xlsx_far_cell(path: Path) -> Path:
    """A workbook of two rows whose sheet also holds a cell at XFD1048576 (and declares A1:XFD1048576)."""
    return _workbook(
        path,
        "A1:XFD1048576",
        '<row r="1"><c r="A1" t="inlineStr"><is><t>GraphName</t></is></c><c r="B1" t="inlineStr"><is><t>Node</t>'
        '</is></c><c r="C1" t="inlineStr"><is><t>AgentType</t></is></c></row><row r="2"><c r="A2" t="inlineStr"><is>'
        '<t>G</t></is></c><c r="B2" t="inlineStr"><is><t>A</t></is></c><c r="C2" t="inlineStr"><is><t>echo</t></is>'
        '</c></row><row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>x</t></is></c></row>',
    )


def xlsx_many_cells(path: Path) -> Path:
    """A workbook within 1 MB (compressed) of 160,000 real cells, each holding a value."""
    cell = '<c r="{ref}" t="inlineStr"><is><t>x</t></is></c>'
    rows = "".join(
        f'<row r="{r}">' + "".join(cell.format(ref=f"{chr(65 + c)}{r}") for c in range(20)) + "</row>"
        for r in range(1, 8_001)
    )
    return _workbook(path, "A1:T8000", rows)


def xlsx_unpacked(path: Path) -> Path:
    """A workbook within 1 MB whose shared string unpacks to 200 MB."""
    return _workbook(path, "A1:A1", '<row r="1"><c r="A1" t="s"><v>0</v></c></row>', shared="x" * 200 * MB)


def xlsx_far_rows(path: Path) -> Path:
    """A workbook whose rows each have an emptied cell at column XFD (each row read 16,384 cells wide)."""
    rows = "".join(
        f'<row r="{r}"><c r="A{r}" t="inlineStr"><is><t>x</t></is></c><c r="XFD{r}"/></row>' for r in range(1, 20_001)
    )
    return _workbook(path, "A1:XFD20000", rows)


def yaml_bomb(path: Path) -> Path:
    """The "billion laughs": nine levels of aliases, each a list of nine of the level below."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]")
    lines.append("graphs:\n  G:\n    - Node: A\n      AgentType: echo\n      Prompt: *i")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def yaml_deep(path: Path) -> Path:
    """A YAML workflow whose one cell is a flow list nested as deep as 1 MB allows."""
    depth = (MB - 200) // 2
    path.write_text("- Node: A\n  GraphName: G\n  Prompt: " + "[" * depth + "]" * depth + "\n", encoding="utf-8")
    return path


def _rows_within(path: Path, rows: list[str]) -> Path:
    text = "\n".join(rows) + "\n"
    while len(text.encode("utf-8")) > MB:  # a generator's estimate was generous: drop rows from the end
        rows = rows[: max(2, len(rows) * 9 // 10)]
        text = "\n".join(rows) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def _workbook(path: Path, dimension: str, rows: str, shared: str = "") -> Path:
    """A minimal .xlsx (one sheet) written by hand, so the sheet says exactly what the case needs."""
    parts = {
        "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
        'package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/'
        'workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.'
        'spreadsheetml.worksheet+xml"/></Types>',
        "_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
        'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
        '2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": '<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/'
        'spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        '<sheets><sheet name="Flow" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.'
        'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.'
        'org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.'
        f'openxmlformats.org/spreadsheetml/2006/main"><dimension ref="{dimension}"/><sheetData>{rows}</sheetData>'
        "</worksheet>",
    }
    if shared:
        parts["xl/sharedStrings.xml"] = (
            '<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/'
            f'main"><si><t>{shared}</t></si></sst>'
        )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as book:
        for name, text in parts.items():
            book.writestr(name, text)
    return path


CASES: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "plain": ("plain.csv", plain),
    "subgraph-chain": ("chain.csv", subgraph_chain),
    "long-chain-reversed": ("reversed.csv", long_chain_reversed),
    "wide-fan-out": ("wide.csv", wide_fan_out),
    "many-fan-outs": ("fans.csv", many_fan_outs),
    "many-nodes": ("nodes.csv", many_nodes_one_graph),
    "many-graphs": ("graphs.csv", many_graphs),
    "long-cells": ("long.csv", long_cells),
    "deep-context": ("deep.csv", deep_context),
    "many-pipes": ("pipes.csv", many_pipes),
    "quoted-rows": ("quoted.csv", quoted_rows),
    "unclosed-quote": ("quote.csv", unclosed_quote),
    "xlsx-far-cell": ("far.xlsx", xlsx_far_cell),
    "xlsx-many-cells": ("cells.xlsx", xlsx_many_cells),
    "xlsx-unpacked": ("zip.xlsx", xlsx_unpacked),
    "xlsx-far-rows": ("rows.xlsx", xlsx_far_rows),
    "yaml-bomb": ("bomb.yaml", yaml_bomb),
    "yaml-deep": ("deep.yaml", yaml_deep),
}


def measure(path: Path, plain_path: Path, repeats: int) -> dict[str, object]:
    """In this process: one validation of each file (imports, warm-up), then `repeats` pairs of timed validations of
    the plain file and the case in alternating order (a busy machine slows both sides of a pair alike), then one of
    the case under tracemalloc for its peak."""
    import tracemalloc

    import agentmap

    def timed(file: Path) -> tuple[float, list[agentmap.Issue]]:
        start = time.perf_counter()
        issues = agentmap.validate(file)
        return time.perf_counter() - start, issues

    timed(plain_path)
    timed(path)
    plain, times, said = [], [], ""
    for repeat in range(repeats):
        if repeat % 2:
            seconds, issues = timed(path)
            plain.append(timed(plain_path)[0])
        else:
            plain.append(timed(plain_path)[0])
            seconds, issues = timed(path)
        times.append(seconds)
        codes = sorted({f"{i.severity}[{i.code}]" for i in issues})
        said = ", ".join(codes[:4]) + (", ..." if len(codes) > 4 else "") or "valid"
    tracemalloc.start()
    agentmap.validate(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"times": times, "plain": plain, "peak": peak, "said": said}


def run_case(path: Path, plain: Path, repeats: int, deadline: float) -> dict[str, object]:
    command = [sys.executable, __file__, "--measure", str(path), "--plain", str(plain), "--repeats", str(repeats)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=deadline, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"still running after {deadline:.0f} s (stopped)"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"exit {done.returncode}: {last[:120]}"}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5, help="timed pairs per case (default 5)")
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds a case may run (default 300)")
    parser.add_argument("--only", nargs="*", default=None, help="only these cases")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--plain", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.plain, args.repeats)))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="agentmap-small-files-"))
    plain = CASES["plain"][1](folder / CASES["plain"][0])
    names = [n for n in CASES if args.only is None or n in args.only]
    print(f"agentmap.validate on files of at most 1 MB, each case in a process of its own, {args.repeats} pairs of")
    print("timings alternating it with the plain 1 MB file of ordinary rows; min / median / max; in", folder)
    print(f"{'case':<20} {'size':>9} {'seconds':>24} {'plain, same run':>24} {'x plain':>20} {'peak MB':>7}  said")
    for name in names:
        file_name, make = CASES[name]
        path = plain if name == "plain" else make(folder / file_name)
        size = path.stat().st_size
        result = run_case(path, plain, args.repeats, args.deadline)
        if "error" in result:
            print(f"{name:<20} {size:>9,} {result['error']}")
            continue
        times = [float(t) for t in result["times"]]  # type: ignore[attr-defined]
        bases = [float(t) for t in result["plain"]]  # type: ignore[attr-defined]
        ratios = [t / b for t, b in zip(times, bases, strict=True)]
        peak = int(result["peak"]) / MB  # type: ignore[call-overload]
        print(
            f"{name:<20} {size:>9,} {_spread(times, '.2f'):>24} {_spread(bases, '.2f'):>24} "
            f"{_spread(ratios, '.2f'):>20} {peak:7.1f}  {result['said']}"
        )
    return 0


def _spread(values: list[float], spec: str) -> str:
    return " / ".join(format(v, spec) for v in (min(values), statistics.median(values), max(values)))


if __name__ == "__main__":
    sys.exit(main())
