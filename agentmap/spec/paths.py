"""The confinement check, under its earlier name: it lives in `agentmap._paths`, a room every layer may import."""

from __future__ import annotations

from agentmap._paths import ROOTS_VARIABLE, OutsideRootsError, allowed_roots, confine, is_under, widen_hint

__all__ = ["ROOTS_VARIABLE", "OutsideRootsError", "allowed_roots", "confine", "is_under", "widen_hint"]
