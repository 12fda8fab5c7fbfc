"""A small receiver of toolcrib's proposal webhooks (standard library only).

    TOOLCRIB_WEBHOOK_SECRET=... python docs/webhook_receiver.py 8787

and in the workspace's toolcrib.toml:

    [[webhooks]]
    url = "http://127.0.0.1:8787/toolcrib"
    secret_env = "TOOLCRIB_WEBHOOK_SECRET"    # the same secret, in toolcrib's environment

It checks each body's signature and age, prints its ``text`` and answers 204; a bad signature gets 401, so
toolcrib logs the refusal and retries. To post into a chat channel instead, point ``url`` at the chat
tool's incoming-webhook address: the body's top-level ``text`` is what it shows.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verified(secret: bytes, headers: Mapping[str, str], body: bytes, tolerance_s: float = 300.0) -> bool:
    """``X-Toolcrib-Signature`` is ``sha256=`` + HMAC-SHA256(secret, TIMESTAMP + "." + body), and
    ``X-Toolcrib-Timestamp`` is recent (an old delivery replayed is refused)."""
    stamp = headers.get("X-Toolcrib-Timestamp", "")
    try:
        if abs(time.time() - float(stamp)) > tolerance_s:
            return False
    except ValueError:
        return False
    expected = "sha256=" + hmac.new(secret, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers.get("X-Toolcrib-Signature", ""))


class Receiver(BaseHTTPRequestHandler):
    secret = os.environ.get("TOOLCRIB_WEBHOOK_SECRET", "").encode()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not verified(self.secret, dict(self.headers.items()), body):
            self.send_response(401)
            self.end_headers()
            return
        event = json.loads(body)
        print(f"{event['event']}: {event['text']}", flush=True)  # a delivery id repeats on a retry
        self.send_response(204)
        self.end_headers()


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8787), Receiver).serve_forever()
