"""Property tests for the record layer on hostile input.

Whatever the bytes (random, or valid batches and message sets truncated, bit-flipped, or with length
fields replaced by huge or negative values), every parser either succeeds or raises
:class:`RecordsError`, finishes quickly, and allocates memory in proportion to its input (checked
with tracemalloc), never in proportion to a length field it has not checked.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.records.samples import LEGACY_CODECS, build_legacy, build_v2
from tidelog.records import (
    CompressionType,
    ControlRecordType,
    InvalidRecordError,
    LegacyMessageView,
    RecordBatchView,
    RecordsError,
    batches_to_legacy,
    build_control_batch,
    compress,
    decode_control_batch,
    decode_records,
    decompress,
    encode_record,
    iter_batches,
    iter_legacy_messages,
    legacy_to_batches,
)
from tidelog.records.batch import HEADER

FUZZ = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LIMIT = 256 * 1024  # decompression bound used throughout: any bomb must stop here
SMALL_RECORDS = [(1000, b"k", b"v" * 40, [("h", b"x")]), (999, None, None, []), (1001, b"", b"y" * 300, [])]

CORPUS: list[bytes] = (
    [build_v2(codec, records=SMALL_RECORDS, base_offset=5) for codec in CompressionType]
    + [build_control_batch(ControlRecordType.ABORT, producer_id=1, producer_epoch=2, coordinator_epoch=3,
                           timestamp_ms=4)]
    + [build_legacy(magic, codec) for magic in (0, 1) for codec in LEGACY_CODECS]
)
CORPUS.append(CORPUS[0] + CORPUS[-1] + CORPUS[2])
INT32_PATCHES = [2**31 - 1, -1, -(2**31), 0, 1, 2**20, 61, 13]
INT64_PATCHES = [2**63 - 1, -(2**63), -1, 0, 2**62]


def _swallow(step: Callable[[], object]) -> None:
    try:
        step()
    except RecordsError:
        pass


def _exercise_view(entry: RecordBatchView | LegacyMessageView) -> None:
    _swallow(entry.validate)
    _swallow(entry.verify_crc)
    _swallow(lambda: list(entry.records(max_decompressed_bytes=LIMIT)))
    if isinstance(entry, RecordBatchView):
        _swallow(lambda: entry.validate(allow_compacted=True))
        if entry.is_control_batch:
            _swallow(lambda: decode_control_batch(entry))
    elif entry.is_compressed:
        _swallow(lambda: entry.inner_messages(max_decompressed_bytes=LIMIT))


def exercise(blob: bytes | bytearray) -> None:
    """Run every parser over ``blob``; anything but RecordsError escapes and fails the test."""
    started = time.perf_counter()
    for allow_partial in (False, True):
        try:
            for entry in iter_batches(blob, allow_partial=allow_partial):
                _exercise_view(entry)
        except RecordsError:
            pass
    for view_type in (RecordBatchView, LegacyMessageView):
        try:
            _exercise_view(view_type(blob))
        except RecordsError:
            pass
    _swallow(lambda: list(iter_legacy_messages(blob)))
    _swallow(lambda: legacy_to_batches(blob, max_decompressed_bytes=LIMIT))
    _swallow(lambda: batches_to_legacy(blob, 1, max_decompressed_bytes=LIMIT))
    assert time.perf_counter() - started < 2.0


@st.composite
def mutated(draw: st.DrawFn) -> bytearray:
    blob = bytearray(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "int32", "int64", "insert", "varint"]))
        if not blob:
            break
        at = draw(st.integers(0, len(blob) - 1))
        if kind == "truncate":
            del blob[at:]
        elif kind == "flip":
            blob[at] ^= draw(st.integers(1, 255))
        elif kind == "int32" and at + 4 <= len(blob):
            blob[at : at + 4] = struct.pack(">i", draw(st.sampled_from(INT32_PATCHES)))
        elif kind == "int64":
            at = draw(st.sampled_from([0, 27, 35, at]))  # base offset, base/max timestamp, anywhere
            if at + 8 <= len(blob):
                blob[at : at + 8] = struct.pack(">q", draw(st.sampled_from(INT64_PATCHES)))
        elif kind == "insert":
            blob[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "varint":
            blob[at : at + 1] = draw(st.sampled_from([b"\xff\xff\xff\xff\x0f", b"\x80" * 10, b"\x7f", b"\x01"]))
    return blob


@FUZZ
@given(st.binary(max_size=3000))
def test_random_bytes(blob: bytes) -> None:
    exercise(blob)


@FUZZ
@given(st.binary(min_size=61, max_size=400))
def test_random_bytes_behind_a_plausible_header(tail: bytes) -> None:
    blob = bytearray(tail)
    struct.pack_into(">qib", blob, 0, 0, len(blob) - 12, 0)
    blob[16] = 2
    exercise(blob)
    blob[16] = 1
    exercise(blob)


@FUZZ
@given(mutated())
def test_mutated_valid_data(blob: bytearray) -> None:
    exercise(blob)


@FUZZ
@given(st.sampled_from(list(CompressionType)), st.binary(max_size=2000),
       st.integers(0, 2**31 - 1), st.sampled_from([0, 1, 2]))
def test_batches_whose_decompressed_records_are_garbage(codec: CompressionType, section: bytes,
                                                        count: int, mutation: int) -> None:
    valid = b"".join(encode_record(i, i, b"k", b"v", [("a", None)]) for i in range(3))
    section = (section, valid[: len(valid) - 1], valid + section)[mutation]
    payload = compress(codec, section)
    header = bytearray(HEADER.size)
    HEADER.pack_into(header, 0, 0, HEADER.size - 12 + len(payload), 0, 2, 0, int(codec), 2, 0, 0, -1, -1,
                     -1, count)
    view = RecordBatchView(bytes(header) + payload)
    _exercise_view(view)


@FUZZ
@given(st.sampled_from(list(CompressionType)), st.binary(max_size=2000), st.sampled_from([0, 1, 2]))
def test_decompress_random_bytes(codec: CompressionType, data: bytes, magic: int) -> None:
    try:
        out = decompress(codec, data, magic=magic, max_size=LIMIT)
    except InvalidRecordError:
        return
    assert len(out) <= LIMIT


@FUZZ
@given(st.sampled_from([c for c in CompressionType if c]), st.data())
def test_decompress_mutated_valid_payloads(codec: CompressionType, data: st.DataObject) -> None:
    original = b"record data " * data.draw(st.integers(0, 3000))
    payload = bytearray(compress(codec, original))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, max(0, len(payload) - 1)))
        if not payload:
            break
        if data.draw(st.booleans()):
            payload[at] ^= data.draw(st.integers(1, 255))
        else:
            del payload[at:]
    try:
        out = decompress(codec, payload, max_size=LIMIT)
    except InvalidRecordError:
        return
    assert len(out) <= LIMIT


@FUZZ
@given(st.binary(max_size=500), st.integers(-5, 2**31 - 1))
def test_decode_records_random(data: bytes, count: int) -> None:
    try:
        list(decode_records(data, count, 0, 0))
    except InvalidRecordError:
        pass


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_allocation_stays_proportional_to_the_input(blob: bytearray) -> None:
    tracemalloc.start()
    try:
        exercise(blob)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * LIMIT + 64 * len(blob) + 512 * 1024
