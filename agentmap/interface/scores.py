"""What `agentmap eval score` reports: the findings and scores of runs and scenarios, pass^k and its intervals.

The evaluator (`evaluate.py`) fills these; `summarize` turns the runs' scores into each scenario's pass^k
(csv_specs/evaluation.md) with its 95% interval, and the report's overall figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from math import comb, sqrt
from typing import Any

from agentmap.interface.scenarios import Scenario

__all__ = [
    "INTERVAL_METHOD",
    "EvalReport",
    "Finding",
    "Judge",
    "JudgeScore",
    "RunScore",
    "ScenarioScore",
    "pass_hat_k",
    "summarize",
    "wilson",
]


@dataclass(frozen=True)
class Finding:
    """One reason a run failed.

    Attributes:
        kind: `format` (the log is malformed), `contract` (csv_specs/evaluation.md sections 4 and 6), `expectation`
            (the scenario's must include / must not include / refusal / clarification), `state` (an
            `expected_state` condition), `trajectory` (`expected_trajectory`), `goal` (a simulated user did not
            reach its goal) or `judge`.
        message: What is wrong, in words.
        turn: The 1-based user turn it concerns, when there is one.
    """

    kind: str
    message: str
    turn: int | None = None


@dataclass(frozen=True)
class JudgeScore:
    """An LLM judge's verdict on one run (`agentmap.interface.judge`).

    Attributes:
        model: The judge model, `provider:model`.
        score: 1 (unacceptable) to 5 (excellent), or None when the judge gave no usable verdict.
        passed: True when the run meets the rubric: the score reaches `threshold` and the judge did not fail it.
        threshold: The lowest passing score.
        reasons: The judge's reasons.
        error: Why there is no verdict (the call failed, the reply held no JSON verdict), or None.
    """

    model: str
    score: int | None
    passed: bool
    threshold: int
    reasons: tuple[str, ...] = ()
    error: str | None = None

    def findings(self) -> list[Finding]:
        """The run's `judge` finding: none when the run passed, else why it failed."""
        if self.error is not None:
            return [Finding("judge", f"the judge ({self.model}) gave no verdict: {self.error}")]
        if self.passed:
            return []
        why = f": {'; '.join(self.reasons)}" if self.reasons else ""
        return [Finding("judge", f"the judge ({self.model}) scored {self.score}/5, pass needs {self.threshold}{why}")]


Judge = Callable[[Scenario | None, Sequence[tuple[str, str]]], Sequence[Finding] | JudgeScore]
"""An optional extra check (an LLM judge): given a run's scenario (None when unmapped) and its `(role, text)`
turns, either findings or a `JudgeScore` (whose findings join the run's and which the report shows)."""


@dataclass
class RunScore:
    """The score of one log.

    Attributes:
        log: The log's file name.
        scenario: The scenario it belongs to (from the manifest), or None when unmapped.
        run: The run number (from the manifest).
        passed: True when there are no findings.
        user_turns: User turns in the conversation.
        refusals: Replies detected as refusals.
        clarifications: Replies detected as bounded clarifications.
        findings: Why it failed.
        judge: The LLM judge's verdict, when a judge ran (left out of `EvalReport.to_dict` when None).
    """

    log: str
    scenario: str | None = None
    run: int | None = None
    passed: bool = False
    user_turns: int = 0
    refusals: int = 0
    clarifications: int = 0
    findings: list[Finding] = field(default_factory=list)
    judge: JudgeScore | None = None


@dataclass
class ScenarioScore:
    """The runs of one scenario together.

    Attributes:
        name: The scenario's name.
        runs: How many runs were scored.
        passes: How many passed.
        pass_hat_k: pass^k for k = 1..runs: the chance that k runs drawn from these all pass.
        intervals: The 95% interval of the scenario's pass^k for each k (`INTERVAL_METHOD`).
        failed_checks: How many runs failed each kind of check (`contract`, `expectation`, `state`, ...).
    """

    name: str
    runs: int
    passes: int
    pass_hat_k: dict[int, float]
    intervals: dict[int, tuple[float, float]] = field(default_factory=dict)
    failed_checks: dict[str, int] = field(default_factory=dict)


@dataclass
class EvalReport:
    """Everything `score_logs` found.

    Attributes:
        logs_dir: The folder scored.
        runs: One score per log, in file-name order.
        scenarios: One entry per scenario that has runs, in manifest order.
        pass_hat_k: pass^k averaged over the scenarios that have at least k runs.
        intervals: The 95% interval of each overall pass^k: the mean of the scenarios' bounds.
        warnings: Things the user should know (no manifest, unknown scenarios, ...).
    """

    logs_dir: str
    runs: list[RunScore] = field(default_factory=list)
    scenarios: list[ScenarioScore] = field(default_factory=list)
    pass_hat_k: dict[int, float] = field(default_factory=dict)
    intervals: dict[int, tuple[float, float]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def repeated(self) -> bool:
        """True when a scenario has several runs: the report then gives intervals and per-check counts."""
        return any(s.runs > 1 for s in self.scenarios)

    @property
    def passed(self) -> int:
        """How many runs passed."""
        return sum(r.passed for r in self.runs)

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-ready data."""
        data = asdict(self)
        for run in data["runs"]:
            if run["judge"] is None:
                del run["judge"]  # without a judge the JSON is what it always was
        if self.repeated:
            data["interval_method"] = INTERVAL_METHOD
        else:  # one run per scenario: the JSON is what it always was
            del data["intervals"]
            for scenario in data["scenarios"]:
                del scenario["intervals"], scenario["failed_checks"]
        data["passed"] = self.passed
        data["total"] = len(self.runs)
        return data


def pass_hat_k(runs: int, passes: int, k: int) -> float:
    """Return pass^k: the chance that `k` runs drawn without replacement from `runs` all passed."""
    return comb(passes, k) / comb(runs, k) if 0 < k <= runs else 0.0


INTERVAL_METHOD = "wilson^k"
"""How the 95% intervals are made: the Wilson score interval of a scenario's pass rate (passes of runs), its
bounds raised to the power k (pass^k of a scenario is its pass rate to the k, and x^k keeps the order); the
interval of the overall pass^k is the mean of the scenarios' bounds."""

_Z95 = 1.959963984540054


def wilson(passes: int, runs: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a pass rate from `passes` of `runs` ((0, 1) without runs)."""
    if runs <= 0:
        return 0.0, 1.0
    rate, z2 = passes / runs, _Z95 * _Z95
    centre = (rate + z2 / (2 * runs)) / (1 + z2 / runs)
    half = _Z95 * sqrt(rate * (1 - rate) / runs + z2 / (4 * runs * runs)) / (1 + z2 / runs)
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(report: EvalReport, order: list[str]) -> None:
    tally: dict[str, list[int]] = {}
    failed: dict[str, dict[str, int]] = {}
    for name in order:
        tally.setdefault(name, [0, 0])
    for run in report.runs:
        if run.scenario is not None:
            counts = tally.setdefault(run.scenario, [0, 0])
            counts[0] += 1
            counts[1] += run.passed
            kinds = failed.setdefault(run.scenario, {})
            for kind in dict.fromkeys(f.kind for f in run.findings):
                kinds[kind] = kinds.get(kind, 0) + 1
    for name, (runs, passes) in tally.items():
        if runs:
            ks = {k: pass_hat_k(runs, passes, k) for k in range(1, runs + 1)}
            low, high = wilson(passes, runs)
            bounds = {k: (low**k, high**k) for k in ks}
            report.scenarios.append(
                ScenarioScore(name, runs, passes, ks, intervals=bounds, failed_checks=failed.get(name, {}))
            )
    most = max((s.runs for s in report.scenarios), default=0)
    for k in range(1, most + 1):
        having = [s for s in report.scenarios if s.runs >= k]
        report.pass_hat_k[k] = sum(s.pass_hat_k[k] for s in having) / len(having)
        report.intervals[k] = (
            sum(s.intervals[k][0] for s in having) / len(having),
            sum(s.intervals[k][1] for s in having) / len(having),
        )
