"""Who is calling, for every front end (the HTTP service and the MCP server): ``credentials`` turns a
bearer API key or JWT into the workspace principal; ``keys`` stores API keys and rate windows (SQLite or
PostgreSQL, no web framework)."""
