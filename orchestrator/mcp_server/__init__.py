"""`orchestrator mcp`: orchestrator as an MCP server over stdio (docs/actors.md).

`operations.py` holds what the tools do, over the session layer; `server.py` offers them as MCP
tools through the `mcp` package's `MCPServer` (the optional extra `mcp`).
"""
