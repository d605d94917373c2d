"""`eval diff`: comparing two reports (agentmap/interface/compare.py)."""

from __future__ import annotations

from xml.etree import ElementTree

from agentmap.interface.compare import diff_reports, junit_xml
from agentmap.interface.scores import EvalReport, RunScore, summarize


def _report(folder: str, outcomes: dict[str, list[bool]]) -> EvalReport:
    report = EvalReport(logs_dir=folder)
    for name, passes in outcomes.items():
        for number, passed in enumerate(passes, start=1):
            report.runs.append(RunScore(log=f"{name}{number}.log", scenario=name, run=number, passed=passed))
    summarize(report, list(outcomes))
    return report


def test_a_drop_within_base_interval_is_worse_but_no_regression() -> None:
    base = _report("base", {"a": [True] * 8, "b": [True] * 8})
    new = _report("new", {"a": [True] * 7 + [False], "b": [False] * 8})
    diff = diff_reports(base, new)
    a, b = diff.scenarios
    assert (a.k, a.base, a.new, a.status, a.regression) == (8, 1.0, 0.0, "worse", False)  # 7 of 8 is within
    assert (b.status, b.regression) == ("worse", True)
    assert diff.overall is not None and diff.overall.name == "all"
    assert [c.name for c in diff.regressions] == ["b", "all"]


def test_identical_reports_have_no_change() -> None:
    base = _report("base", {"a": [True, False, True], "b": [False] * 3})
    diff = diff_reports(base, base)
    assert {c.status for c in diff.scenarios} == {"same"} and not diff.regressions


def test_scenarios_in_one_folder_only_and_junit_escaping() -> None:
    base = _report("base", {"<gone>": [True], "kept & fine": [True]})
    new = _report("new", {"kept & fine": [False], "fresh": [True]})
    diff = diff_reports(base, new)
    assert {c.name: c.status for c in diff.scenarios} == {"<gone>": "removed", "kept & fine": "worse", "fresh": "added"}
    suite = ElementTree.fromstring(junit_xml(diff).split("?>", 1)[1])
    cases = {case.get("name"): case for case in suite}
    assert suite.get("failures") == "1"  # the kept scenario (overall: 1.00 -> 0.50 is within [0.21-1.00])
    kept_failure = cases["kept & fine"].find("failure")
    assert kept_failure is not None and "pass rate 1.00 -> 0.00, below" in str(kept_failure.get("message"))
    assert cases["<gone>"].find("skipped") is not None and cases["fresh"].find("skipped") is not None
