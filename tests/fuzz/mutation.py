"""What the fuzz tests of the wire codecs (Kafka's, TubeMQ's) share: hypothesis settings, and mutations of a
valid encoding (truncation, a flipped byte, a huge length field written over it, inserted bytes)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def mutate(draw, encoded: bytes) -> bytes:
    """``encoded`` with one mutation, drawn with ``draw`` (a ``st.data()``'s)."""
    kind = draw(st.sampled_from(["truncate", "flip", "huge_length", "insert"]))
    if not encoded:
        return b"\xff"
    pos = draw(st.integers(0, len(encoded) - 1))
    if kind == "truncate":
        return encoded[:pos]
    if kind == "flip":
        return encoded[:pos] + bytes([encoded[pos] ^ draw(st.integers(1, 255))]) + encoded[pos + 1 :]
    if kind == "huge_length":
        huge = draw(st.sampled_from([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\xff\xff\xff\xff\x0f", b"\x7f\xff"]))
        return encoded[:pos] + huge + encoded[pos + len(huge) :]
    return encoded[:pos] + draw(st.binary(min_size=1, max_size=8)) + encoded[pos:]


__all__ = ["FUZZ_SETTINGS", "mutate"]
