"""Router for `func:choose_lane` in custom_router.csv: orders over 100 EUR go to manual review."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def choose_lane(state: Mapping[str, Any], success_target: str | None, failure_target: str | None) -> str:
    """Return `Review` for amounts over 100, `Express` otherwise (a failed Receive goes to Review too)."""
    if not state.get("last_action_success", True):
        return "Review"
    return "Review" if float(state.get("amount") or 0) > 100 else "Express"
