"""Built-in and custom agents: `BaseAgent`, `StateAdapter`, the registry and the built-in types."""
