"""The HTTP service (``toolcrib serve``): the API, run streams, approvals and the page.

``toolcrib.service.app.create_app(workspace)`` builds the ASGI app (needs the ``server`` extra);
Credentials (API keys, JWTs, rate windows) come from ``toolcrib.auth``, shared with the MCP server.
"""
