"""Varints and single records: encoding, decoding, strict bounds."""

from __future__ import annotations

import pytest

import tidelog.records as records
from tidelog.records import (
    Header,
    InvalidRecordError,
    Record,
    decode_record,
    decode_records,
    encode_record,
    encode_varint,
    encode_varlong,
    read_varint,
    read_varlong,
)
from tidelog.records.record import zigzag_decode, zigzag_encode

VARINTS = [
    (0, b"\x00"),
    (-1, b"\x01"),
    (1, b"\x02"),
    (63, b"\x7e"),
    (-64, b"\x7f"),
    (64, b"\x80\x01"),
    (300, b"\xd8\x04"),
    (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
    (-(2**31), b"\xff\xff\xff\xff\x0f"),
]


@pytest.mark.parametrize(("value", "encoded"), VARINTS)
def test_varint_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert read_varint(encoded + b"junk", 0) == (value, len(encoded))
    assert encode_varlong(value) == encoded
    assert read_varlong(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63), 2**40, -(2**40) - 3])
def test_varlong_extremes(value: int) -> None:
    encoded = encode_varlong(value)
    assert len(encoded) <= 10
    assert read_varlong(encoded, 0) == (value, len(encoded))
    assert zigzag_decode(zigzag_encode(value)) == value


def test_varint_range_checks() -> None:
    with pytest.raises(ValueError):
        encode_varint(2**31)
    with pytest.raises(ValueError):
        encode_varlong(-(2**63) - 1)


@pytest.mark.parametrize(
    "encoded",
    [b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80\x80\x01", b"\xff\xff\xff\xff\x1f"],
    ids=["empty", "truncated", "truncated2", "six-bytes", "33-bits"],
)
def test_bad_varints_are_invalid(encoded: bytes) -> None:
    with pytest.raises(InvalidRecordError):
        read_varint(encoded, 0)


def test_bad_varlongs_are_invalid() -> None:
    with pytest.raises(InvalidRecordError):
        read_varlong(b"\x80" * 10 + b"\x01", 0)
    with pytest.raises(InvalidRecordError):
        read_varlong(b"\xff" * 9 + b"\x7f", 0)  # 70 bits
    with pytest.raises(InvalidRecordError):
        read_varlong(b"\x80\x80", 0)


def test_record_bytes_match_the_documented_layout() -> None:
    encoded = encode_record(2, -5, b"k", None, [("h", b"v")])
    body = b"\x00" + b"\x09" + b"\x04" + b"\x02k" + b"\x01" + b"\x02" + b"\x02h" + b"\x02v"
    assert encoded == encode_varint(len(body)) + body


@pytest.mark.parametrize(
    ("key", "value", "headers"),
    [
        (None, None, []),
        (b"", b"", []),
        (b"key", b"value" * 1000, [("a", b"1"), ("b", None), ("", b"")]),
        (None, b"v", [("ключ", "значение".encode())]),
    ],
)
def test_record_round_trip(key, value, headers) -> None:
    data = encode_record(7, -1234567890123, key, value, headers)
    record, end = decode_record(data, 0, base_offset=100, base_timestamp=2_000_000_000_000)
    assert end == len(data)
    assert record == Record(107, 2_000_000_000_000 - 1234567890123, key, value,
                            [Header(k, v) for k, v in headers], 0)


def test_non_utf8_header_key_survives_a_round_trip() -> None:
    raw_key = b"\xff\xfe-key"
    data = encode_record(0, 0, None, None, [(raw_key.decode("utf-8", "surrogateescape"), b"v")])
    record, _ = decode_record(data, 0, 0, 0)
    assert record.headers[0].key.encode("utf-8", "surrogateescape") == raw_key
    assert encode_record(0, 0, None, None, record.headers) == data


def test_decode_records_sequence_and_count_checks() -> None:
    data = b"".join(encode_record(i, i * 10, b"k%d" % i, b"v", []) for i in range(3))
    got = list(decode_records(data, 3, base_offset=50, base_timestamp=1000))
    assert [(r.offset, r.timestamp, r.key) for r in got] == [(50, 1000, b"k0"), (51, 1010, b"k1"), (52, 1020, b"k2")]
    assert [r.timestamp for r in decode_records(data, 3, 50, 1000, log_append_time=9)] == [9, 9, 9]
    with pytest.raises(InvalidRecordError, match="remain"):
        list(decode_records(data, 2, 0, 0))
    with pytest.raises(InvalidRecordError, match="ends early"):
        list(decode_records(data, 4, 0, 0))
    assert list(decode_records(b"", 0, 0, 0)) == []


def _record_with_body(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


@pytest.mark.parametrize(
    "data",
    [
        _record_with_body(b"\x00\x00\x00\x0a" + b"abc" + b"\x01\x00"),  # key length 5 > bytes left
        _record_with_body(b"\x00\x00\x00\x01\x7e" + b"v" * 3 + b"\x00"),  # value length 63 overruns
        _record_with_body(b"\x00\x00\x00\x01\x01\x01"),  # header count -1
        _record_with_body(b"\x00\x00\x00\x01\x01\x02\x01\x01"),  # header key length -1
        _record_with_body(b"\x00\x00\x00\x01\x01\x02\x02h\x7e"),  # header value overruns
        _record_with_body(b"\x00\x00\x00\x01\x01\x00\x00\x00"),  # length larger than contents
        encode_varint(100) + b"\x00" * 10,  # length past the end of the data
        encode_varint(-5) + b"\x00" * 10,  # negative length
        encode_varint(2) + b"\x00\x00",  # too short to hold a record
        b"\x0c\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80",  # overlong timestamp varlong
        _record_with_body(b"\x00\x00\x00\x01\x01\xfe\xff\xff\xff\x0f"),  # 2**31-1 headers
    ],
)
def test_malformed_records_are_invalid(data: bytes) -> None:
    with pytest.raises(InvalidRecordError):
        decode_record(data, 0, 0, 0)
    with pytest.raises(InvalidRecordError):
        list(decode_records(data, 1, 0, 0))


def test_public_names_are_exported() -> None:
    public = {
        name for module in (records.batch, records.builder, records.compression, records.control,
                            records.conversion, records.errors, records.legacy, records.record)
        for name in module.__all__
    }
    public -= {"xxh32", "zigzag_decode", "zigzag_encode"}  # module-level helpers
    assert public <= set(records.__all__)
    assert all(hasattr(records, name) for name in records.__all__)
    assert records.__all__ == sorted(records.__all__, key=lambda n: (not n.isupper(), n))
