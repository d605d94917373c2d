"""`python -m agentmap`: the `agentmap` command."""

from agentmap.cli import console

console()
