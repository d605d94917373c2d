"""An agent's input/output mapping: which state keys `process` reads, and the update its output becomes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentmap.agents.state import StateAdapter, parse_input_field, parse_output_field

__all__ = ["IOMapping"]


class IOMapping:
    """Input_Fields and Output_Field of one node, parsed once.

    Args:
        input_fields: `key`, `state_key:param` or `param=state_key` entries.
        output_field: `key`, or `a|b` (the agent returns a dict with those keys), `state_key=result_key`.
    """

    def __init__(self, input_fields: Sequence[str], output_field: str) -> None:
        self.input_fields = list(input_fields)
        self.output_field = output_field
        self.reads: tuple[tuple[str, str], ...] = tuple(parse_input_field(f) for f in self.input_fields)
        """`(state key, parameter)` of each input field, in order."""
        fields = (output_field or "").split("|")
        self.writes: tuple[tuple[str, str | None], ...] = tuple(parse_output_field(k) for k in fields if k.strip())
        """`(state key, result key or None)` of each output field, in order."""

    def inputs(self, state: Any) -> dict[str, Any]:
        """`{param: value}` for each input field, read from a dict state or any object state."""
        if type(state) is dict or isinstance(state, Mapping):  # a dict (what LangGraph hands a node) first
            return {param: state.get(key) for key, param in self.reads}
        return StateAdapter.get_inputs(state, self.input_fields)

    def update(self, output: Any) -> dict[str, Any]:
        """The state update `output` becomes (empty for no output field or a None output).

        Raises:
            TypeError: Several output fields, and `output` is not a dict.
            KeyError: Several output fields, and `output` lacks one of their keys.
        """
        outputs = self.writes
        if not outputs or output is None:
            return {}
        if len(outputs) == 1 and outputs[0][1] is None:
            return {outputs[0][0]: output}
        if not isinstance(output, Mapping):
            raise TypeError(
                f"Output_Field '{self.output_field}' maps several fields, so the agent must return a dict "
                f"with the keys {', '.join(src or key for key, src in outputs)}; it returned {type(output).__name__}"
            )
        missing = [src or key for key, src in outputs if (src or key) not in output]
        if missing:
            raise KeyError(
                f"the agent's result has no key {', '.join(repr(k) for k in missing)} "
                f"(Output_Field '{self.output_field}'); it returned keys {sorted(map(str, output))}"
            )
        return {key: output[src or key] for key, src in outputs}
