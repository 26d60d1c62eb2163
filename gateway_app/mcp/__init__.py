"""The MCP server: its tools (server.py) and its Streamable HTTP mount (http.py)."""
