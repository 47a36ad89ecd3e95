"""Produce, Fetch, ListOffsets, DeleteRecords and (non-transactional) InitProducerId.

Record timestamps are ``program.now_ms`` plus small offsets, the same for both brokers; what a
broker stores is compared by fetching it back.
"""

from __future__ import annotations

import struct

from tests.oracle.wire.program import Program, Session
from tests.oracle.wire.setup import batch, create_topics, produce, produce_request
from tidelog.protocol.messages import (
    DeleteRecordsRequest,
    FetchRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ProduceRequest,
)
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.records import CompressionType
from tidelog.records.legacy import LegacyMessageSetBuilder

PRODUCE = ProduceRequest.API_KEY
FETCH = FetchRequest.API_KEY
LIST_OFFSETS = ListOffsetsRequest.API_KEY
DELETE_RECORDS = DeleteRecordsRequest.API_KEY
INIT_PID = InitProducerIdRequest.API_KEY

TOPICS = {
    "diff-produce": (2, {}),
    "diff-produce-small": (1, {"max.message.bytes": "1000"}),
    "diff-produce-compact": (1, {"cleanup.policy": "compact"}),
    "diff-produce-append-time": (1, {"message.timestamp.type": "LogAppendTime"}),
    "diff-produce-recent": (1, {"message.timestamp.after.max.ms": "60000", "message.timestamp.before.max.ms": "60000"}),
    "diff-produce-gzip": (1, {"compression.type": "gzip"}),
    "diff-produce-idem": (1, {}),
    "diff-fetch": (1, {}),
    "diff-dr": (2, {}),
}
HOUR_MS = 3_600_000


def add(program: Program) -> None:
    create_topics(program, "records", TOPICS)
    _prefill(program)
    _produce(program)
    _idempotent_produce(program)
    _init_producer_id(program)
    _fetch(program)
    _list_offsets(program)
    _delete_records(program)


def _prefill(program: Program) -> None:
    t0 = program.now_ms - HOUR_MS
    program.vars_fetch_batches = [  # type: ignore[attr-defined]
        batch(t0, [b"v0", b"v1", b"v2"]),
        batch(t0 + 10, [b"g0", b"g1"], compression=CompressionType.GZIP),
        batch(t0 + 20, [b"l0", b"l1", b"l2", b"l3"], compression=CompressionType.LZ4),
        batch(t0 + 30, [b"x" * 3000]),
        batch(t0 + 40, [b"z0", b"z1"], compression=CompressionType.ZSTD),
        batch(t0 + 50, [b"s0", b"s1"], compression=CompressionType.SNAPPY, headers=(("h", b"1"), ("n", None))),
    ]
    produce(program, "fetch", "diff-fetch", 0, program.vars_fetch_batches)  # type: ignore[attr-defined]
    for p in (0, 1):
        produce(program, f"dr-{p}", "diff-dr", p, [batch(t0 + 100 * i, [b"r%d" % j for j in range(4)])
                                                    for i in range(3)])


# ------------------------------------------------------------------------------------- Produce


def _with_count(data: bytes, count: int) -> bytes:
    """The batch with its record count changed (CRC fixed up, so only the count is wrong)."""
    from crc32c import crc32c

    out = bytearray(data)
    struct.pack_into(">i", out, 57, count)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def _bad_crc(data: bytes) -> bytes:
    out = bytearray(data)
    out[-1] ^= 0xFF
    return bytes(out)


def _with_attributes(data: bytes, attributes: int) -> bytes:
    from crc32c import crc32c

    out = bytearray(data)
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def _legacy(magic: int, now: int) -> bytes:
    builder = LegacyMessageSetBuilder(magic)
    builder.append(now, b"k", b"legacy")
    return builder.build()


def _produce(program: Program) -> None:
    now = program.now_ms
    cases = {
        "acks-all": ("diff-produce", 0, -1, batch(now, [b"a", b"b"])),
        "acks-leader": ("diff-produce", 1, 1, batch(now, [b"c"])),
        "acks-2": ("diff-produce", 0, 2, batch(now, [b"d"])),
        "acks-minus-2": ("diff-produce", 0, -2, batch(now, [b"d"])),
        "gzip": ("diff-produce", 0, -1, batch(now, [b"g"] * 3, compression=CompressionType.GZIP)),
        "snappy": ("diff-produce", 0, -1, batch(now, [b"s"] * 3, compression=CompressionType.SNAPPY)),
        "lz4": ("diff-produce", 0, -1, batch(now, [b"l"] * 3, compression=CompressionType.LZ4)),
        "zstd": ("diff-produce", 0, -1, batch(now, [b"z"] * 3, compression=CompressionType.ZSTD)),
        "unknown-codec": ("diff-produce", 0, -1, _with_attributes(batch(now, [b"u"]), 6)),
        "headers-and-null-value": ("diff-produce", 1, -1, batch(now, [None, b""], headers=(("h", b"x"),))),
        "two-batches": ("diff-produce", 0, -1, batch(now, [b"t1"]) + batch(now, [b"t2"])),
        "legacy-magic-0": ("diff-produce", 0, -1, _legacy(0, now)),
        "legacy-magic-1": ("diff-produce", 0, -1, _legacy(1, now)),
        "bad-crc": ("diff-produce", 0, -1, _bad_crc(batch(now, [b"crc"]))),
        "record-count-too-high": ("diff-produce", 0, -1, _with_count(batch(now, [b"n1", b"n2"]), 3)),
        "truncated-batch": ("diff-produce", 0, -1, batch(now, [b"trunc"])[:-3]),
        "empty-records": ("diff-produce", 0, -1, b""),
        "garbage-records": ("diff-produce", 0, -1, b"\x00" * 70),
        "control-batch": ("diff-produce", 0, -1, _with_attributes(batch(now, [b"c"]), 0x20)),
        "above-max-message-bytes": ("diff-produce-small", 0, -1, batch(now, [b"x" * 2000])),
        "below-max-message-bytes": ("diff-produce-small", 0, -1, batch(now, [b"x" * 500])),
        "null-key-compacted": ("diff-produce-compact", 0, -1, batch(now, [b"v"], key=None)),
        "keyed-compacted": ("diff-produce-compact", 0, -1, batch(now, [b"v"])),
        "log-append-time": ("diff-produce-append-time", 0, -1, batch(now - HOUR_MS, [b"old"])),
        "timestamp-ahead": ("diff-produce-recent", 0, -1, batch(now + 2 * HOUR_MS, [b"future"])),
        "timestamp-behind": ("diff-produce-recent", 0, -1, batch(now - 2 * HOUR_MS, [b"past"])),
        "topic-compression-gzip": ("diff-produce-gzip", 0, -1, batch(now, [b"plain"] * 4)),
        "topic-compression-gzip-from-lz4": ("diff-produce-gzip", 0, -1,
                                            batch(now, [b"lz"] * 2, compression=CompressionType.LZ4)),
    }
    for case, (topic, partition, acks, records) in cases.items():
        for v in program.versions(PRODUCE):
            program.request(case, v, produce_request(topic, partition, records, acks=acks))
    for v in program.versions(PRODUCE):
        program.request("acks-none", v, produce_request("diff-produce", 1, batch(now, [b"fire"]), acks=0),
                        no_response=True)
        program.request("two-partitions", v, ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name="diff-produce", partition_data=[
                ProduceRequest.PartitionProduceData(index=p, records=batch(now, [b"both"])) for p in (0, 1)])]))
        program.request("same-partition-twice", v, ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name="diff-produce", partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=batch(now, [b"twice"])) for _ in (0, 1)])]))
        program.request("internal-topic", v, produce_request("__consumer_offsets", 0, batch(now, [b"x"])))
    program.vary(PRODUCE, "produce", lambda v: produce_request("diff-produce", 0, batch(now, [b"m"])), only=(
        "unknown-topic", "invalid-topic-name", "unknown-partition", "negative-partition"))
    # What each broker stored, read back.
    for topic in ("diff-produce", "diff-produce-compact", "diff-produce-append-time", "diff-produce-gzip",
                  "diff-produce-small", "diff-produce-recent"):
        for partition in (0, 1) if topic == "diff-produce" else (0,):
            program.request(f"stored-{topic}-{partition}", 12, _fetch_request(topic, partition, 0, 1 << 20),
                            api=FETCH)


def _idempotent_produce(program: Program) -> None:
    now = program.now_ms
    version = program.top(PRODUCE)
    topic = "diff-produce-idem"
    pid_version = program.top(INIT_PID)

    def remember(session: Session, response) -> None:
        session.vars["pid"] = response.producer_id

    program.request("idempotent-producer", pid_version, InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1), after=remember)

    def idem(seq: int, values: list[bytes], epoch: int = 0, pid_delta: int = 0):
        return lambda s: produce_request(topic, 0, batch(now, values, producer_id=s.vars["pid"] + pid_delta,
                                                         producer_epoch=epoch, base_sequence=seq))

    steps = [
        ("seq-0", idem(0, [b"i0", b"i1"])),
        ("seq-2", idem(2, [b"i2"])),
        ("duplicate-seq-2", idem(2, [b"i2"])),
        ("duplicate-seq-0", idem(0, [b"i0", b"i1"])),
        ("gap-seq-9", idem(9, [b"i9"])),
        ("seq-3", idem(3, [b"i3"])),
        ("newer-epoch-seq-0", idem(0, [b"e1"], epoch=1)),
        ("old-epoch-after-bump", idem(4, [b"i4"], epoch=0)),
        ("newer-epoch-seq-5", idem(5, [b"e2"], epoch=2)),
        ("unknown-producer-seq-0", idem(0, [b"u0"], pid_delta=500)),
        ("unknown-producer-seq-7", idem(7, [b"u7"], pid_delta=501)),
        ("negative-sequence", idem(-5, [b"neg"], epoch=1)),
    ]
    for case, build in steps:
        program.request(case, version, build, api=PRODUCE)
    program.request("stored-idempotent", 12, _fetch_request(topic, 0, 0, 1 << 20), api=FETCH)


def _init_producer_id(program: Program) -> None:
    for v in program.versions(INIT_PID):
        program.request("non-transactional", v, InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
        if v >= 3:
            program.request("producer-id-without-epoch", v, InitProducerIdRequest(
                transactional_id=None, producer_id=5, producer_epoch=-1))
            program.request("epoch-without-producer-id", v, InitProducerIdRequest(
                transactional_id=None, producer_id=-1, producer_epoch=3))
            program.request("bump-non-transactional", v, InitProducerIdRequest(
                transactional_id=None, producer_id=0, producer_epoch=0))


# --------------------------------------------------------------------------------------- Fetch


def _fetch_request(topic: str, partition: int, offset: int, partition_max_bytes: int = 1 << 20, *,
                   topic_id=None, max_bytes: int = 1 << 24, isolation: int = 0, epoch: int = -1,
                   last_fetched_epoch: int = -1, session_id: int = 0, session_epoch: int = -1,
                   max_wait_ms: int = 0, min_bytes: int = 0, replica_id: int = -1) -> FetchRequest:
    request = FetchRequest(
        replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
        isolation_level=isolation, session_id=session_id, session_epoch=session_epoch,
        topics=[FetchRequest.FetchTopic(topic=topic, topic_id=topic_id or ZERO_UUID, partitions=[FetchRequest.FetchPartition(
            partition=partition, current_leader_epoch=epoch, fetch_offset=offset, last_fetched_epoch=last_fetched_epoch,
            log_start_offset=-1, partition_max_bytes=partition_max_bytes)])])
    request.replica_state.replica_id = replica_id
    return request


def _fetch(program: Program) -> None:
    topic = "diff-fetch"
    end = sum(n for n in (3, 2, 4, 1, 2, 2))

    def fetch(offset: int, partition_max_bytes: int = 1 << 20, **options):
        def build(v: int):
            def make(session: Session) -> FetchRequest:
                topic_id = session.topic_id(topic) if v >= 13 else None
                return _fetch_request(topic, 0, offset, partition_max_bytes, topic_id=topic_id, **options)
            return make
        return build

    cases = {
        "from-start": fetch(0),
        "inside-compressed-batch": fetch(4),
        "inside-last-batch": fetch(end - 1),
        "at-high-watermark": fetch(end),
        "beyond-high-watermark": fetch(end + 5),
        "negative-offset": fetch(-1),
        "partition-max-bytes-10": fetch(0, partition_max_bytes=10),
        "partition-max-bytes-100-at-big-record": fetch(9, partition_max_bytes=100),
        "max-bytes-10": fetch(0, max_bytes=10),
        "partition-max-bytes-zero": fetch(0, partition_max_bytes=0),
        "read-committed": fetch(0, isolation=1),
        "invalid-isolation-level": fetch(0, isolation=3),
        "wait-for-data-at-end": fetch(end, max_wait_ms=50, min_bytes=1),
        "min-bytes-satisfied": fetch(0, max_wait_ms=5000, min_bytes=1),
        "from-a-follower-id": fetch(0, replica_id=1),
        "from-broker-0": fetch(0, replica_id=0),
    }
    for case, build in cases.items():
        program.each_version(FETCH, case, build)
    for v in program.versions(FETCH):
        if v >= 9:
            program.request("current-leader-epoch-0", v, fetch(0, epoch=0)(v), api=FETCH)
            program.request("future-leader-epoch", v, fetch(0, epoch=5)(v), api=FETCH)
        if v >= 12:
            program.request("last-fetched-epoch-ahead", v, fetch(3, last_fetched_epoch=3)(v), api=FETCH)
            program.request("last-fetched-epoch-0", v, fetch(3, last_fetched_epoch=0)(v), api=FETCH)
        if v >= 7:
            _fetch_sessions(program, v, fetch)
    program.vary(FETCH, "fetch", lambda v: _named_fetch(topic, v), only=(
        "unknown-topic", "invalid-topic-name", "unknown-partition", "negative-partition", "unknown-topic-id"))


def _named_fetch(topic: str, v: int):
    if v < 13:
        return _fetch_request(topic, 0, 0)
    return lambda s: _fetch_request(topic, 0, 0, topic_id=s.topic_id(topic))


def _fetch_sessions(program: Program, v: int, fetch) -> None:
    def remember(session: Session, response) -> None:
        session.vars[f"fetch-session-{v}"] = response.session_id

    def in_session(epoch: int, empty: bool = False, offset: int = 0, session_id: int | None = None):
        def make(s: Session) -> FetchRequest:
            request = fetch(offset)(v)(s)
            request.session_id = s.vars.get(f"fetch-session-{v}", 0) if session_id is None else session_id
            request.session_epoch = epoch
            if empty:
                request.topics = []
            return request
        return make

    program.request("session-open", v, in_session(0, session_id=0), api=FETCH, after=remember)
    program.request("session-incremental-nothing-new", v, in_session(1, empty=True), api=FETCH)
    program.request("session-incremental-changed-offset", v, in_session(2, offset=9), api=FETCH)
    program.request("session-wrong-epoch", v, in_session(7, empty=True), api=FETCH)
    program.request("session-unknown-id", v, in_session(1, empty=True, session_id=0x7654321), api=FETCH)
    program.request("session-close", v, in_session(-1, empty=True), api=FETCH)
    program.request("session-after-close", v, in_session(3, empty=True), api=FETCH)
    program.request("session-epoch-without-id", v, in_session(1, empty=True, session_id=0), api=FETCH)
    program.request("sessionless-with-id", v, in_session(-1, session_id=0x7654321), api=FETCH)


# --------------------------------------------------------------------------------- ListOffsets


def _list_offsets(program: Program) -> None:
    t0 = program.now_ms - HOUR_MS

    def spec(timestamp: int, *, topic: str = "diff-fetch", partitions: tuple[int, ...] = (0,), isolation: int = 0,
             epoch: int = -1, replica_id: int = -1):
        return lambda v: ListOffsetsRequest(replica_id=replica_id, isolation_level=isolation, timeout_ms=30000,
                                            topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                                                ListOffsetsRequest.ListOffsetsPartition(
                                                    partition_index=p, timestamp=timestamp, current_leader_epoch=epoch,
                                                    max_num_offsets=1) for p in partitions])])

    cases = {
        "latest": spec(-1), "earliest": spec(-2), "max-timestamp": spec(-3), "earliest-local": spec(-4),
        "latest-tiered": spec(-5), "earliest-pending-upload": spec(-6), "unknown-spec": spec(-7),
        "timestamp-first": spec(t0), "timestamp-in-batch": spec(t0 + 2), "timestamp-between-batches": spec(t0 + 5),
        "timestamp-in-compressed-batch": spec(t0 + 21), "timestamp-after-all": spec(t0 + HOUR_MS),
        "timestamp-zero": spec(0), "read-committed-latest": spec(-1, isolation=1),
        "invalid-isolation": spec(-1, isolation=4),
        "current-leader-epoch-0": spec(-1, epoch=0), "future-leader-epoch": spec(-1, epoch=7),
        "from-broker-0": spec(-1, replica_id=0), "from-debug-consumer": spec(-1, replica_id=-2),
        "duplicate-partition": spec(-1, partitions=(0, 0)), "empty-topic": spec(-1, topic="diff-meta-c"),
        "empty-topic-max-timestamp": spec(-3, topic="diff-meta-c"),
        "empty-topic-by-timestamp": spec(0, topic="diff-meta-c"),
        "appended-in-this-run": spec(-3, topic="diff-produce"),
    }
    for case, build in cases.items():
        program.each_version(LIST_OFFSETS, case, build)
    program.vary(LIST_OFFSETS, "latest", spec(-1), only=(
        "unknown-topic", "invalid-topic-name", "unknown-partition", "negative-partition"))


# ------------------------------------------------------------------------------- DeleteRecords


def _delete_records(program: Program) -> None:
    def delete(partition: int, offset: int, topic: str = "diff-dr", twice: bool = False):
        parts = [DeleteRecordsRequest.DeleteRecordsPartition(partition_index=partition, offset=offset)]
        return DeleteRecordsRequest(timeout_ms=30000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name=topic, partitions=parts * (2 if twice else 1))])

    for v in program.versions(DELETE_RECORDS):
        program.request("advance", v, delete(0, 2 + v))
        program.request("same-offset", v, delete(0, 2 + v))
        program.request("below-log-start", v, delete(0, 1))
        program.request("beyond-high-watermark", v, delete(0, 100))
        program.request("negative-offset", v, delete(0, -5))
        program.request("duplicate-partition", v, delete(0, 6, twice=True))
        program.request("internal-topic", v, delete(0, 0, topic="__consumer_offsets"))
    program.request("to-high-watermark", program.top(DELETE_RECORDS), delete(1, -1))
    program.request("to-high-watermark-again", program.top(DELETE_RECORDS), delete(1, -1))
    program.vary(DELETE_RECORDS, "delete", lambda v: delete(0, 0), only=(
        "unknown-topic", "invalid-topic-name", "unknown-partition", "negative-partition"))
    lo = program.top(LIST_OFFSETS)
    for p in (0, 1):
        program.request(f"log-start-{p}", lo, ListOffsetsRequest(replica_id=-1, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name="diff-dr", partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=-2)])]))
        program.request(f"fetch-below-log-start-{p}", 12, _fetch_request("diff-dr", p, 0), api=FETCH)
        program.request(f"fetch-at-log-start-{p}", 12, _fetch_request("diff-dr", p, 12 if p else 4), api=FETCH)


__all__ = ["TOPICS", "add"]
