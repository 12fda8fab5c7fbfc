"""The HTTP service (``toolcrib serve``): the API, run streams, approvals and the page.

``toolcrib.service.app.create_app(workspace)`` builds the ASGI app (needs the ``server`` extra);
``toolcrib.service.keys`` (API keys, rate windows) needs no web framework.
"""
