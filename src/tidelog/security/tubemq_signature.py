"""TubeMQ's client signature (the AuthenticateInfo of its master RPCs), and a replay guard for it.

The Java client (tubemq-core, ``TStringUtils.getAuthSignature``, called by
``SimpleClientAuthenticateHandler``) signs ``userName + timestamp + nonce`` (decimal text, no separator)
with HMAC-SHA1 keyed by the user's plain password, base64-encodes the MAC and URL-encodes the result
(``java.net.URLEncoder``, UTF-8). The key is the password itself: whoever verifies a signature holds a
password-equivalent secret (docs/security.md, "TubeMQ secrets").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections import OrderedDict
from urllib.parse import quote


def tube_signature(user: str, secret: str, timestamp: int, nonce: int) -> str:
    """The signature TubeMQ's Java client sends for ``user`` with password ``secret``."""
    mac = hmac.new(secret.encode("utf-8"), f"{user}{timestamp}{nonce}".encode(), hashlib.sha1).digest()
    # Base64's alphabet needs only '+', '/' and '=' escaped, as URLEncoder does ('%2B', '%2F', '%3D').
    return quote(base64.b64encode(mac).decode("ascii"), safe="")


def signature_matches(user: str, secret: str, timestamp: int, nonce: int, signature: str) -> bool:
    return hmac.compare_digest(tube_signature(user, secret, timestamp, nonce).encode(), signature.strip().encode())


class NonceCache:
    """The (user, timestamp, nonce) triples seen within the timestamp window, at most ``capacity`` of
    them (the oldest forgotten first): a signature is accepted once."""

    def __init__(self, window_ms: int, capacity: int = 100_000) -> None:
        self.window_ms = window_ms
        self.capacity = capacity
        self._seen: OrderedDict[tuple[str, int, int], int] = OrderedDict()

    def first_use(self, user: str, timestamp: int, nonce: int, now_ms: int) -> bool:
        """Record the triple; False when it was seen before (a replay)."""
        while self._seen:
            _, seen_at = next(iter(self._seen.items()))
            if seen_at >= now_ms - 2 * self.window_ms and len(self._seen) < self.capacity:
                break
            self._seen.popitem(last=False)
        key = (user, timestamp, nonce)
        if key in self._seen:
            return False
        self._seen[key] = now_ms
        return True


__all__ = ["NonceCache", "signature_matches", "tube_signature"]
