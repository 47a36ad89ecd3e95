"""Micro-benchmark: Tidelog's wire codec against kafka-python's and kio's.

Run from the repository root::

    .venv/bin/python bench/codec.py            # full run (well under a minute on 2 cores)
    .venv/bin/python bench/codec.py --quick    # short smoke run

Cases (every implementation does the same work; where it cannot, the row says so):

a) decode a ProduceRequest carrying one ~1 MiB magic-v2 record batch, at v9 (flexible) and v7 (classic);
b) validate that batch's CRC-32C (bytes 21..end against the header's crc field);
c) encode a FetchResponse with 10 partitions of 64 KiB record blobs, at v12, v11 and v4;
d) decode a MetadataRequest naming 3 topics, at v12 and v1.

kafka-python 3.x has two protocol layers: ``kafka.protocol.{producer,consumer,metadata,admin}`` hold
``ApiMessage`` classes generated at import time from Kafka's JSON specs, with compiled per-version
encoders and decoders; that is the path its producer, consumer and admin client use, and the row labelled
"kafka-python". ``kafka.protocol.old`` keeps the hand-written ``Struct`` classes of kafka-python 2.x
(Produce <= v8, Fetch <= v11, Metadata <= v8, no flexible versions): the "kafka-python legacy" rows.
kio decodes with ``kio.serial.entity_reader`` (a Rust extension) into frozen dataclasses of
``kio.schema.<api>.v<N>`` and encodes with the pure-Python ``kio.serial.entity_writer`` into a stream.

Before timing, every case checks that all implementations agree (same bytes out, same records in).
Times are microseconds per operation: the best and the median of the repeats (each repeat runs the
operation enough times to last at least 40 ms, 4 ms with ``--quick``); ``ratio`` is the best time over
Tidelog's best time.
"""

from __future__ import annotations

import argparse
import importlib
import io
import platform
import random
import statistics
import struct
import sys
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import crc32c
import kafka
import kio
from kafka.protocol.consumer import FetchResponse as KpFetchResponse
from kafka.protocol.metadata import MetadataRequest as KpMetadataRequest
from kafka.protocol.old.fetch import FetchResponse as KpOldFetchResponse
from kafka.protocol.old.metadata import MetadataRequest as KpOldMetadataRequest
from kafka.protocol.old.produce import ProduceRequest as KpOldProduceRequest
from kafka.protocol.producer import ProduceRequest as KpProduceRequest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kio.serial import entity_reader, entity_writer

import tidelog
from tidelog.protocol.messages import FetchResponse, MetadataRequest, ProduceRequest

try:
    from tidelog.records import RecordBatchView
except ImportError:  # tidelog.records is still being written: fall back to the bare CRC check
    RecordBatchView = None

BATCH_TARGET = 1 << 20  # one 1 MiB record batch
FETCH_PARTITIONS = 10
FETCH_BLOB = 64 << 10  # 64 KiB of records per partition
CRC_OFFSET = 17  # baseOffset(8) + batchLength(4) + partitionLeaderEpoch(4) + magic(1)
CRC_START = 21  # the CRC covers attributes..end

PRODUCE_VERSIONS = (9, 7)
FETCH_VERSIONS = (12, 11, 4)
METADATA_VERSIONS = (12, 1)
KP_OLD_MAX = {"produce": 8, "fetch": 11, "metadata": 8}  # highest version kafka.protocol.old defines


# --------------------------------------------------------------------------- inputs


def build_batch(rng: random.Random) -> bytes:
    """A realistic uncompressed magic-v2 batch: ~1 KiB values with keys and a header, just under 1 MiB."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=4242,
        producer_epoch=0,
        base_sequence=0,
        batch_size=1 << 30,
    )
    offset = 0
    while True:
        value = rng.randbytes(rng.randint(800, 1200))
        headers = [("trace-id", b"%016x" % rng.getrandbits(64))]
        builder.append(offset, 1_700_000_000_000 + offset, b"key-%06d" % offset, value, headers)
        offset += 1
        if builder.size() > BATCH_TARGET - 1400:
            break
    batch = bytes(builder.build())
    assert batch[16] == 2, "not a magic-v2 batch"
    return batch


def kio_class(api: str, version: int, kind: str, name: str) -> type:
    return getattr(importlib.import_module(f"kio.schema.{api}.v{version}.{kind}"), name)


def kio_encode(writer: Callable, obj: object) -> bytes:
    out = io.BytesIO()
    writer(out, obj)
    return out.getvalue()


def produce_request(batch: bytes) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="bench-topic",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )


def fetch_response(blobs: list[bytes], version: int) -> FetchResponse:
    return FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=1234 if version >= 7 else 0,
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="bench-topic",
                partitions=[
                    FetchResponse.PartitionData(
                        partition_index=i,
                        error_code=0,
                        high_watermark=100_000,
                        last_stable_offset=100_000,
                        log_start_offset=0 if version >= 5 else -1,
                        aborted_transactions=[],
                        preferred_read_replica=-1,
                        records=blob,
                    )
                    for i, blob in enumerate(blobs)
                ],
            )
        ],
    )


def kp_fetch_response(blobs: list[bytes], version: int):
    part = KpFetchResponse.FetchableTopicResponse.PartitionData
    return KpFetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=1234 if version >= 7 else 0,
        responses=[
            KpFetchResponse.FetchableTopicResponse(
                topic="bench-topic",
                partitions=[
                    part(
                        partition_index=i,
                        error_code=0,
                        high_watermark=100_000,
                        last_stable_offset=100_000,
                        log_start_offset=0 if version >= 5 else -1,
                        aborted_transactions=[],
                        preferred_read_replica=-1,
                        records=blob,
                    )
                    for i, blob in enumerate(blobs)
                ],
            )
        ],
    )


def kp_old_fetch_response(blobs: list[bytes], version: int):
    cls = KpOldFetchResponse[version]
    if version == 4:
        parts = [(i, 0, 100_000, 100_000, [], blob) for i, blob in enumerate(blobs)]
        return cls(throttle_time_ms=0, responses=[("bench-topic", parts)])
    if version == 11:
        parts = [(i, 0, 100_000, 100_000, 0, [], -1, blob) for i, blob in enumerate(blobs)]
        return cls(throttle_time_ms=0, error_code=0, session_id=1234, responses=[("bench-topic", parts)])
    raise ValueError(version)


def metadata_request(version: int) -> MetadataRequest:
    rng = random.Random(version)
    topics = [
        MetadataRequest.MetadataRequestTopic(
            topic_id=uuid.UUID(int=rng.getrandbits(128)) if version >= 10 else uuid.UUID(int=0),
            name=f"orders-{i}",
        )
        for i in range(3)
    ]
    kwargs: dict = {}
    if version >= 4:
        kwargs["allow_auto_topic_creation"] = False
    if version >= 8:
        kwargs["include_topic_authorized_operations"] = True
    return MetadataRequest(topics=topics, **kwargs)


# --------------------------------------------------------------------------- timing


@dataclass
class Row:
    label: str
    fn: Callable[[], object]
    note: str = ""
    best: float = 0.0
    median: float = 0.0


@dataclass
class Case:
    title: str
    rows: list[Row] = field(default_factory=list)

    def add(self, label: str, fn: Callable[[], object], note: str = "") -> None:
        self.rows.append(Row(label, fn, note))


def measure(fn: Callable[[], object], repeats: int, min_time: float) -> tuple[float, float]:
    """Best and median µs per call over ``repeats`` runs of ``number`` calls lasting >= ``min_time``."""
    timer = timeit.Timer(fn)
    number = 1
    while True:  # calibrate like timeit.autorange, to our target duration
        if timer.timeit(number) >= min_time:
            break
        number *= 2 if number < 8 else 4
    times = [t / number * 1e6 for t in timer.repeat(repeats, number)]
    return min(times), statistics.median(times)


def run_case(case: Case, repeats: int, min_time: float) -> None:
    for row in case.rows:
        row.best, row.median = measure(row.fn, repeats, min_time)
    base = case.rows[0].best
    print(f"\n{case.title}")
    print(f"  {'implementation':<52} {'best µs':>11} {'median µs':>11} {'ratio':>8}  note")
    for row in case.rows:
        ratio = row.best / base if base else float("nan")
        print(f"  {row.label:<52} {row.best:>11.2f} {row.median:>11.2f} {ratio:>7.2f}x  {row.note}")


# --------------------------------------------------------------------------- cases


def produce_cases(batch: bytes) -> list[Case]:
    cases = []
    req = produce_request(batch)
    for v in PRODUCE_VERSIONS:
        wire = req.encode(v)
        kio_cls = kio_class("produce", v, "request", "ProduceRequest")
        kio_read = entity_reader(kio_cls)

        def ours(wire=wire, v=v):
            return ProduceRequest.decode(wire, v)

        def ours_copy(wire=wire, v=v):
            obj = ProduceRequest.decode(wire, v)
            for t in obj.topic_data:
                for p in t.partition_data:
                    p.records = bytes(p.records)
            return obj

        def kp(wire=wire, v=v):
            return KpProduceRequest.decode(wire, version=v)

        def kio_(wire=wire, kio_read=kio_read):
            return kio_read(wire, 0)[0]

        # Same content out of every decoder.
        assert bytes(ours().topic_data[0].partition_data[0].records) == batch
        assert kp().topic_data[0].partition_data[0].records == batch
        assert kio_().topic_data[0].partition_data[0].records == batch
        flavour = "flexible" if v >= ProduceRequest.FLEXIBLE_FROM else "classic"
        case = Case(
            f"a) decode ProduceRequest v{v} ({flavour}), one {len(batch):,}-byte batch ({len(wire):,} B)"
        )
        case.add("tidelog decode", ours, "records = memoryview into the frame (zero-copy)")
        case.add("tidelog decode + bytes(records)", ours_copy, "same, then copies the records out")
        case.add("kafka-python ApiMessage.decode", kp, "records copied to bytes")
        if v <= KP_OLD_MAX["produce"]:
            old_cls = KpOldProduceRequest[v]

            def kp_old(wire=wire, old_cls=old_cls):
                return old_cls.decode(wire)

            assert kp_old().topic_data[0][1][0][1] == batch
            case.add("kafka-python legacy Struct.decode", kp_old, "kafka.protocol.old; records copied")
        case.add("kio entity_reader", kio_, "Rust reader; records copied to bytes")
        cases.append(case)
    return cases


def crc_case(batch: bytes) -> Case:
    mv = memoryview(batch)
    (header_crc,) = struct.unpack_from(">I", batch, CRC_OFFSET)
    corrupt = bytearray(batch)
    corrupt[len(corrupt) // 2] ^= 0xFF

    def bare(mv=mv, header_crc=header_crc):
        return crc32c.crc32c(mv[CRC_START:]) == header_crc

    def bare_on(buf: bytes) -> bool:
        return crc32c.crc32c(memoryview(buf)[CRC_START:]) == struct.unpack_from(">I", buf, CRC_OFFSET)[0]

    def kp(batch=batch):
        return DefaultRecordBatch(batch).validate_crc()

    kp_batch = DefaultRecordBatch(batch)

    def kp_prebuilt(kp_batch=kp_batch):
        return kp_batch.validate_crc()

    assert bare_on(batch) and not bare_on(bytes(corrupt))
    assert kp() and kp_prebuilt() and not DefaultRecordBatch(corrupt).validate_crc()
    case = Case(f"b) validate the CRC-32C of the {len(batch):,}-byte batch")
    if RecordBatchView is not None:  # verify_crc() and validate() raise on a bad batch, return None

        def ours(mv=mv):
            return RecordBatchView(mv).verify_crc()

        def ours_validate(mv=mv):
            return RecordBatchView(mv).validate()

        ours()
        ours_validate()
        try:
            RecordBatchView(memoryview(corrupt)).verify_crc()
        except Exception:
            pass
        else:
            raise AssertionError("RecordBatchView.verify_crc() accepted a corrupt batch")
        case.add("tidelog RecordBatchView(mv).verify_crc()", ours, "tidelog.records, zero-copy view")
        case.add("tidelog RecordBatchView(mv).validate()", ours_validate, "CRC + header checks")
        case.add("crc32c(mv[21:]) == header crc", bare, "the bare check, for reference")
    else:
        case.add("crc32c(mv[21:]) == header crc", bare, "tidelog.records not importable: bare check")
    case.add("kafka-python DefaultRecordBatch(buf).validate_crc()", kp, "constructor copies the batch")
    case.add("kafka-python validate_crc() on a built object", kp_prebuilt, "CRC only, no copy")
    return case


def fetch_cases(blobs: list[bytes]) -> list[Case]:
    cases = []
    for v in FETCH_VERSIONS:
        ours_obj = fetch_response(blobs, v)
        wire = ours_obj.encode(v)
        kp_obj = kp_fetch_response(blobs, v)
        kio_cls = kio_class("fetch", v, "response", "FetchResponse")
        kio_obj = entity_reader(kio_cls)(wire, 0)[0]
        kio_write = entity_writer(kio_cls)

        def ours(o=ours_obj, v=v):
            return o.encode(v)

        def ours_buffers(o=ours_obj, v=v):
            return o.encode_buffers(v)

        def kp(o=kp_obj, v=v):
            return o.encode(version=v)

        def kio_(o=kio_obj, w=kio_write):
            return kio_encode(w, o)

        # Every encoder must produce the very same bytes.
        assert b"".join(bytes(b) for b in ours_buffers()) == wire
        assert kp() == wire, f"kafka-python FetchResponse v{v} differs"
        assert kio_() == wire, f"kio FetchResponse v{v} differs"
        flavour = "flexible" if v >= FetchResponse.FLEXIBLE_FROM else "classic"
        case = Case(
            f"c) encode FetchResponse v{v} ({flavour}), {len(blobs)} partitions x {len(blobs[0]) >> 10} KiB"
            f" ({len(wire):,} B)"
        )
        case.add("tidelog encode() -> bytes", ours, "copies the records into one bytes")
        case.add("tidelog encode_buffers() -> list", ours_buffers, "records referenced, not copied")
        case.add("kafka-python ApiMessage.encode", kp, "-> bytes")
        if v <= KP_OLD_MAX["fetch"]:
            old_obj = kp_old_fetch_response(blobs, v)

            def kp_old(o=old_obj):
                return o.encode()

            assert kp_old() == wire, f"kafka-python legacy FetchResponse v{v} differs"
            case.add("kafka-python legacy Struct.encode", kp_old, "kafka.protocol.old; -> bytes")
        case.add("kio entity_writer + BytesIO", kio_, "pure-Python writer; -> bytes")
        cases.append(case)
    return cases


def metadata_cases() -> list[Case]:
    cases = []
    for v in METADATA_VERSIONS:
        req = metadata_request(v)
        wire = req.encode(v)
        kio_read = entity_reader(kio_class("metadata", v, "request", "MetadataRequest"))
        names = [t.name for t in req.topics]

        def ours(wire=wire, v=v):
            return MetadataRequest.decode(wire, v)

        def kp(wire=wire, v=v):
            return KpMetadataRequest.decode(wire, version=v)

        def kio_(wire=wire, kio_read=kio_read):
            return kio_read(wire, 0)[0]

        assert ours() == req
        assert [t.name for t in kp().topics] == names
        assert [t.name for t in kio_().topics] == names
        flavour = "flexible" if v >= MetadataRequest.FLEXIBLE_FROM else "classic"
        case = Case(f"d) decode MetadataRequest v{v} ({flavour}), {len(names)} topics ({len(wire)} B)")
        case.add("tidelog decode", ours)
        case.add("kafka-python ApiMessage.decode", kp)
        if v <= KP_OLD_MAX["metadata"]:
            old_cls = KpOldMetadataRequest[v]

            def kp_old(wire=wire, old_cls=old_cls):
                return old_cls.decode(wire)

            assert list(kp_old().topics) == names
            case.add("kafka-python legacy Struct.decode", kp_old, "kafka.protocol.old")
        case.add("kio entity_reader", kio_, "Rust reader")
        cases.append(case)
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="few, short repeats (a smoke run of a few seconds)"
    )
    args = parser.parse_args(argv)
    repeats, min_time = (3, 0.004) if args.quick else (9, 0.04)

    print(f"Python {platform.python_version()} ({platform.python_implementation()}) on {platform.machine()}")
    print(
        f"tidelog {tidelog.__version__} | kafka-python {kafka.__version__} | kio {kio.__version__}"
        f" | crc32c {getattr(crc32c, '__version__', '?')}"
        f" | tidelog.records {'RecordBatchView' if RecordBatchView is not None else 'not importable'}"
    )
    print(
        f"{'quick' if args.quick else 'full'} run: best and median of {repeats} repeats of >= {min_time * 1e3:g} ms"
    )

    rng = random.Random(20240611)
    batch = build_batch(rng)
    blobs = [rng.randbytes(FETCH_BLOB) for _ in range(FETCH_PARTITIONS)]
    cases = [*produce_cases(batch), crc_case(batch), *fetch_cases(blobs), *metadata_cases()]
    print("all implementations agree on every input (checked before timing)")
    for case in cases:
        run_case(case, repeats, min_time)
    print("\nratio = best time / tidelog's best time in the same case (below 1 means faster than tidelog)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
