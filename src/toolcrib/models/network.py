"""The network guard every backend that sends a request checks first (models, embedders, webhooks).

Tests set ``ALLOW_NETWORK`` to False (in conftest): then only loopback hosts may be contacted. The flag is
read at call time, never at import, so setting it after import takes effect.
"""

from __future__ import annotations

import ipaddress

import httpx

from toolcrib.errors import ModelUnavailable

__all__ = ["ALLOW_NETWORK", "ensure_network_allowed", "is_loopback"]

ALLOW_NETWORK: bool = True


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def ensure_network_allowed(url: object) -> None:
    """Refuse a non-loopback host while ``ALLOW_NETWORK`` is False (as in the test suite)."""
    if ALLOW_NETWORK:
        return
    host = httpx.URL(str(url)).host
    if not is_loopback(host):
        raise ModelUnavailable(
            f"network access to '{host}' is blocked (toolcrib.models.network.ALLOW_NETWORK is False, "
            "as in the test suite); only loopback servers may be contacted"
        )
