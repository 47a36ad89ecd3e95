"""The shared varint codec: known encodings, every fast path against the general loop, kafka-python's
independent codecs as the reference, and the errors (IndexError past the end, VarintError otherwise)."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.varint import (
    VarintError,
    encode_varint,
    encode_varlong,
    read_uvarint,
    read_varint,
    read_varlong,
    uvarint_bytes,
    write_uvarint,
    zigzag_decode,
    zigzag_encode,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
UINT32 = st.integers(0, 2**32 - 1)


@pytest.mark.parametrize(("value", "encoded"), [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"),
    (4095, b"\xfe\x3f"), (-4096, b"\xff\x3f"), (4096, b"\x80\x40"), (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
    (-(2**31), b"\xff\xff\xff\xff\x0f"),
])
def test_known_zigzag_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encode_varlong(value) == encoded
    assert read_varint(encoded + b"\xff", 0) == read_varlong(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize(("value", "encoded"), [
    (0, b"\x00"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"), (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
])
def test_known_unsigned_encodings(value: int, encoded: bytes) -> None:
    b = bytearray(b"x")
    write_uvarint(b, value)
    assert bytes(b) == b"x" + encoded == b"x" + uvarint_bytes(value)
    assert read_uvarint(memoryview(b"x" + encoded), 1) == (value, 1 + len(encoded))


@given(INT32)
def test_varint_matches_kafka_python(value: int) -> None:
    from kafka.protocol.schemas.fields.codecs.types import VarInt32

    assert encode_varint(value) == VarInt32.encode(value)
    assert read_varint(memoryview(b"\x00" + VarInt32.encode(value)), 1)[0] == value


@given(INT64)
def test_varlong_matches_kafka_python(value: int) -> None:
    from kafka.protocol.schemas.fields.codecs.types import VarInt64

    encoded = VarInt64.encode(value)
    assert encode_varlong(value) == encoded
    assert read_varlong(encoded, 0) == (value, len(encoded))
    assert VarInt64.decode(io.BytesIO(encode_varlong(value))) == value
    assert zigzag_decode(zigzag_encode(value)) == value


@given(UINT32)
def test_unsigned_varint_matches_kafka_python(value: int) -> None:
    from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32

    b = bytearray()
    write_uvarint(b, value)
    assert bytes(b) == UnsignedVarInt32.encode(value)
    assert read_uvarint(bytes(b), 0) == (value, len(b))


def test_past_the_end_is_an_index_error_for_the_caller_to_translate() -> None:
    for read in (read_uvarint, read_varint, read_varlong):
        for data in (b"", b"\x80", b"\x80\x80", b"\xff\xff\xff"):
            with pytest.raises(IndexError):
                read(data, 0)


def test_overlong_and_oversized_varints_are_varint_errors() -> None:
    with pytest.raises(VarintError, match="varint longer than 5 bytes"):
        read_uvarint(b"\x80" * 5 + b"\x01", 0)
    with pytest.raises(VarintError, match="varint longer than 5 bytes"):
        read_varint(b"\x80" * 5 + b"\x01", 0)
    with pytest.raises(VarintError, match="does not fit in 32 bits"):
        read_uvarint(b"\xff\xff\xff\xff\x1f", 0)
    with pytest.raises(VarintError, match="does not fit in 32 bits"):
        read_varint(b"\xff\xff\xff\xff\x1f", 0)
    with pytest.raises(VarintError, match="varlong longer than 10 bytes"):
        read_varlong(b"\x80" * 10 + b"\x01", 0)
    with pytest.raises(VarintError, match="does not fit in 64 bits"):
        read_varlong(b"\xff" * 9 + b"\x7f", 0)  # 70 bits


def test_values_out_of_range_are_varint_errors_and_value_errors() -> None:
    for call in (lambda: encode_varint(2**31), lambda: encode_varint(-(2**31) - 1),
                 lambda: encode_varlong(2**63), lambda: uvarint_bytes(-1),
                 lambda: write_uvarint(bytearray(), -1), lambda: write_uvarint(bytearray(), 2**32)):
        with pytest.raises(VarintError):
            call()
    assert issubclass(VarintError, ValueError)
