"""`ConfigWarning`: a finding of `validate_config` that is worth saying but does not stop the workflow.

`validate_config` returns messages (or `(column, message)` pairs); a message that is a `ConfigWarning`
is reported with severity `warning` (the workflow still compiles and runs) instead of `error`.
"""

from __future__ import annotations

__all__ = ["ConfigWarning"]


class ConfigWarning(str):
    """A `validate_config` message reported as a warning, e.g. what the node assumed for an unknown value."""

    __slots__ = ()
