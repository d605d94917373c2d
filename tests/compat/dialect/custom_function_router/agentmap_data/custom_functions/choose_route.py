# ruff: noqa  (written in the AgentMap 0.9 style on purpose)
# Auto-generated edge function for choose_route
from typing import Dict, Any, Union, List


def choose_route(state: Dict[str, Any], success_node="High", failure_node="Low") -> Union[str, List[str]]:
    return success_node if int(state.get("score", 0)) >= 50 else failure_node
