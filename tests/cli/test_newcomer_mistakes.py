"""Mistakes a newcomer makes, through the real command (in process): each is caught, explained, or handled."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentmap.cli.app import run_cli

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "graphs"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    for name in ("AGENTMAP_CONFIG", "AGENTMAP_ALLOWED_ROOTS"):
        monkeypatch.delenv(name, raising=False)


def cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = run_cli([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- an initial state without the inputs no node writes ------------------------------------------


def test_a_typo_in_the_initial_state_is_refused_naming_the_key_it_meant(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "run", GRAPHS / "hello_world.csv", "--state", '{"nmae": "Ada"}', "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "missing-state"  # not `Hello, None!`, exit 0
    assert "error[missing-state]: the initial state has no 'name', read by node 'Greet'" in err
    assert "did you mean 'name'?" in err and """--state '{"name": "Ada"}'""" in err and "--missing-inputs warn" in err


def test_missing_inputs_warn_runs_with_a_warning_and_strict_is_still_understood(
    capsys: pytest.CaptureFixture[str],
) -> None:
    hello = GRAPHS / "hello_world.csv"
    code, out, err = cli(capsys, "run", hello, "--state", '{"nmae": "Ada"}', "--missing-inputs", "warn", "--json")
    assert code == 0 and json.loads(out)["state"]["greeting"] == "Hello, None!"  # asked for: it runs
    assert "warning: the initial state has no 'name', read by node 'Greet'" in err and "did you mean" in err
    code, out, err = cli(capsys, "run", hello, "--state", "{}", "--missing-inputs", "ignore", "--json")
    assert code == 0 and "warning" not in err
    code, _, err = cli(capsys, "run", hello, "--state", "{}", "--strict")  # the older spelling of the default
    assert code == 2 and "error[missing-state]" in err and "'name'" in err
    code, _, err = cli(capsys, "run", hello, "--json")  # the .state.json
    assert code == 0 and "warning" not in err
    code, _, err = cli(capsys, "run", hello, "--missing-inputs", "loud")
    assert code == 2 and "--missing-inputs must be error, warn or ignore" in err


@pytest.mark.parametrize("workflow", [*sorted(p.name for p in GRAPHS.glob("*.csv")), "assistant/assistant.csv"])
def test_the_bundled_workflows_run_without_the_warning(capsys: pytest.CaptureFixture[str], workflow: str) -> None:
    target = f"{GRAPHS / workflow}::Main" if workflow == "subgraph.csv" else str(GRAPHS / workflow)
    code, _, err = cli(capsys, "run", target, "--json")
    assert code == 0 and "warning: the initial state" not in err


# -- a CSV saved by Excel in another locale ------------------------------------------------------


def test_a_semicolon_cp1252_csv_runs_with_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    body = "GraphName;Node;AgentType;Prompt;Input_Fields;Output_Field\nG;Greet;template;Olá, {name}!;name;greeting\n"
    (tmp_path / "flow.csv").write_bytes(body.encode("cp1252"))
    code, out, err = cli(capsys, "run", "flow.csv", "--state", '{"name": "Zoe"}', "--json")
    assert code == 0 and json.loads(out)["state"]["greeting"] == "Olá, Zoe!"
    assert "warning[csv-dialect]" in err and "';'" in err and "warning[encoding]" in err
    code, out, _ = cli(capsys, "validate", "flow.csv")
    assert code == 0 and "2 warnings" in out


def test_a_misspelt_column_is_named_by_run_too_not_only_by_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.csv").write_text("GraphName,Node,AgentType,Promt,Output_Field\nG,A,default,Hi,out\n")
    code, out, err = cli(capsys, "run", "flow.csv", "--json")
    assert code == 0 and json.loads(out)["state"]["out"] == "[A] DefaultAgent executed"  # the prompt was left out
    assert "warning[unknown-column]: unknown column 'Promt' is ignored; did you mean 'Prompt'?" in err
    assert err.count("unknown-column") == 1


# -- a file with several graphs and no selector --------------------------------------------------


def test_a_file_whose_other_graphs_are_subgraphs_runs_its_top_graph(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "run", GRAPHS / "subgraph.csv", "--json")
    document = json.loads(out)
    assert code == 0 and document["graph"] == "Main"
    assert document["state"]["framed"] == "*** Hello, Ada Lovelace! ***"


def test_several_top_graphs_are_listed_with_the_command_to_run_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "two.csv"
    path.write_text("GraphName,Node,AgentType\nA,X,echo\nB,Y,echo\n", encoding="utf-8")
    code, _, err = cli(capsys, "run", path)
    assert code == 3 and "holds 2 graphs (A, B)" in err
    assert f"agentmap run {path}::A" in err and f"agentmap run {path}::B" in err


# -- a deep or huge final state ------------------------------------------------------------------


def _echo_chain(folder: Path, nodes: int) -> Path:
    rows = ["GraphName,Node,AgentType,Input_Fields,Output_Field,Edge"]
    rows += [f"G,N{i},echo,x{i},x{i + 1},{f'N{i + 1}' if i + 1 < nodes else ''}" for i in range(nodes)]
    path = folder / "chain.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_json_writes_a_state_nested_a_thousand_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chain = _echo_chain(tmp_path, 1000)
    code, out, err = cli(capsys, "run", chain, "--state", '{"x0": "hi"}', "--json", "--debug", "--fuse")
    assert code == 0, err
    assert len(out) < 20_000_000  # compact below the first levels: size in proportion to the state
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # only to read the document back here
    try:
        document = json.loads(out)
    finally:
        sys.setrecursionlimit(limit)
    value = document["state"]["x1000"]
    for i in range(999, 0, -1):
        value = value[f"x{i}"]
    assert value == {"x0": "hi"}


def test_the_terminal_view_cuts_long_values_unless_full() -> None:
    from rich.console import Console

    from agentmap.cli.render import state_view

    def shown(**options: bool) -> str:
        console = Console(width=100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
        console.print(state_view({"big": "x" * 1_000_000, "many": list(range(1000))}, **options))
        return console.export_text()

    text = shown()
    assert len(text) < 5_000 and "1,000,000 characters; --full shows all" in text and "980 more items" in text
    assert len(shown(full=True)) > 1_000_000


def test_column_names_are_suggested_by_meaning_and_no_finding_sits_on_a_missing_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "flow.csv"
    flow.write_text("GraphName,NodeName,Type,Text,Next\nG,A,template,Hello {name},B\nG,B,echo,,\n", encoding="utf-8")
    assert run_cli(["validate", str(flow)]) == 4
    out = capsys.readouterr().out
    assert "unknown column 'Text' is ignored; did you mean 'Prompt'?" in out  # not the look-alike 'next'
    # The template's missing prompt is reported on its row, not on a Context (or Prompt) cell the file lacks.
    assert f"{flow}:2: error[bad-config]: a template node needs a Prompt" in out
    assert "add a Prompt column to the file and fill it in for 'A'" in out
    assert ":Context" not in out
