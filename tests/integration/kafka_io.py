"""What the integration tests do to a broker through real clients, in one place.

- topics: :func:`create_topics` / :func:`create_topic` (confluent-kafka's AdminClient), :func:`ensure_topic`
  (Metadata auto-creation), :func:`partition_count`, :func:`describe_configs`, :func:`error_code`;
- writing: :func:`produce` (values, all acknowledged), :func:`produce_numbered` (``v0``, ``v1`` .. over the
  partitions in turn), :func:`producer` + :func:`produce_all` (delivery reports, errors included),
  :func:`produce_batch` (one batch you built, in the Produce version you name);
- reading: :func:`read_partition` (what arrives), :func:`consume` / :func:`kp_consume` (exactly so many
  records, nothing more), :func:`raw_batches` (the batches as stored), :func:`ck_consumer`, :func:`next_message`;
- waiting: :func:`wait_for`, for what the broker reaches asynchronously (a rebalance, an expiry).

Every function takes the broker as a :class:`~tidelog.testing.BrokerProcess` or its bootstrap address.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence

import kafka
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigEntry, ConfigResource, NewTopic, ResourceType

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import FetchRequest, MetadataRequest, ProduceRequest
from tidelog.records import RecordBatchView, iter_batches
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

Where = BrokerProcess | str  # a broker, or its bootstrap address


def bootstrap_of(where: Where) -> str:
    return where if isinstance(where, str) else where.bootstrap


# ------------------------------------------------------------------------------------------ topics


def create_topics(where: Where | AdminClient, *topics: NewTopic, validate_only: bool = False,
                  timeout: float = 15.0, **partitions: int) -> None:
    """Create ``topics`` (as given) and ``name=partition_count`` topics (replication factor 1), and wait
    until each is created; the first failure raises."""
    admin = where if isinstance(where, AdminClient) else AdminClient({"bootstrap.servers": bootstrap_of(where)})
    new = [*topics, *(NewTopic(name, count, 1) for name, count in partitions.items())]
    for future in admin.create_topics(new, validate_only=validate_only).values():
        future.result(timeout)


def create_topic(where: Where | AdminClient, name: str, partitions: int = 1,
                 config: Mapping[str, str] | None = None, *, timeout: float = 15.0) -> None:
    create_topics(where, NewTopic(name, partitions, 1, config=dict(config or {})), timeout=timeout)


def ensure_topic(where: Where, topic: str) -> None:
    """Create ``topic`` through Metadata auto-creation, asking again while it is being created (the topic
    answers LEADER_NOT_AVAILABLE until the controller has decided its leaders, as in Kafka)."""
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True)
    deadline = time.monotonic() + 30
    with WireClient.connect(bootstrap_of(where)) as client:
        r = client.request(request, 4)
        while r.topics[0].error_code == ErrorCode.LEADER_NOT_AVAILABLE and time.monotonic() < deadline:
            time.sleep(0.05)
            r = client.request(request, 4)
        assert r.topics[0].error_code == 0, r.topics[0]


def partition_count(admin: AdminClient, topic: str) -> int | None:
    """How many partitions ``topic`` has; None when it does not exist."""
    t = admin.list_topics(timeout=10).topics.get(topic)  # all topics: asking for one may auto-create it
    return None if t is None or t.error is not None else len(t.partitions)


def describe_configs(admin: AdminClient, rtype: ResourceType, name: str) -> dict[str, ConfigEntry]:
    (future,) = admin.describe_configs([ConfigResource(rtype, name)]).values()
    return future.result(10)


def error_code(future) -> int:
    """The error code an admin future fails with (it must fail)."""
    with pytest.raises(KafkaException) as info:
        future.result(10)
    return info.value.args[0].code()


# ------------------------------------------------------------------------------------------ writing


def producer(where: Where, **conf: object) -> Producer:
    return Producer({"bootstrap.servers": bootstrap_of(where), "linger.ms": 5, **conf})


def produce_all(p: Producer, topic: str, records: list[dict], timeout: float = 20) -> list:
    """Produce ``records`` (kwargs of Producer.produce) and return the delivery reports (err, msg)."""
    reports: list = [None] * len(records)

    def on_delivery(i: int):
        return lambda err, msg: reports.__setitem__(i, (err, msg))

    for i, r in enumerate(records):
        p.produce(topic, on_delivery=on_delivery(i), **r)
        p.poll(0)
    assert p.flush(timeout) == 0, "messages still in flight"
    assert all(r is not None for r in reports)
    return reports


def produce(where: Where, topic: str, values: Iterable[bytes | str | None], *,
            partition: int | Sequence[int] | None = None, key: bytes | str | Sequence[bytes | str] | None = None,
            timestamp_ms: int | Sequence[int] | None = None, headers: list[tuple[str, bytes]] | None = None,
            config: Mapping[str, object] | None = None, timeout: float = 15.0) -> None:
    """Write ``values`` (a str as UTF-8) to ``topic`` with one confluent-kafka producer and wait until
    every one is acknowledged without error. ``partition``, ``key`` and ``timestamp_ms`` are one for every
    value or a sequence with one per value; without ``partition`` the producer's partitioner chooses.
    ``config``: the producer's settings (``acks``, ``batch.num.messages`` ...)."""

    def each(given, i: int):
        return given if isinstance(given, int | bytes | str) else given[i]

    records: list[dict] = []
    for i, value in enumerate(values):
        record: dict[str, object] = {"value": _utf8(value)}
        if partition is not None:
            record["partition"] = each(partition, i)
        if key is not None:
            record["key"] = _utf8(each(key, i))
        if timestamp_ms is not None:
            record["timestamp"] = each(timestamp_ms, i)
        if headers is not None:
            record["headers"] = headers
        records.append(record)
    reports = produce_all(producer(where, **dict(config or {})), topic, records, timeout)
    failed = [err for err, _ in reports if err is not None]
    assert not failed, f"{len(failed)} of {len(records)} records not delivered: {failed[:3]}"


def produce_numbered(where: Where, topic: str, partitions: int, start: int, count: int) -> set[str]:
    """Records ``v{start}`` .. ``v{start+count-1}``, record i to partition ``i % partitions``; their values."""
    numbers = range(start, start + count)
    produce(where, topic, [f"v{i}" for i in numbers], partition=[i % partitions for i in numbers])
    return {f"v{i}" for i in numbers}


def _utf8(value: bytes | str | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def produce_batch(client: WireClient, topic: str, records: bytes, *, version: int = 9, acks: int = -1,
                  partition: int = 0):
    """Send ``records`` (a batch or legacy message set, as built) in one Produce request of ``version``;
    the partition's response."""
    request = ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    (topic_response,) = client.request(request, version).responses
    (partition_response,) = topic_response.partition_responses
    return partition_response


# ------------------------------------------------------------------------------------------ reading


def ck_consumer(where: Where, **conf: object) -> Consumer:
    """A confluent-kafka consumer for assign() use. Auto-commit is off: these tests do not use the
    group, and without a coordinator librdkafka waits ~45 s in close() trying to commit."""
    return Consumer({"bootstrap.servers": bootstrap_of(where), "group.id": "tests", "enable.auto.commit": False,
                     **conf})


def is_client_event(m) -> bool:
    """An error event about the client as a whole (a dropped connection, the group coordinator
    lookup that group.id triggers) rather than about a partition."""
    return m.error() is not None and m.topic() is None and not m.error().fatal()


def next_message(c: Consumer, timeout: float):
    """The next message (or partition error) within ``timeout`` seconds, skipping client events."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        m = c.poll(left)
        if m is not None and not is_client_event(m):
            return m


def read_partition(where: Where, topic: str, partition: int, count: int, timeout: float = 20.0) -> list[Message]:
    """The records of one partition from its log start offset, until ``count`` have arrived or
    ``timeout`` seconds have passed (error events are skipped): the caller judges what came."""
    c = ck_consumer(where, **{"group.id": f"g-{uuid.uuid4()}", "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        out: list[Message] = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                out.append(m)
        return out
    finally:
        c.close()


def consume(where: Where, assignments: list[TopicPartition], count: int, timeout: float = 20, **conf) -> list:
    """Read exactly ``count`` messages from the given partitions (offsets as given) with confluent-kafka:
    fails on a partition error, on fewer within ``timeout``, and on one more arriving soon after."""
    c = ck_consumer(where, **{"auto.offset.reset": "earliest", **conf})
    try:
        c.assign(assignments)
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or is_client_event(m):
                continue
            assert m.error() is None, m.error()
            out.append(m)
        assert len(out) == count, f"consumed {len(out)} of {count}"
        # nothing more than expected arrives
        extra = next_message(c, 0.3)
        assert extra is None or extra.error() is not None, f"unexpected extra message at offset {extra.offset()}"
        return out
    finally:
        c.close()


def kp_consume(where: Where, topic: str, partitions: list[int], count: int, timeout: float = 20, **conf) -> list:
    """Read exactly ``count`` records from the start of the given partitions with kafka-python."""
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap_of(where), enable_auto_commit=False, **conf)
    try:
        tps = [kafka.TopicPartition(topic, p) for p in partitions]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        out: list = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                out.extend(records)
        assert len(out) == count, f"consumed {len(out)} of {count}"
        return out
    finally:
        c.close()


def raw_batches(where: Where, topic: str, partition: int = 0) -> list[RecordBatchView]:
    """Every batch of a partition as stored (Fetch v11, no conversion)."""
    out: list[RecordBatchView] = []
    offset = 0
    with WireClient.connect(bootstrap_of(where)) as client:
        while True:
            req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=50 << 20, topics=[
                FetchRequest.FetchTopic(topic=topic, partitions=[
                    FetchRequest.FetchPartition(partition=partition, fetch_offset=offset,
                                                partition_max_bytes=10 << 20)])])
            pd = client.request(req, 11).responses[0].partitions[0]
            assert pd.error_code == 0
            batches = [v for v in iter_batches(bytes(pd.records or b""))]
            if not batches:
                assert offset == pd.high_watermark
                return out
            out.extend(batches)  # type: ignore[arg-type]
            offset = batches[-1].next_offset


# ------------------------------------------------------------------------------------------ waiting


def wait_for(predicate: Callable[[], object], timeout: float, what: str, *,
             poll: Callable[[], object] | None = None, interval: float = 0.1) -> float:
    """Seconds until ``predicate()`` held. Between checks it sleeps ``interval`` seconds, or calls
    ``poll`` (a consumer's poll, which waits and makes progress). Fails naming ``what`` after ``timeout``."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start >= timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        if poll is None:
            time.sleep(interval)
        else:
            poll()
