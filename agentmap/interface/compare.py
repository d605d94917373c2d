"""`agentmap eval diff`: compare the scores of two evaluation folders and flag regressions.

Each scenario is compared at the largest k both folders have runs for: its pass^k and its pass rate in BASE
and in NEW. It got worse or better when they moved; it regressed when NEW's pass rate lies below the lower
bound of BASE's 95% interval of the pass rate (`evaluate.INTERVAL_METHOD`), that is beyond what BASE's own
uncertainty explains. Since a scenario's pass^k is its pass rate to the k, this is the same as NEW's pass^k
(rate^k) below BASE's pass^k interval, for every k; the rule does not hinge on pass^k at k = runs, which one
failure drops to 0. The overall figures (pass^1, the mean over scenarios) are compared the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any
from xml.etree import ElementTree

from agentmap.interface.scores import INTERVAL_METHOD, EvalReport, ScenarioScore

__all__ = ["EvalDiff", "ScenarioChange", "describe", "diff_reports", "junit_xml"]


@dataclass(frozen=True)
class ScenarioChange:
    """One scenario (or `all`, the overall figure) in both folders.

    Attributes:
        name: The scenario's name, or `all`.
        k: The k compared (the fewest runs either folder has); 0 when one folder lacks the scenario.
        base: BASE's pass^k, or None when BASE has no runs of it.
        new: NEW's pass^k, or None when NEW has no runs of it.
        base_rate: BASE's pass rate (pass^1).
        new_rate: NEW's pass rate.
        base_interval: BASE's 95% interval of the pass rate.
        status: `worse`, `better`, `same`, `added` (only in NEW) or `removed` (only in BASE).
        regression: True when NEW's pass rate is below BASE's interval.
    """

    name: str
    k: int
    base: float | None
    new: float | None
    base_rate: float | None = None
    new_rate: float | None = None
    base_interval: tuple[float, float] | None = None
    status: str = "same"
    regression: bool = False


@dataclass
class EvalDiff:
    """What `diff_reports` found.

    Attributes:
        base_dir: The BASE folder.
        new_dir: The NEW folder.
        scenarios: One change per scenario, BASE's order then the scenarios only NEW has.
        overall: The overall pass^k compared.
        interval_method: How the intervals are made.
    """

    base_dir: str
    new_dir: str
    scenarios: list[ScenarioChange] = field(default_factory=list)
    overall: ScenarioChange | None = None
    interval_method: str = INTERVAL_METHOD

    @property
    def regressions(self) -> list[ScenarioChange]:
        """The scenarios (and `all`) that regressed."""
        changes = [*self.scenarios, *([self.overall] if self.overall is not None else [])]
        return [c for c in changes if c.regression]

    def to_dict(self) -> dict[str, Any]:
        """The diff as JSON-ready data."""
        data = asdict(self)
        data["regressions"] = [c.name for c in self.regressions]
        return data


def diff_reports(base: EvalReport, new: EvalReport) -> EvalDiff:
    """Compare two reports' pass^k per scenario and overall."""
    result = EvalDiff(base_dir=base.logs_dir, new_dir=new.logs_dir)
    before = {s.name: s for s in base.scenarios}
    after = {s.name: s for s in new.scenarios}
    for name in [*before, *(n for n in after if n not in before)]:
        result.scenarios.append(_change(name, before.get(name), after.get(name)))
    k = min(max(base.pass_hat_k, default=0), max(new.pass_hat_k, default=0))
    if k:
        figures = (base.pass_hat_k[k], new.pass_hat_k[k], base.pass_hat_k[1], new.pass_hat_k[1])
        result.overall = _compare("all", k, *figures, base.intervals[1])
    return result


def _change(name: str, base: ScenarioScore | None, new: ScenarioScore | None) -> ScenarioChange:
    if base is None or new is None:
        only = base or new
        assert only is not None
        value, rate = only.pass_hat_k[only.runs], only.pass_hat_k[1]
        status = "added" if base is None else "removed"
        if base is None:
            return ScenarioChange(name, 0, None, value, new_rate=rate, status=status)
        return ScenarioChange(name, 0, value, None, base_rate=rate, status=status)
    k = min(base.runs, new.runs)
    figures = (base.pass_hat_k[k], new.pass_hat_k[k], base.pass_hat_k[1], new.pass_hat_k[1])
    return _compare(name, k, *figures, base.intervals[1])


def _compare(
    name: str, k: int, base: float, new: float, base_rate: float, new_rate: float, interval: tuple[float, float]
) -> ScenarioChange:
    before, after = (base, base_rate), (new, new_rate)
    status = "worse" if after < before else "better" if after > before else "same"
    regression = new_rate < interval[0] - 1e-9  # not for float noise around a bound of 0
    return ScenarioChange(name, k, base, new, base_rate, new_rate, interval, status, regression)


def junit_xml(diff: EvalDiff) -> str:
    """The diff as a JUnit XML report: one test case per scenario and one for `all`; a regression fails."""
    changes = [*diff.scenarios, *([diff.overall] if diff.overall is not None else [])]
    suite = ElementTree.Element(
        "testsuite",
        name="agentmap eval diff",
        tests=str(len(changes)),
        failures=str(len(diff.regressions)),
    )
    for change in changes:
        case = ElementTree.SubElement(suite, "testcase", classname="agentmap.eval", name=change.name)
        if change.regression:
            failure = ElementTree.SubElement(case, "failure", message=describe(change))
            failure.text = f"{describe(change)}\nBASE: {diff.base_dir}\nNEW: {diff.new_dir}"
        elif change.status in ("added", "removed"):
            ElementTree.SubElement(case, "skipped", message=describe(change))
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def describe(change: ScenarioChange) -> str:
    """One line about a change: `pass^2 1.00 -> 0.00; pass rate 1.00 -> 0.00, below BASE's 95% interval ...`."""
    if change.status == "added":
        return "only in NEW"
    if change.status == "removed":
        return "only in BASE"
    assert change.base is not None and change.new is not None and change.base_interval is not None
    assert change.base_rate is not None and change.new_rate is not None
    low, high = change.base_interval
    where = "below" if change.regression else "within" if change.new_rate <= high else "above"
    text = (
        f"pass^{change.k} {change.base:.2f} -> {change.new:.2f}; pass rate {change.base_rate:.2f} -> "
        f"{change.new_rate:.2f}, {where} BASE's 95% interval [{low:.2f}-{high:.2f}]"
    )
    return f"{text}: regression" if change.regression else f"{text} ({change.status})"
