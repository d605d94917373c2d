"""Findings of `validate_config` beyond a plain message.

`validate_config` returns messages (or `(column, message)` pairs). A message that is a `ConfigWarning`
is reported with severity `warning` (the workflow still compiles and runs) instead of `error`; one that
is an `EnvironmentProblem` carries its own fix, outside the workflow file (an environment variable, a
package), instead of "fix the Context cell".
"""

from __future__ import annotations

__all__ = ["ConfigWarning", "EnvironmentProblem"]


class ConfigWarning(str):
    """A `validate_config` message reported as a warning, e.g. what the node assumed for an unknown value."""

    __slots__ = ()


class EnvironmentProblem(str):
    """A `validate_config` message whose fix lies outside the workflow file, e.g. a missing API key."""

    fix: str

    def __new__(cls, message: str, fix: str) -> EnvironmentProblem:
        """The message and what to do about it (`fix`)."""
        problem = super().__new__(cls, message)
        problem.fix = fix
        return problem
