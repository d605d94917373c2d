"""The version of AgentMap: written here once; `agentmap.__version__` and the rooms that name it read it."""

__version__ = "0.1.0"
