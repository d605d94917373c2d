"""`PolicyEnforcer`: applies a request's `constraints` and its profile's limits before each step.

Four limits are enforced: `allowed_tools`, `max_api_calls`, `max_cost_usd` and `blocked_domains`. A
request's constraints tighten its profile's limits and never loosen them (the smaller budget, the
intersection of allowlists, the union of blocked domains). A step that would break a limit is not run:
the check answers with a PERMISSION `AgentError` naming the constraint and where it came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentmap.contracts.io import AgentError, AgentRequest, AgentResponse, ErrorType, describe_validation_error
from agentmap.orchestration.planner import PlanStep

__all__ = ["PolicyEnforcer", "PolicyError", "PolicyLimits", "PolicySession"]

_HOST_KEYS = frozenset({"domain", "host", "hostname"})


class PolicyError(ValueError):
    """A profile name or a constraint value is invalid; the message says which and what is expected."""


class PolicyLimits(BaseModel):
    """The limits of a profile, or the constraints of a request. None means no limit.

    Attributes:
        allowed_tools: The only tools steps may call.
        max_api_calls: How many API calls all steps together may make.
        max_cost_usd: How much all steps together may cost.
        blocked_domains: Domains (and their subdomains) no step input may reach.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    allowed_tools: list[str] | None = None
    max_api_calls: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)
    blocked_domains: list[str] = Field(default_factory=list)


_NO_LIMITS = PolicyLimits()


class PolicySession:
    """The effective limits of one request and what its steps have used so far."""

    def __init__(self, limits: PolicyLimits, sources: Mapping[str, str]) -> None:
        self.limits = limits
        self.sources = dict(sources)
        self.api_calls = 0
        self.cost_usd = 0.0
        self._unlimited = limits == _NO_LIMITS

    def check(self, step: PlanStep, step_id: str) -> AgentError | None:
        """Return the PERMISSION error `step` would cause, or None when it may run."""
        limits = self.limits
        if self._unlimited:
            return None
        if step.tool and limits.allowed_tools is not None and step.tool not in limits.allowed_tools:
            allowed = ", ".join(limits.allowed_tools) or "none"
            return self._violation(
                "allowed_tools",
                limits.allowed_tools,
                f"tool '{step.tool}' is not in allowed_tools ({self.sources['allowed_tools']}), which permits: "
                f"{allowed}; allow the tool or change the plan",
            )
        if limits.max_api_calls is not None and self.api_calls + step.api_calls > limits.max_api_calls:
            return self._violation(
                "max_api_calls",
                limits.max_api_calls,
                f"step '{step_id}' would exceed max_api_calls={limits.max_api_calls} "
                f"({self.sources['max_api_calls']}): {self.api_calls} used, the step needs {step.api_calls}; "
                "raise the limit or shorten the plan",
            )
        if limits.max_cost_usd is not None and self.cost_usd + step.cost_usd > limits.max_cost_usd + 1e-12:
            return self._violation(
                "max_cost_usd",
                limits.max_cost_usd,
                f"step '{step_id}' would exceed max_cost_usd={limits.max_cost_usd} "
                f"({self.sources['max_cost_usd']}): ${self.cost_usd:.4f} spent, the step costs "
                f"${step.cost_usd:.4f}; raise the budget or choose cheaper steps",
            )
        if limits.blocked_domains:
            for host in _hosts(step.inputs):
                blocked = next((d for d in limits.blocked_domains if host == d or host.endswith("." + d)), None)
                if blocked is not None:
                    return self._violation(
                        "blocked_domains",
                        limits.blocked_domains,
                        f"step '{step_id}' reaches '{host}', blocked by blocked_domains "
                        f"({self.sources['blocked_domains']}) entry '{blocked}'; remove it from the step's inputs",
                    )
        return None

    def record(self, step: PlanStep, response: AgentResponse | None) -> None:
        """Count what a step used: the response's `api_calls` / `cost_usd` metadata, else the step's estimates."""
        if self._unlimited:
            return
        meta = response.metadata if response is not None else {}
        calls = meta.get("api_calls", step.api_calls)
        cost = meta.get("cost_usd", step.cost_usd)
        self.api_calls += calls if isinstance(calls, int) else step.api_calls
        self.cost_usd += float(cost) if isinstance(cost, (int, float)) else step.cost_usd

    def _violation(self, constraint: str, limit: Any, message: str) -> AgentError:
        return AgentError(
            type=ErrorType.PERMISSION,
            message=f"policy violation: {message}",
            details={"constraint": constraint, "limit": limit, "source": self.sources[constraint]},
        )


class PolicyEnforcer:
    """Holds the profiles' limits and starts a `PolicySession` per request.

    Args:
        profiles: Limits per profile name; a request's `metadata.profile` selects one. The `default`
            profile has no limits unless given here.
    """

    def __init__(self, profiles: Mapping[str, PolicyLimits | Mapping[str, Any]] | None = None) -> None:
        self.profiles: dict[str, PolicyLimits] = {}
        for name, limits in (profiles or {}).items():
            try:
                self.profiles[name] = PolicyLimits.model_validate(limits)
            except ValidationError as exc:
                raise PolicyError(f"invalid limits for profile '{name}': {describe_validation_error(exc)}") from None

    def session(self, request: AgentRequest) -> PolicySession:
        """Combine the request's profile and constraints into the limits its steps must keep.

        Raises:
            PolicyError: When the profile is unknown or a constraint has the wrong type.
        """
        name = request.metadata.profile
        profile = self.profiles.get(name)
        if profile is None:
            if self.profiles and name != "default":
                raise PolicyError(f"unknown profile '{name}'; the profiles are: {', '.join(sorted(self.profiles))}")
            profile = _NO_LIMITS
        if not request.constraints and profile == _NO_LIMITS:
            return PolicySession(_NO_LIMITS, {})
        try:
            constraints = PolicyLimits.model_validate(request.constraints)
        except ValidationError as exc:
            raise PolicyError(f"invalid constraints: {describe_validation_error(exc)}") from None
        return _combine(profile, constraints, f"profile '{name}'")


def _combine(profile: PolicyLimits, constraints: PolicyLimits, profile_source: str) -> PolicySession:
    request_source = "request constraints"
    sources: dict[str, str] = {}
    merged: dict[str, Any] = {}

    def pick(key: str, mine: Any, theirs: Any, tighter: Any) -> None:
        if mine is None or theirs is None:
            merged[key] = theirs if mine is None else mine
            sources[key] = request_source if mine is None else profile_source
        else:
            merged[key] = tighter(mine, theirs)
            if merged[key] == mine:
                sources[key] = profile_source
            elif merged[key] == theirs:
                sources[key] = request_source
            else:
                sources[key] = f"{profile_source} and {request_source}"

    pick("max_api_calls", profile.max_api_calls, constraints.max_api_calls, min)
    pick("max_cost_usd", profile.max_cost_usd, constraints.max_cost_usd, min)
    pick(
        "allowed_tools",
        profile.allowed_tools,
        constraints.allowed_tools,
        lambda a, b: [t for t in a if t in b],
    )
    blocked = list(dict.fromkeys([*profile.blocked_domains, *constraints.blocked_domains]))
    merged["blocked_domains"] = [d.lower().lstrip(".") for d in blocked]
    sources["blocked_domains"] = " and ".join(
        s for s, d in ((profile_source, profile.blocked_domains), (request_source, constraints.blocked_domains)) if d
    )
    return PolicySession(PolicyLimits.model_validate(merged), sources)


def _hosts(value: Any, key: str = "") -> Iterable[str]:
    if isinstance(value, str):
        if key.lower() in _HOST_KEYS:
            yield value.strip().lower()
        elif "://" in value:
            host = urlsplit(value.strip()).hostname
            if host:
                yield host.lower()
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _hosts(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _hosts(v, key)
