# ruff: noqa  (written in the AgentMap 0.9 style on purpose)
import logging
from typing import Any, Dict, Optional

from agentmap.agents.builtins.echo_agent import EchoAgent
from agentmap.services.execution_tracking_service import ExecutionTrackingService


class ShoutingEchoAgent(EchoAgent):
    def __init__(
        self,
        name: str,
        prompt: str,
        context: Optional[Dict[str, Any]] = None,
        logger: Optional[logging.Logger] = None,
        execution_tracking_service: Optional[ExecutionTrackingService] = None,
        state_adapter_service=None,
    ):
        super().__init__(
            name=name,
            prompt=prompt,
            context=context,
            logger=logger,
            execution_tracking_service=execution_tracking_service,
            state_adapter_service=state_adapter_service,
        )

    def process(self, inputs: Dict[str, Any]) -> Any:
        return {k: str(v).upper() + "!" for k, v in super().process(inputs).items()}
