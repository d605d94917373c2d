"""The files `agentmap init` writes and the stubs `agentmap scaffold` fills in."""

from __future__ import annotations

__all__ = ["AGENT_STUB", "ROUTER_STUB", "STARTER_FILES"]

_CONFIG = """\
# AgentMap settings. Every key is optional; environment variables AGENTMAP_<SECTION>__<KEY> override them.
# Relative paths resolve against this file's folder. Reference: csv_specs/cli.md.
workflow: workflow.csv          # what `agentmap run` runs when no file is named
paths:
  custom_agents: custom_agents  # BaseAgent subclasses, one or more per .py file
  functions: functions          # func: routers, `name.py` defining `name(state, success_target, failure_target)`
execution:
  success_policy: all_nodes     # all_nodes | final_node | critical_nodes (then list critical_nodes: [...])
logging:
  level: WARNING
"""

_WORKFLOW = """\
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge,Description
Starter,Greet,greeter,"Hello, {name}!","{""default"": ""world""}",name,greeting,func:choose_next,Greets someone
Starter,Welcome,template,{greeting} Welcome back.,,greeting,message,,Runs when the state has a name
Starter,Invite,template,{greeting} Put a name in the state next time.,,greeting,message,,Runs when it has none
"""

_AGENT = '''\
"""An example custom agent: the `greeter` agent type used by workflow.csv.

Every BaseAgent subclass in this folder is registered when a workflow is loaded; `@agentmap.agent`
names the type explicitly (otherwise `GreeterAgent` would register as `greeter`).
"""

from __future__ import annotations

from typing import Any

import agentmap


@agentmap.agent("greeter")
class GreeterAgent(agentmap.BaseAgent):
    """Formats the Prompt with the `name` input, falling back to Context `default` (with which a run needs no
    `name` in its initial state)."""

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the greeting (raising an exception here would fail the node)."""
        name = inputs.get("name") or self.context.get("default", "world")
        return self.prompt.replace("{name}", str(name))
'''

_ROUTER = '''\
"""An example router: `func:choose_next` in workflow.csv picks the node after Greet."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def choose_next(state: Mapping[str, Any], success_target: str | None, failure_target: str | None) -> str | None:
    """Return the next node's name (a list of names fans out; None ends the graph)."""
    return "Welcome" if state.get("name") else "Invite"
'''

STARTER_FILES: dict[str, str] = {
    "agentmap.yaml": _CONFIG,
    "workflow.csv": _WORKFLOW,
    "custom_agents/greeter.py": _AGENT,
    "functions/choose_next.py": _ROUTER,
}
"""Relative path -> content of the starter project."""

AGENT_STUB = '''\
"""The `{type}` agent type, scaffolded by `agentmap scaffold` from {file}.

Used by: {nodes}. Write what the node does in `process`; this file is yours (scaffold never
overwrites it without --force).
"""

from __future__ import annotations

from typing import Any

import agentmap


@agentmap.agent({type!r})
class {cls}(agentmap.BaseAgent):
    """{description}

    Inputs (a dict passed to `process`): {inputs}. Output: {outputs}.
    """

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the node's output; raise an exception to fail the node (it then takes Failure_Next)."""
        # TODO: replace this placeholder with the real work. self.prompt and self.context hold the row's cells.
        {body}
'''

ROUTER_STUB = '''\
"""Router `{name}` for `func:{name}`, scaffolded by `agentmap scaffold` from {file}.

Used by: {nodes}. This file is yours (scaffold never overwrites it without --force).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def {name}(
    state: Mapping[str, Any], success_target: str | None, failure_target: str | None
) -> str | list[str] | None:
    """Return the next node's name, a list of names (they run in parallel), or None to end the graph.

    `success_target` and `failure_target` are the node's Success_Next and Failure_Next cells (None when
    empty). {candidates}
    """
    # TODO: decide from the state. This placeholder follows the node's outcome.
    if state.get("last_action_success", True):
        return success_target
    return failure_target
'''
