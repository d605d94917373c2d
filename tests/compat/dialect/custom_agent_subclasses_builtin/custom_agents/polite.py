# ruff: noqa  (written in the AgentMap 0.9 style on purpose)
from agentmap.agents.builtins.default_agent import DefaultAgent


class PoliteAgent(DefaultAgent):
    def process(self, inputs):
        return self.prompt + ", if you please"
