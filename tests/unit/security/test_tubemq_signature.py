"""TubeMQ's client signature against vectors computed by the Java client's own code, and the nonce cache.

The vectors were printed by ``org.apache.inlong.tubemq.corebase.utils.TStringUtils.getAuthSignature``
(tubemq-core 1.13.0, the method the client's SimpleClientAuthenticateHandler signs with), run with
``java -cp tubemq-core-1.13.0.jar:commons-codec-1.17.0.jar:commons-lang3-3.12.0.jar`` on the arguments
below; the second has a non-ASCII password and a MAC whose base64 holds '/' and '+' (URL-encoded).
"""

from __future__ import annotations

import pytest

from tidelog.security.tubemq_signature import NonceCache, signature_matches, tube_signature

JAVA_VECTORS = [
    ("alice", "s3cret-Tube", 1764020000000, 123456789, "YUMVySg5Loo8V7S1ZzCjJy22WR4%3D"),
    ("bob", "pa ss+/=é", 1700000000123, 2147483646, "LkT2KqAHI%2FK3MS%2BELYul%2FI6gRvc%3D"),
]


@pytest.mark.parametrize(("user", "secret", "timestamp", "nonce", "expected"), JAVA_VECTORS)
def test_signature_is_the_java_clients(user: str, secret: str, timestamp: int, nonce: int, expected: str) -> None:
    assert tube_signature(user, secret, timestamp, nonce) == expected
    assert signature_matches(user, secret, timestamp, nonce, expected)


@pytest.mark.parametrize(("change", "value"), [(0, "alicf"), (1, "s3cret-Tubf"), (2, 1764020000001), (3, 123456780)])
def test_any_changed_input_fails_the_check(change: int, value: object) -> None:
    args = list(JAVA_VECTORS[0][:4])
    args[change] = value
    assert not signature_matches(*args, JAVA_VECTORS[0][4])  # type: ignore[arg-type]


def test_a_nonce_is_accepted_once_per_user_and_timestamp() -> None:
    cache = NonceCache(window_ms=1000)
    assert cache.first_use("alice", 5000, 7, now_ms=5000)
    assert not cache.first_use("alice", 5000, 7, now_ms=5100)
    assert cache.first_use("bob", 5000, 7, now_ms=5100)
    assert cache.first_use("alice", 5001, 7, now_ms=5100)


def test_the_cache_is_bounded_and_forgets_what_is_past_the_window() -> None:
    cache = NonceCache(window_ms=1000, capacity=3)
    for nonce in range(5):
        assert cache.first_use("alice", 5000, nonce, now_ms=5000)
    assert len(cache._seen) == 3
    assert cache.first_use("alice", 5000, 0, now_ms=5000)  # evicted by capacity (the oldest first)
    assert not cache.first_use("alice", 5000, 4, now_ms=5000)
    assert cache.first_use("alice", 5000, 4, now_ms=5000 + 2001)  # past twice the window: forgotten
