"""Legacy message sets v0/v1: parsing, CRC, compressed wrappers, building, conversion to and from v2;
cross-checked against kafka-python's LegacyRecordBatch(Builder)."""

from __future__ import annotations

import struct
import zlib

import pytest

from tidelog.records import (
    NO_TIMESTAMP,
    CompressionType,
    CorruptRecordError,
    InvalidRecordError,
    LegacyMessageSetBuilder,
    LegacyMessageView,
    RecordBatchView,
    TimestampType,
    UnsupportedCompressionTypeError,
    batches_to_legacy,
    build_control_batch,
    compress,
    encode_message,
    iter_batches,
    iter_legacy_messages,
    legacy_to_batches,
)
from tidelog.records.compression import xxh32
from tidelog.records.control import ControlRecordType

from .samples import (
    KAFKA_PYTHON_CODECS,
    LEGACY_CODECS,
    SAMPLE_RECORDS,
    LegacyRecordBatch,
    LegacyRecordBatchBuilder,
    MemoryRecords,
    build_legacy,
    build_v2,
    flip,
)

EXPECTED_KV = [(b"key-0", b"value-0"), (None, b"value-1value-1"), (b"key-2", None)]


def _records(blob: bytes) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value) for e in iter_batches(blob) for r in e.records()]


@pytest.mark.parametrize("magic", [0, 1])
def test_plain_message_layout(magic: int) -> None:
    data = encode_message(42, magic, 0, 1234, b"k", None)
    size = 14 + 1 + (8 if magic else 0)
    assert struct.unpack_from(">qi", data) == (42, size)
    assert struct.unpack_from(">I", data, 12)[0] == zlib.crc32(data[16:])
    view = LegacyMessageView(data)
    view.validate()
    assert (view.offset, view.magic, view.key, view.value, view.size_in_bytes) == (42, magic, b"k", None, len(data))
    assert view.timestamp == (1234 if magic else NO_TIMESTAMP)
    assert view.timestamp_type is (TimestampType.CREATE_TIME if magic else TimestampType.NO_TIMESTAMP_TYPE)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_build_and_parse(magic: int, codec: CompressionType) -> None:
    blob = build_legacy(magic, codec, base_offset=1000)
    entries = list(iter_legacy_messages(blob))
    assert len(entries) == (3 if codec is CompressionType.NONE else 1)
    for entry in entries:
        entry.validate()
    if codec is not CompressionType.NONE:
        assert entries[0].offset == 1002  # the wrapper carries the last inner offset
        assert entries[0].key is None and entries[0].compression_type is codec
        inner = entries[0].inner_messages()
        assert [m.offset for m in inner] == ([0, 1, 2] if magic == 1 else [1000, 1001, 1002])
    ts = [1_600_000_000_000 + i if magic else NO_TIMESTAMP for i in range(3)]
    assert _records(blob) == [(1000 + i, ts[i], *EXPECTED_KV[i]) for i in range(3)]


def test_v0_lz4_wrapper_carries_the_broken_header_checksum() -> None:
    (wrapper,) = iter_legacy_messages(build_legacy(0, CompressionType.LZ4))
    frame = wrapper.value
    assert frame[6] == (xxh32(frame[:6]) >> 8) & 0xFF
    (wrapper,) = iter_legacy_messages(build_legacy(1, CompressionType.LZ4))
    frame = wrapper.value
    assert frame[6] == (xxh32(frame[4:6]) >> 8) & 0xFF


def test_v1_log_append_time_wrapper_stamps_inner_messages() -> None:
    builder = LegacyMessageSetBuilder(1, compression=CompressionType.GZIP,
                                      timestamp_type=TimestampType.LOG_APPEND_TIME)
    builder.append(5, b"a", b"1")
    builder.append(9, b"b", b"2")
    (wrapper,) = iter_legacy_messages(builder.build())
    assert wrapper.timestamp_type is TimestampType.LOG_APPEND_TIME and wrapper.timestamp == 9
    assert [r.timestamp for r in wrapper.records()] == [9, 9]


def test_crc_detects_flipped_bytes() -> None:
    blob = build_legacy(1, count=1)
    for index in range(16, len(blob)):
        try:
            view = LegacyMessageView(flip(blob, index))
        except InvalidRecordError:
            continue  # a length field changed: structurally invalid before any CRC
        with pytest.raises(CorruptRecordError):
            view.validate()


def test_inner_message_crc_is_checked() -> None:
    inner = bytearray(encode_message(0, 1, 0, 5, b"k", b"v"))
    inner[-1] ^= 1
    wrapper = encode_message(0, 1, 1, 5, None, compress(CompressionType.GZIP, inner))
    view = LegacyMessageView(wrapper)
    view.validate()
    with pytest.raises(CorruptRecordError):
        list(view.records())


@pytest.mark.parametrize(
    "inner",
    [
        b"",  # no inner messages
        encode_message(0, 0, 0, 0, b"k", b"v"),  # v0 inside a v1 wrapper
        encode_message(0, 1, 1, 0, None, compress(CompressionType.GZIP, encode_message(0, 1, 0, 0, None, b"v"))),
        encode_message(0, 1, 0, 0, b"k", b"v")[:-1],  # truncated inner set
    ],
    ids=["empty", "magic-mismatch", "nested", "truncated"],
)
def test_bad_wrapper_contents_are_invalid(inner: bytes) -> None:
    view = LegacyMessageView(encode_message(0, 1, 1, 0, None, compress(CompressionType.GZIP, inner)))
    view.validate()
    with pytest.raises(InvalidRecordError):
        list(view.records())


def test_wrapper_without_value_or_with_zstd() -> None:
    with pytest.raises(InvalidRecordError):
        LegacyMessageView(encode_message(0, 1, 1, 0, None, None)).validate()
    zstd = LegacyMessageView(encode_message(0, 1, 4, 0, None, compress(CompressionType.ZSTD, b"x")))
    with pytest.raises(UnsupportedCompressionTypeError):
        zstd.validate()
    with pytest.raises(UnsupportedCompressionTypeError):
        LegacyMessageSetBuilder(1, compression=CompressionType.ZSTD)


@pytest.mark.parametrize(
    "data",
    [
        encode_message(0, 1, 0, 0, b"k", b"v")[:-1],
        encode_message(0, 1, 0, 0, b"k", b"v") [:12] + b"\x00" * 10,
        struct.pack(">qiIbbii", 0, 14, 0, 0, 0, 100, -1),  # key length overruns
        struct.pack(">qiIbbiii", 0, 18, 0, 0, 0, -1, -1, 0),  # size larger than the fields
        struct.pack(">qiIbbii", 0, 14, 0, 2, 0, -1, -1),  # magic 2 is not legacy
        struct.pack(">qiIbbqii", 0, 18, 0, 1, 0, 0, -1, -1),  # v1 below its 22-byte minimum
    ],
)
def test_malformed_messages_are_invalid(data: bytes) -> None:
    with pytest.raises(InvalidRecordError):
        LegacyMessageView(data)


def test_builder_offsets() -> None:
    builder = LegacyMessageSetBuilder(1, base_offset=10)
    assert builder.append(0, None, b"a") == 10
    assert builder.append(0, None, b"b", offset=20) == 20
    with pytest.raises(ValueError):
        builder.append(0, None, b"c", offset=20)
    assert len(builder) == 2
    assert [r.offset for e in iter_batches(builder.build()) for r in e.records()] == [10, 20]
    assert LegacyMessageSetBuilder(0).build() == b""


# ----------------------------------------------------------------------- kafka-python cross-checks


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS, ids=lambda c: c.name)
def test_kafka_python_message_sets_parse_with_ours(magic: int, codec: CompressionType) -> None:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=int(codec), batch_size=1 << 20)
    for i in range(3):
        builder.append(i, 1_600_000_000_000 + i, *EXPECTED_KV[i])
    blob = bytes(builder.build())
    for entry in iter_batches(blob):
        entry.validate()
    theirs = [(r.offset, NO_TIMESTAMP if r.timestamp is None else r.timestamp, r.key, r.value)
              for b in _kafka_python_batches(blob) for r in b]
    ours = _records(blob)
    if codec is not CompressionType.NONE and magic == 1:
        # kafka-python's producer leaves the wrapper offset at 0 (the broker assigns offsets), so
        # Kafka's rule "wrapper offset = last inner offset" yields -2, -1, 0; kafka-python then falls
        # back to the relative offsets. Timestamps, keys and values agree.
        assert [o for o, *_ in ours] == [-2, -1, 0]
        ours = [(o + 2, *rest) for o, *rest in ours]
    assert ours == theirs


def _kafka_python_batches(blob: bytes):
    records = MemoryRecords(blob)
    while records.has_next():
        yield records.next_batch()


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS, ids=lambda c: c.name)
def test_our_message_sets_parse_with_kafka_python(magic: int, codec: CompressionType) -> None:
    blob = build_legacy(magic, codec, base_offset=70)
    got = []
    for entry in iter_legacy_messages(blob):
        theirs = LegacyRecordBatch(bytes(entry.buffer), magic)
        theirs.validate_crc()
        got += [(r.offset, r.timestamp, r.key, r.value) for r in theirs]
    ts = [1_600_000_000_000 + i if magic else None for i in range(3)]  # kafka-python: None for v0
    assert got == [(70 + i, ts[i], *EXPECTED_KV[i]) for i in range(3)]


# ------------------------------------------------------------------------------------- conversion


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_legacy_to_v2_preserves_everything(magic: int, codec: CompressionType) -> None:
    blob = build_legacy(magic, codec, base_offset=300)
    batches = legacy_to_batches(blob)
    assert len(batches) == 1
    view = RecordBatchView(batches[0])
    view.validate()
    assert view.compression_type is codec
    assert view.timestamp_type is TimestampType.CREATE_TIME
    assert _records(batches[0]) == _records(blob)
    assert view.max_timestamp == (1_600_000_000_002 if magic else NO_TIMESTAMP)


def test_legacy_to_v2_assigns_offsets_and_splits_where_needed() -> None:
    plain_v1 = build_legacy(1, base_offset=5)
    wrapper = build_legacy(1, CompressionType.SNAPPY, base_offset=0)
    lat = LegacyMessageSetBuilder(1, timestamp_type=TimestampType.LOG_APPEND_TIME, base_offset=8)
    lat.append(77, b"x", b"y")
    lat.append(78, b"x", b"z")
    blob = plain_v1 + wrapper + lat.build() + build_legacy(1, base_offset=0)
    kept = legacy_to_batches(blob)
    # plain run | wrapper | two LogAppendTime messages with different times | offsets restart
    assert [RecordBatchView(b).record_count for b in kept] == [3, 3, 1, 1, 3]
    assert [r for b in kept for r in _records(b)] == _records(blob)
    assigned = legacy_to_batches(blob, base_offset=1000)
    offsets = [r[0] for b in assigned for r in _records(b)]
    assert offsets == list(range(1000, 1011))
    # with fresh offsets only the format splits batches: the final plain run no longer restarts
    # offsets, but it differs from the LogAppendTime message before it in timestamp type
    assert [RecordBatchView(b).record_count for b in assigned] == [3, 3, 1, 1, 3]
    assert [r[1:] for b in assigned for r in _records(b)] == [r[1:] for r in _records(blob)]
    restart = build_legacy(1, base_offset=5) + build_legacy(1, base_offset=0)
    assert [RecordBatchView(b).record_count for b in legacy_to_batches(restart)] == [3, 3]
    assert [RecordBatchView(b).record_count for b in legacy_to_batches(restart, base_offset=0)] == [6]


def test_v2_to_legacy_and_back() -> None:
    blob = build_v2(base_offset=10) + build_v2(CompressionType.GZIP, base_offset=20) + \
        build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, coordinator_epoch=0,
                            timestamp_ms=0, base_offset=30)
    expected = [(r.offset, r.timestamp, r.key, r.value) for e in iter_batches(blob)
                if not e.is_control_batch for r in e.records()]
    for magic in (0, 1):
        legacy = batches_to_legacy(blob, magic)
        entries = list(iter_batches(legacy))
        assert {e.magic for e in entries} == {magic}
        for entry in entries:
            entry.validate()
        assert [e.is_compressed for e in entries] == [False] * len(SAMPLE_RECORDS) + [True]
        got = _records(legacy)
        if magic == 0:
            expected_here = [(o, NO_TIMESTAMP, k, v) for o, _, k, v in expected]
        else:
            expected_here = expected
        assert got == expected_here
        theirs = [(r.offset, r.key, r.value) for b in _kafka_python_batches(legacy) for r in b]
        assert theirs == [(o, k, v) for o, _, k, v in expected]
        assert _records(b"".join(legacy_to_batches(legacy))) == expected_here
        assert batches_to_legacy(legacy, magic) == legacy  # already in the target format


def test_v2_to_legacy_keeps_log_append_time_and_refuses_zstd() -> None:
    data = bytearray(build_v2(CompressionType.LZ4))
    RecordBatchView(data).set_log_append_time(5_555)
    legacy = batches_to_legacy(bytes(data), 1)
    (wrapper,) = iter_batches(legacy)
    assert wrapper.timestamp_type is TimestampType.LOG_APPEND_TIME and wrapper.timestamp == 5_555
    assert {r.timestamp for r in wrapper.records()} == {5_555}
    with pytest.raises(UnsupportedCompressionTypeError):
        batches_to_legacy(build_v2(CompressionType.ZSTD), 1)
    with pytest.raises(ValueError):
        batches_to_legacy(b"", 2)


def test_v1_down_converts_to_v0() -> None:
    v1 = build_legacy(1, CompressionType.GZIP, base_offset=3)
    v0 = batches_to_legacy(v1, 0)
    assert {e.magic for e in iter_batches(v0)} == {0}
    assert _records(v0) == [(o, NO_TIMESTAMP, k, v) for o, _, k, v in _records(v1)]
