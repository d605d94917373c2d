"""AgentMap."""
