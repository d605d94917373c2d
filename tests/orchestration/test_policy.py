"""The policy enforcer: profile limits, request constraints, which one wins, and the messages."""

from __future__ import annotations

from typing import Any

import pytest

from agentmap.contracts.io import AgentRequest, ErrorType, RequestMetadata, success_response
from agentmap.orchestration import PlanStep, PolicyEnforcer, PolicyError, PolicySession


def session(profiles: dict[str, Any] | None = None, profile: str = "default", **constraints: Any) -> PolicySession:
    request = AgentRequest(
        goal="g", task="t", metadata=RequestMetadata(trace_id="x", profile=profile), constraints=constraints
    )
    return PolicyEnforcer(profiles).session(request)


def test_no_profile_and_no_constraints_allow_everything() -> None:
    s = session()
    assert s.check(PlanStep(tool="anything", cost_usd=99, api_calls=50), "a") is None


def test_allowed_tools_violation_names_the_constraint_and_its_source() -> None:
    error = session(allowed_tools=["search"]).check(PlanStep(tool="book"), "book")
    assert error is not None and error.type is ErrorType.PERMISSION
    assert error.message == (
        "policy violation: tool 'book' is not in allowed_tools (request constraints), which permits: search; "
        "allow the tool or change the plan"
    )
    assert error.details == {"constraint": "allowed_tools", "limit": ["search"], "source": "request constraints"}
    assert session(allowed_tools=["search"]).check(PlanStep(agent="writer"), "w") is None


def test_allowlists_intersect() -> None:
    s = session({"default": {"allowed_tools": ["a", "b"]}}, allowed_tools=["b", "c"])
    assert s.limits.allowed_tools == ["b"]
    error = s.check(PlanStep(tool="a"), "a")
    assert error is not None and "(profile 'default' and request constraints), which permits: b" in error.message
    assert s.check(PlanStep(tool="c"), "c") is not None
    assert s.check(PlanStep(tool="b"), "b") is None


def test_the_smaller_budget_wins_whichever_side_sets_it() -> None:
    tighter_request = session({"default": {"max_api_calls": 5, "max_cost_usd": 1.0}}, max_api_calls=2)
    assert (tighter_request.limits.max_api_calls, tighter_request.sources["max_api_calls"]) == (
        2,
        "request constraints",
    )
    assert (tighter_request.limits.max_cost_usd, tighter_request.sources["max_cost_usd"]) == (1.0, "profile 'default'")
    looser_request = session({"default": {"max_api_calls": 5}}, max_api_calls=50)
    assert (looser_request.limits.max_api_calls, looser_request.sources["max_api_calls"]) == (5, "profile 'default'")


def test_api_calls_are_counted_from_responses_and_estimates() -> None:
    s = session(max_api_calls=3)
    step = PlanStep(tool="t", api_calls=1)
    s.record(step, success_response("ok", metadata={"api_calls": 2}))
    assert s.check(step, "t") is None
    s.record(step, None)
    error = s.check(step, "third")
    assert error is not None
    assert "step 'third' would exceed max_api_calls=3 (request constraints): 3 used, the step needs 1" in error.message


def test_cost_budget_counts_declared_and_reported_costs() -> None:
    s = session({"cheap": {"max_cost_usd": 0.10}}, profile="cheap")
    s.record(PlanStep(tool="t"), success_response("ok", metadata={"cost_usd": 0.07}))
    assert s.check(PlanStep(tool="t", cost_usd=0.03), "ok") is None
    error = s.check(PlanStep(tool="t", cost_usd=0.05), "dear")
    assert error is not None and "max_cost_usd=0.1 (profile 'cheap')" in error.message
    assert error.details is not None and error.details["constraint"] == "max_cost_usd"


@pytest.mark.parametrize(
    ("inputs", "host"),
    [
        ({"url": "https://api.evil.com/v1"}, "api.evil.com"),
        ({"domain": "EVIL.com"}, "evil.com"),
        ({"nested": {"links": ["https://ok.org", "http://evil.com:8080/x"]}}, "evil.com"),
    ],
)
def test_blocked_domains_cover_subdomains_anywhere_in_the_inputs(inputs: dict[str, Any], host: str) -> None:
    error = session(blocked_domains=["evil.com"]).check(PlanStep(tool="fetch", inputs=inputs), "fetch")
    assert error is not None and error.type is ErrorType.PERMISSION
    assert f"reaches '{host}', blocked by blocked_domains (request constraints) entry 'evil.com'" in error.message


def test_blocked_domains_do_not_block_lookalikes_and_combine_both_sides() -> None:
    s = session({"default": {"blocked_domains": ["tracker.net"]}}, blocked_domains=["evil.com"])
    assert s.check(PlanStep(tool="f", inputs={"url": "https://notevil.com"}), "f") is None
    error = s.check(PlanStep(tool="f", inputs={"url": "https://x.tracker.net"}), "f")
    assert error is not None and "(profile 'default' and request constraints)" in error.message


@pytest.mark.parametrize(
    ("constraints", "words"),
    [
        ({"max_api_calls": "lots"}, "invalid constraints: max_api_calls"),
        ({"max_cost_usd": -1}, "invalid constraints: max_cost_usd"),
        ({"allowed_tools": "search"}, "invalid constraints: allowed_tools"),
    ],
)
def test_malformed_constraints_are_policy_errors(constraints: dict[str, Any], words: str) -> None:
    with pytest.raises(PolicyError, match=words):
        session(**constraints)


def test_unknown_profiles_and_bad_profile_limits_are_policy_errors() -> None:
    with pytest.raises(PolicyError, match="unknown profile 'gold'; the profiles are: default, silver"):
        session({"default": {}, "silver": {}}, profile="gold")
    with pytest.raises(
        PolicyError,
        match="invalid limits for profile 'silver': max_api_calls: Input should be greater than or equal to 0",
    ):
        PolicyEnforcer({"silver": {"max_api_calls": -3}})


def test_unknown_constraint_keys_are_left_to_agents() -> None:
    assert session(region="eu").check(PlanStep(tool="t"), "t") is None
