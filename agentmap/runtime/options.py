"""`CompileOptions`: everything `agentmap.compile` takes besides the workflow, as one typed object.

`compile` builds it once from its keywords; the layers that compile on someone's behalf (batch's workflow recipe,
its worker processes and Ray workers) carry it whole instead of forwarding a dict of keywords by hand.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from agentmap.errors import ConfigError, ErrorCode

if TYPE_CHECKING:
    from agentmap.agents.registry import AgentRegistry
    from agentmap.config import Settings
    from agentmap.runtime.tracking import SuccessPolicy

__all__ = ["MISSING_INPUTS", "CompileOptions", "MissingInputs", "check_mode"]

MissingInputs = Literal["error", "warn", "ignore"]
"""What a run does when its initial state lacks an input no node writes: refuse it (`missing-state`), log a
warning and run (the node reads None), or run without a word (the caller checked, or means it)."""
MISSING_INPUTS: tuple[str, ...] = get_args(MissingInputs)


def check_mode(mode: Any) -> MissingInputs:
    """`mode` as a `MissingInputs` value.

    Raises:
        ConfigError: `mode` is not one of `MISSING_INPUTS` (`bad-config`).
    """
    if mode not in MISSING_INPUTS:
        raise ConfigError(
            f"missing_inputs must be one of {', '.join(MISSING_INPUTS)}, not {mode!r}",
            code=ErrorCode.BAD_CONFIG,
            hint='missing_inputs="warn" runs with a warning',
        )
    return cast(MissingInputs, mode)


@dataclass(frozen=True)
class CompileOptions:
    """The options of `agentmap.compile` (its keyword arguments of the same names; see its docstring).

    Attributes:
        langgraph: The keywords passed on to `StateGraph.compile` (`interrupt_before`, `store`, `debug`, ...).
        config_file: The configuration file `settings` came from (`from_settings` names it): part of the revision a
            thread records (`runtime.revisions`).

    Picklable as long as its values are (a checkpointer *string*, a tracing exporter's name, folders, settings):
    batch ships it to worker processes and Ray workers.
    """

    checkpointer: Any = None
    success_policy: SuccessPolicy | None = None
    critical_nodes: Sequence[str] = ()
    functions_dir: str | Path | None = None
    agents_dir: str | Path | None = None
    settings: Mapping[str, Any] | None = None
    registry: AgentRegistry | None = None
    state_keys: Sequence[str] = ()
    tracing: Any = None
    fuse: bool = False
    missing_inputs: MissingInputs = "error"
    langgraph: Mapping[str, Any] = field(default_factory=dict)
    config_file: str | Path | None = None

    @classmethod
    def of(cls, caller: str, keywords: Mapping[str, Any], *, refuse: Sequence[str] = ()) -> CompileOptions:
        """The options named by `caller`'s keyword arguments: ours by name, the rest LangGraph's compile keywords.

        Raises:
            TypeError: A keyword that is neither (or one of `refuse`), worded as Python words it.
        """
        ours, theirs = _split(caller, keywords, refuse)
        return cls(**ours, langgraph=theirs)

    @classmethod
    def from_settings(cls, settings: Settings) -> CompileOptions:
        """What the settings name (`agentmap.yaml`, `AGENTMAP_*`): folders, agent settings, success policy."""
        return cls(**settings.compile_options(), **settings.policy_options(), config_file=settings.source)

    @classmethod
    def given(cls, caller: str, options: CompileOptions | None, keywords: Mapping[str, Any]) -> CompileOptions:
        """The options of a function taking `options=` or `compile`'s keywords (`threads`, `open_thread`, ...).

        Raises:
            TypeError: Both were given, or an unknown keyword.
        """
        if options is None:
            return cls.of(caller, keywords)
        if keywords:
            raise TypeError(f"{caller}() takes either options=CompileOptions(...) or its keywords, not both")
        return options

    def but(self, **changes: Any) -> CompileOptions:
        """These options with `changes`: ours replaced by name, LangGraph's compile keywords added to `langgraph`.

        Raises:
            TypeError: An unknown keyword.
        """
        ours, theirs = _split("CompileOptions.but", changes, ())
        return replace(self, **ours, langgraph={**self.langgraph, **theirs})

    def reading(self) -> dict[str, Any]:
        """The keywords of `agentmap.validate` and `agentmap.load` among these options (folders, settings, registry)."""
        return {name: getattr(self, name) for name in _READING}


_READING = ("functions_dir", "agents_dir", "settings", "registry")


def _split(caller: str, keywords: Mapping[str, Any], refuse: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`keywords` as ours (by field name) and LangGraph's compile keywords; anything else a `TypeError`."""
    own = {f.name for f in fields(CompileOptions)} - {"langgraph"}
    for name in keywords:
        if name in refuse or (name not in own and name not in _langgraph_keywords()):
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")
    return {k: v for k, v in keywords.items() if k in own}, {k: v for k, v in keywords.items() if k not in own}


def _langgraph_keywords() -> frozenset[str]:
    """The keyword arguments `StateGraph.compile` takes (besides the checkpointer and name `compile` sets)."""
    from langgraph.graph import StateGraph

    return frozenset(inspect.signature(StateGraph.compile).parameters) - {"self", "checkpointer", "name"}
