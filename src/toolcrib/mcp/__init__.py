"""toolcrib as an MCP client, a tool source like ``websearch`` or ``sandbox``: the tools of each
``[mcp.servers.NAME]`` registered as ``NAME.tool`` (``client``), their definitions pinned (``pins``).
The other direction, a workspace's tools served to MCP clients, is the front end ``toolcrib.mcp_server``.
Needs the ``mcp`` extra (the official SDK 2.x), imported only where used."""
