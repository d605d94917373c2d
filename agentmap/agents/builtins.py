"""The built-in agent types that need no LLM: default, echo, template, branching, success, failure,
input and summary. Context keys are documented in csv_specs/agents.md.
"""

from __future__ import annotations

import logging
import re
import string
import sys
from collections.abc import Mapping
from typing import Any

from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem, log_text
from agentmap.agents.findings import ConfigWarning
from agentmap.agents.registry import agent
from agentmap.agents.state import parse_input_field

__all__ = [
    "BranchingAgent",
    "DefaultAgent",
    "EchoAgent",
    "FailureAgent",
    "InputAgent",
    "SuccessAgent",
    "SummaryAgent",
    "TemplateAgent",
    "safe_format",
]


class _SafeFormatter(string.Formatter):
    """`str.format` restricted to plain names: no attribute or index access, no nested fields."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        if not field_name.isidentifier():
            raise ValueError(
                f"template field {{{field_name}}} is not allowed: use plain names such as {{name}} "
                "(no attribute access, indexing or positional fields)"
            )
        if field_name not in kwargs:
            raise KeyError(
                f"the template uses {{{field_name}}} but the node's inputs are "
                f"{', '.join(sorted(kwargs)) or 'empty'}: add {field_name} to Input_Fields"
            )
        return kwargs[field_name], field_name

    def format_field(self, value: Any, format_spec: str) -> Any:
        sizes = [int(d) for d in _DIGITS.findall(format_spec)]
        if sizes and max(sizes) > MAX_FORMAT_SIZE:
            raise ValueError(
                f"the format spec {format_spec!r} asks for a width or precision of {max(sizes):,}, "
                f"above the limit of {MAX_FORMAT_SIZE:,}: use a smaller number"
            )
        return super().format_field(value, format_spec)


MAX_FORMAT_SIZE = 10_000
"""The largest width or precision a template's format spec may ask for (`{x:>100000000}` is refused)."""
_DIGITS = re.compile(r"\d+")
_FORMATTER = _SafeFormatter()


def safe_format(template: str, values: Mapping[str, Any]) -> str:
    """Format `template` with `values`, allowing only `{name}` fields (and format specs).

    Raises:
        KeyError: A field is not among `values`.
        ValueError: A field uses attribute or index access, or the template is malformed.
    """
    return _FORMATTER.vformat(template, (), dict(values))


@agent("default")
class DefaultAgent(BaseAgent):
    """Returns a deterministic message naming the node and its prompt; a placeholder while designing."""

    computes_only = True

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return `"[Node] prompt"` (or `"[Node] DefaultAgent executed"` without a prompt)."""
        return f"[{self.name}] {self.prompt}" if self.prompt else f"[{self.name}] DefaultAgent executed"


@agent("echo")
class EchoAgent(BaseAgent):
    """Echo agent that simply returns input data unchanged."""

    computes_only = True

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the inputs dict unchanged, or "No input provided to echo" without inputs."""
        if self._log.enabled(logging.INFO):
            self.log_info(f"[EchoAgent] '{self.name}' received inputs: {log_text(inputs)} and prompt: '{self.prompt}'")
        if inputs:
            return inputs
        return "No input provided to echo"

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        """Warn about a Prompt with `{placeholders}`: echo returns its inputs and never formats its Prompt."""
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(prompt or "") if f]
        except ValueError:
            fields = []
        if not fields:
            return []
        return [
            (
                "Prompt",
                ConfigWarning(
                    f"an echo node returns its inputs and does not fill in its Prompt ({{{fields[0]}}} stays "
                    "unused; AgentMap 0.9 formatted it): make the node's AgentType `template` to get the text"
                ),
            )
        ]


@agent("template")
class TemplateAgent(BaseAgent):
    """Formats the Prompt with its inputs: `Hello, {name}!`."""

    computes_only = True

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the formatted prompt."""
        return safe_format(self.prompt, inputs)

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        """A template node needs a prompt whose fields are plain names, each one of its inputs."""
        if not prompt:
            return [("Prompt", "a template node needs a Prompt such as 'Hello, {name}!'")]
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(prompt) if f is not None]
        except ValueError as exc:
            return [("Prompt", f"the Prompt is not a valid template: {exc}")]
        bad = [f for f in fields if not f.isidentifier()]
        problems: list[ConfigProblem] = [
            ("Prompt", f"template field {{{f}}} is not allowed: use plain names such as {{name}}") for f in bad
        ]
        if "input_fields" not in context:  # called without the row's inputs: nothing to check them against
            return problems
        params = {parse_input_field(str(f))[1] for f in context.get("input_fields", [])}
        missing = [f for f in dict.fromkeys(fields) if f.isidentifier() and f not in params]
        problems += [
            (
                "Prompt",
                f"the template uses {{{f}}} but the node's inputs are {', '.join(sorted(params)) or 'empty'}: "
                f"add {f} to Input_Fields (or write {{{{{f}}}}} for a literal brace)",
            )
            for f in missing
        ]
        return problems


_TRUE = ("true", "yes", "y", "1", "success", "ok", "pass")
_FALSE = ("false", "no", "n", "0", "failure", "fail", "error", "", "none")


@agent("branching")
class BranchingAgent(BaseAgent):
    """Succeeds or fails from an input value, so Success_Next / Failure_Next can branch on it.

    Context:
        field: The input to test (default: the first input).
        success_values: Values meaning success (default: truthy values such as true, yes, 1, success).
        failure_values: Values meaning failure (default: false, no, 0, failure, empty).
        default_result: The outcome when the value is missing (None); without it a missing value fails.
        success_field: The AgentMap 0.9 name of `field`.
    """

    computes_only = True

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return a message on success; raise (failing the node) on a failure value."""
        key = self.context.get("field") or self.context.get("success_field") or next(iter(inputs), None)
        value = inputs.get(key) if key is not None else None
        if value is None and isinstance(self.context.get("default_result"), bool):
            if self.context["default_result"]:
                return f"{self.name}: {key} is missing -> success (default_result)"
            raise ValueError(f"{key} is missing and default_result is false")
        if self._is_success(value):
            return f"{self.name}: {key}={value!r} -> success"
        raise ValueError(f"{key}={value!r} is a failure value")

    def _is_success(self, value: Any) -> bool:
        text = str(value).strip().lower() if value is not None else ""
        success = [str(v).lower() for v in self.context.get("success_values", ())]
        failure = [str(v).lower() for v in self.context.get("failure_values", _FALSE)]
        if success:
            return text in success and text not in failure
        return text not in failure

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """`success_values` and `failure_values` must be lists; `default_result` true or false."""
        problems = [
            f'Context {key!r} must be a list of values, e.g. ["yes", "ok"]'
            for key in ("success_values", "failure_values")
            if key in context and not isinstance(context[key], list)
        ]
        if "default_result" in context and not isinstance(context["default_result"], bool):
            problems.append(f"Context 'default_result' must be true or false, not {context['default_result']!r}")
        return problems


@agent("success")
class SuccessAgent(BaseAgent):
    """Always succeeds; returns a message naming the node."""

    computes_only = True

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return `"[Node] succeeded"` (or the prompt)."""
        return self.prompt or f"[{self.name}] succeeded"


@agent("failure")
class FailureAgent(BaseAgent):
    """Always fails (takes Failure_Next); the Prompt is the failure message."""

    computes_only = True

    def process(self, inputs: dict[str, Any]) -> Any:
        """Raise, so the node fails."""
        raise RuntimeError(self.prompt or "this node always fails (agent type 'failure')")


@agent("input")
class InputAgent(BaseAgent):
    """Asks the Prompt as a question and returns the answer: on the terminal, or by pausing the run.

    Context:
        default: The answer used when there is no terminal (otherwise the node fails with a clear error).
        interrupt: True pauses the graph with LangGraph's `interrupt()` (the value is a `question(...)`:
            `{"question": ..., "node": ..., "kind": "input", ...}`) and returns the value the run is resumed
            with (`Command(resume=...)`, `agentmap run --resume`); the graph needs a checkpointer.
    """

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """`interrupt` must be true or false."""
        flag = context.get("interrupt", False)
        return [] if isinstance(flag, bool) else [f'Context "interrupt" must be true or false, not {flag!r}']

    @classmethod
    def may_pause(cls, context: Mapping[str, Any]) -> bool:
        """In `interrupt` mode the node pauses the run."""
        return context.get("interrupt") is True

    def process(self, inputs: dict[str, Any]) -> Any:
        """Pause for the answer (`interrupt` mode), or read one line from stdin after printing the prompt."""
        question = safe_format(self.prompt, inputs) if self.prompt else f"{self.name}: "
        if self.context.get("interrupt") is True:
            return self._pause(question.strip())
        if not sys.stdin or not sys.stdin.isatty():
            return self._piped()
        return input(question.rstrip() + " ")

    def _piped(self) -> Any:
        """Without a terminal, read one line of piped stdin per input node; then the Context default."""
        try:
            line = sys.stdin.readline() if sys.stdin else ""
        except (OSError, ValueError):  # stdin closed, or not readable (as under a test runner)
            line = ""
        if line:
            return line.rstrip("\r\n")
        if "default" in self.context:
            return self.context["default"]
        raise RuntimeError(
            "the input agent needs a terminal to ask its question, and stdin has no line left to read; "
            "run interactively, pipe one line per input node, pass the answer in the initial state "
            "(--state) and skip this node, resume a paused run (--resume), "
            'or set a default in Context: {"default": "..."}'
        )

    def _pause(self, text: str) -> Any:
        from agentmap.agents.pausing import ask
        from agentmap.agents.questions import question

        return ask(question(self.name, "input", text))


@agent("summary")
class SummaryAgent(BaseAgent):
    """Joins its inputs into one text.

    Context:
        format: How each input is written, with `{key}` and `{value}` (default `"{key}: {value}"`).
        separator: Between inputs (default a blank line).
    """

    computes_only = True

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the joined text."""
        item = self.context.get("format", "{key}: {value}")
        separator = self.context.get("separator", "\n\n")
        text = separator.join(safe_format(item, {"key": k, "value": v}) for k, v in inputs.items())
        return f"{safe_format(self.prompt, inputs)}{separator}{text}" if self.prompt else text
