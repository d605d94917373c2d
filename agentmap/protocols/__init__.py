"""Workflows offered through the agent protocols other clients speak: `agentmap mcp` (MCP over stdio).

Each graph becomes a tool (`_tools.py`: description, input schema, arguments, reply), adapted to a protocol's
official SDK in its own module (`mcp.py`; `mcp_stdio.py` serves it on stdin/stdout), imported only when its command
runs.
"""
