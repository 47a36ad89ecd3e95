"""Real clients (confluent-kafka, kafka-python) driven against fresh fake brokers, and the request frames
kept from what they sent."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from pathlib import Path

from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.headers import decode_request_header
from tools.capture_frames.cluster import ADVERTISED, BASE_TIMESTAMP_MS, KAFKA_2_3, PARTITIONS, TOPIC
from tools.capture_frames.fake_broker import Exchange, FakeBroker, start_broker
from tools.capture_frames.frame_file import dump_exchanges, write_frames

log = logging.getLogger("capture_frames")

MESSAGES_PER_PRODUCER = 3


def _messages(tag: str) -> list[tuple[int, bytes, bytes, int]]:
    """(partition, key, value, timestamp_ms) of the records one producer sends; small and reproducible.

    Partitions are explicit, so both are used. Values repeat themselves: clients send a batch
    uncompressed when compressing it would not make it smaller.
    """
    return [
        (i % PARTITIONS, f"k{i}".encode(), f"{tag}-{i}:".encode() + b" golden" * 16, BASE_TIMESTAMP_MS + i)
        for i in range(MESSAGES_PER_PRODUCER)
    ]


def drive_confluent_kafka(broker: FakeBroker, timeout_s: float) -> None:
    """Producer (plain, idempotent, four codecs), Consumer in a group, AdminClient.list_topics."""
    from confluent_kafka import Consumer, KafkaException, Producer
    from confluent_kafka.admin import AdminClient

    base = {"bootstrap.servers": f"127.0.0.1:{broker.port}", "broker.address.family": "v4"}
    producers = {
        "plain": {"enable.idempotence": False, "acks": "all"},
        "idempotent-lz4": {"enable.idempotence": True, "compression.type": "lz4"},
        "zstd": {"compression.type": "zstd"},
        "gzip": {"compression.type": "gzip"},
        "snappy": {"compression.type": "snappy"},
    }
    for tag, extra in producers.items():
        producer = Producer({**base, "linger.ms": 20, **extra})
        for i, (partition, key, value, ts) in enumerate(_messages(f"ck-{tag}")):
            headers = [("trace", b"golden")] if i == 0 else None
            producer.produce(TOPIC, value=value, key=key, partition=partition, timestamp=ts, headers=headers)
        if producer.flush(timeout_s):
            raise RuntimeError(f"confluent-kafka producer {tag} did not deliver")

    expected = sum(broker.log_end.values())
    consumer = Consumer({
        **base,
        "group.id": "golden-confluent-kafka",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
    })
    consumer.subscribe([TOPIC])
    received = _poll_confluent(consumer, expected, timeout_s)
    if received < expected:
        raise RuntimeError(f"confluent-kafka consumer got {received} of {expected} records")
    try:
        consumer.commit(asynchronous=False)
    except KafkaException as e:  # pragma: no cover - reported, not fatal for the capture
        log.warning("confluent-kafka commit failed: %s", e)
    _poll_confluent(consumer, 10**9, 1.0)  # stay in the group long enough to heartbeat
    consumer.close()

    admin = AdminClient(base)
    topics = admin.list_topics(timeout=timeout_s).topics
    if TOPIC not in topics:
        raise RuntimeError("confluent-kafka AdminClient did not list the topic")


def _poll_confluent(consumer, want: int, timeout_s: float) -> int:
    got = 0
    deadline = time.monotonic() + timeout_s
    while got < want and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got += 1
    return got


def drive_kafka_python(broker: FakeBroker, timeout_s: float) -> None:
    """KafkaProducer (default idempotence; plain and gzip), KafkaConsumer in a group, KafkaAdminClient."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

    bootstrap = f"127.0.0.1:{broker.port}"
    for tag, extra in {"default": {}, "gzip": {"compression_type": "gzip"}}.items():
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, **extra)
        futures = [
            producer.send(TOPIC, value=value, key=key, partition=partition, timestamp_ms=ts,
                          headers=[("trace", b"golden")] if i == 0 else None)
            for i, (partition, key, value, ts) in enumerate(_messages(f"kp-{tag}"))
        ]
        producer.flush(timeout_s)
        for f in futures:
            f.get(timeout_s)
        producer.close(timeout_s)

    expected = sum(broker.log_end.values())
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id="golden-kafka-python",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=200,
    )
    received = 0
    deadline = time.monotonic() + timeout_s
    while received < expected and time.monotonic() < deadline:
        received += sum(len(records) for records in consumer.poll(timeout_ms=200).values())
    if received < expected:
        raise RuntimeError(f"kafka-python consumer got {received} of {expected} records")
    consumer.commit()
    end = time.monotonic() + 1.0
    while time.monotonic() < end:  # stay in the group long enough to heartbeat
        consumer.poll(timeout_ms=100)
    consumer.close()

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        if TOPIC not in admin.list_topics():
            raise RuntimeError("KafkaAdminClient did not list the topic")
        admin.describe_topics([TOPIC])
        admin.describe_cluster()
    finally:
        admin.close()


#: client -> runs, each against a fresh broker: (what the broker advertises, driver).
RUNS = {
    "confluent-kafka": [(ADVERTISED, drive_confluent_kafka), (KAFKA_2_3, drive_confluent_kafka)],
    "kafka-python": [(ADVERTISED, drive_kafka_python), (KAFKA_2_3, drive_kafka_python)],
}


DEFAULT_CAP = 3
#: More frames of the APIs whose requests vary most: each produce frame shows another codec or
#: idempotence setting; metadata requests ask for one, no or all topics (librdkafka's all-topics
#: request is malformed, librdkafka issue #5049, and must stay in the set).
CAPS = {ApiKey.PRODUCE: 10, ApiKey.METADATA: 8}


def select_requests(exchanges: list[Exchange], cap_default: int) -> dict[tuple[int, int], list[bytes]]:
    """The first distinct request frames of each (api_key, version), at most the cap each.

    Frames whose bodies are equal count as the same frame, whatever their headers (correlation id,
    client id) say. The chosen frames are sorted, so that file names do not depend on the order in
    which a client's threads happened to send them.
    """
    chosen: dict[tuple[int, int], list[bytes]] = defaultdict(list)
    seen: set[tuple[int, int, bytes]] = set()
    for ex in exchanges:
        _, body_start = decode_request_header(ex.request)
        body = (ex.api_key, ex.api_version, bytes(ex.request[body_start:]))
        if body in seen:
            continue
        seen.add(body)
        if len(chosen[ex.api_key, ex.api_version]) < CAPS.get(ex.api_key, cap_default):
            chosen[ex.api_key, ex.api_version].append(ex.request)
    return {key: sorted(frames, key=lambda f: (len(f), f)) for key, frames in chosen.items()}


def capture_requests(
    out: Path, clients: list[str], timeout_s: float, cap: int, exchanges_dir: Path | None = None
) -> None:
    """Drive each client against fresh fake brokers and write the chosen request frames."""
    for client in clients:
        exchanges: list[Exchange] = []
        for advertised, driver in RUNS[client]:
            broker, loop, thread = start_broker(client, advertised)
            log.info("%s: %s against 127.0.0.1:%d (%s)", client, driver.__name__, broker.port,
                     "Kafka 2.3-like" if advertised is KAFKA_2_3 else "current versions")
            try:
                driver(broker, timeout_s)
                time.sleep(0.5)  # let the last requests of closing clients arrive
            finally:
                broker.stop(loop, thread)
            if broker.unhandled:
                log.warning("%s sent requests the fake broker does not handle: %s", client, sorted(set(broker.unhandled)))
            exchanges += broker.exchanges
        if exchanges_dir is not None:
            dump_exchanges(exchanges_dir / client, exchanges)
        written = write_frames(out, client, "request", select_requests(exchanges, cap))
        log.info("%s: %d request frames received, %d written", client, len(exchanges), written)

