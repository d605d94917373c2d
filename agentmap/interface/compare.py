"""`agentmap eval diff`: compare the scores of two evaluation folders and flag regressions.

Each scenario is compared at the largest k both folders have runs for: its pass^k in BASE and in NEW. It got
worse or better when the figure moved; it regressed when NEW's pass^k lies below the lower bound of BASE's
95% interval (`evaluate.INTERVAL_METHOD`), that is beyond what BASE's own uncertainty explains. The overall
pass^k is compared the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any
from xml.etree import ElementTree

from agentmap.interface.evaluate import INTERVAL_METHOD, EvalReport, ScenarioScore

__all__ = ["EvalDiff", "ScenarioChange", "describe", "diff_reports", "junit_xml"]


@dataclass(frozen=True)
class ScenarioChange:
    """One scenario (or `all`, the overall figure) in both folders.

    Attributes:
        name: The scenario's name, or `all`.
        k: The k compared (the fewest runs either folder has); 0 when one folder lacks the scenario.
        base: BASE's pass^k, or None when BASE has no runs of it.
        new: NEW's pass^k, or None when NEW has no runs of it.
        base_interval: BASE's 95% interval of pass^k.
        status: `worse`, `better`, `same`, `added` (only in NEW) or `removed` (only in BASE).
        regression: True when NEW's pass^k is below BASE's interval.
    """

    name: str
    k: int
    base: float | None
    new: float | None
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
        result.overall = _compare("all", k, base.pass_hat_k[k], new.pass_hat_k[k], base.intervals[k])
    return result


def _change(name: str, base: ScenarioScore | None, new: ScenarioScore | None) -> ScenarioChange:
    if base is None or new is None:
        only = base or new
        assert only is not None
        value = only.pass_hat_k[only.runs]
        status = "added" if base is None else "removed"
        return ScenarioChange(name, 0, value if base else None, value if new else None, status=status)
    k = min(base.runs, new.runs)
    return _compare(name, k, base.pass_hat_k[k], new.pass_hat_k[k], base.intervals[k])


def _compare(name: str, k: int, base: float, new: float, interval: tuple[float, float]) -> ScenarioChange:
    status = "worse" if new < base else "better" if new > base else "same"
    regression = status == "worse" and new < interval[0] - 1e-9  # not for float noise around a bound of 0
    return ScenarioChange(name, k, base, new, interval, status, regression)


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
    """One line about a change: `pass^2 0.80 -> 0.20, below BASE's interval [0.45-1.00]: regression`."""
    if change.status == "added":
        return "only in NEW"
    if change.status == "removed":
        return "only in BASE"
    assert change.base is not None and change.new is not None and change.base_interval is not None
    low, high = change.base_interval
    text = f"pass^{change.k} {change.base:.2f} -> {change.new:.2f}"
    if change.regression:
        return f"{text}, below BASE's 95% interval [{low:.2f}-{high:.2f}]: regression"
    return f"{text} ({change.status})"
