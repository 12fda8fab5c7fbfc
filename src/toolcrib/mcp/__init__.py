"""MCP both ways, through the same gate: ``server`` (``toolcrib mcp serve``: a workspace's tools for an MCP
client) and ``client`` (``[mcp.servers.NAME]``: an MCP server's tools as ``NAME.tool``, pinned in ``pins``).
Needs the ``mcp`` extra (the official SDK 2.x), imported only where used."""
