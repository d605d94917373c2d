"""`agentmap eval score RESULTS` on an `agentmap batch` output (agentmap/interface/batch_scores.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import GRAPHS, agentmap, write

ROWS = (
    "ticket_id,customer,amount,scenario,expected_state\n"
    'T-1,Ada,40,small,"lane == ""Express lane for 40 EUR"" and amount == 40"\n'
    'T-2,Grace,250,big,"""Grace"" in reply"\n'
    'T-3,Bob,30,small,"receipt and lane == ""nope"""\n'
)


def _score(*args: str | Path) -> tuple[int, dict[str, Any]]:
    result = agentmap("eval", "score", *args, "--json")
    document: dict[str, Any] = json.loads(result.out)
    return result.code, document


def test_a_batch_output_is_scored_by_its_expected_state_and_grouped_by_scenario(tmp_path: Path) -> None:
    rows = write(tmp_path / "rows.csv", ROWS)
    output = tmp_path / "results.csv"
    ran = agentmap(
        "batch", GRAPHS / "batch_example.csv", "--input", rows, "--output", output, "--id-column", "ticket_id"
    )
    assert ran.code == 0, ran.text
    code, scored = _score(output, "--report", tmp_path / "report.html")
    assert code == 1 and (scored["passed"], scored["total"]) == (2, 3)
    findings = {r["log"]: r["findings"] for r in scored["runs"]}
    assert findings["row T-1"] == findings["row T-2"] == []
    assert findings["row T-3"] == [
        {
            "kind": "state",
            "message": "receipt and lane == \"nope\": false (receipt is 'Refund of 30 EUR for Bob'; "
            "lane is 'Express lane for 30 EUR')",
            "turn": None,
        }
    ]
    small = next(s for s in scored["scenarios"] if s["name"] == "small")
    assert (small["runs"], small["passes"], small["pass_hat_k"]) == (2, 1, {"1": 0.5, "2": 0.0})
    assert "row T-3" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_a_failed_row_fails_and_jsonl_values_keep_their_types(tmp_path: Path) -> None:
    lines = [
        {"row_id": "1", "items": ["a", "b"], "success": True, "error": "", "expected_state": "len(items) >= 2"},
        {"row_id": "2", "items": [], "success": False, "error": "node Fetch failed", "expected_state": ""},
    ]
    output = write(tmp_path / "out.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    code, scored = _score(output)
    assert code == 1
    assert [r["findings"] for r in scored["runs"]] == [
        [],
        [{"kind": "run", "message": "the run failed: node Fetch failed", "turn": None}],
    ]


def test_a_table_that_is_not_a_batch_output_or_a_bad_condition_is_refused(tmp_path: Path) -> None:
    plain = write(tmp_path / "plain.csv", "a,b\n1,2\n")
    result = agentmap("eval", "score", plain)
    assert result.code == 2 and "is not an `agentmap batch` output" in result.text, result.text
    bad = write(tmp_path / "bad.csv", 'row_id,success,error,expected_state\n1,true,,"x.__class__"\n')
    result = agentmap("eval", "score", bad)
    assert result.code == 2 and f"error[bad-expression]: {bad}:2:expected_state:" in result.text, result.text
    result = agentmap("eval", "score", bad, "--judge", "offline")
    assert result.code == 2 and "--judge does not apply to a batch output" in result.text, result.text
