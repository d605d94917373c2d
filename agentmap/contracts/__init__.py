"""The data types of the contracts AgentMap implements (seeds 000-003): validation only, no behaviour."""
