"""Capture golden Kafka frames for tests/unit/protocol/test_golden.py.

Two kinds of golden bytes, written under ``--out`` (default ``tests/data/frames``):

* **Request frames from real clients.** A minimal fake single-node broker (asyncio, 127.0.0.1, port 0,
  answering with Tidelog's own codec) lets confluent-kafka and kafka-python produce (plain,
  idempotent, compressed), consume in a group (join, sync, fetch, heartbeat, commit, leave) and list
  topics. Each client runs twice against fresh brokers: one advertising current versions
  (``ADVERTISED``, client-compat.md 1.6) and one advertising what Kafka 2.3 did (``KAFKA_2_3``: no
  flexible versions, ApiVersions v0-2, so the clients also go through KIP-511's retry). Every request
  frame is recorded with the response frame sent back; the first distinct request bodies of each
  (client, API, version), up to a cap, are saved as ``<client>/<api>_request_v<N>_<n>.bin``: the
  frame without its 4-byte size prefix, i.e. request header + body. ``<client>`` is
  ``confluent-kafka`` or ``kafka-python``.
* **Response frames from independent encoders.** The response contents in ``RESPONSE_CASES`` are
  encoded by kio's entity writers and by kafka-python's protocol classes for a list of
  (API, version) pairs, and saved as ``kio/<api>_response_v<N>_<n>.bin`` and
  ``kafka-python/<api>_response_v<N>_<n>.bin``: response header (v0 or v1, as the encoder chose it;
  correlation id 7) + body, without the size prefix. Tidelog's encoder never writes a committed
  response, so the round-trip test is not circular.

Re-running replaces the .bin files it owns (README.md and other files are left alone). Record
timestamps, keys, partitions and ids handed out by the broker are fixed, but clients choose their own
batching and request order, so a re-run gives equivalent, not always byte-identical, request frames.
The response frames are reproducible.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import io
import logging
import re
import sys
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tidelog.protocol import FrameDecoder, api_entry, decode_request, encode_response
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.headers import decode_request_header, peek_api
from tidelog.protocol.messages import (
    ApiVersionsResponse,
    FetchResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    InitProducerIdResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListOffsetsResponse,
    MetadataResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    ProduceResponse,
    SyncGroupResponse,
)

log = logging.getLogger("capture_frames")

TOPIC = "golden"
TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_URL, "tidelog:golden")
PARTITIONS = 2
NODE_ID = 1
CLUSTER_ID = "tidelog-golden"
BASE_TIMESTAMP_MS = 1_700_000_000_000  # pinned record timestamps, so batches are reproducible

# (min, max) versions the fake broker advertises: client-compat.md section 1.6.
ADVERTISED: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 10),  # v0-2 are answered with UNSUPPORTED_VERSION, as Kafka 4.x does
    ApiKey.FETCH: (4, 16),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 7),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
}

# Error codes used by the fake broker (Kafka's numbers).
UNKNOWN_TOPIC_OR_PARTITION = 3
UNSUPPORTED_VERSION = 35
MEMBER_ID_REQUIRED = 79


def snake(name: str) -> str:
    """``ApiVersions`` -> ``api_versions``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# --------------------------------------------------------------------------------------------------
# The fake broker
# --------------------------------------------------------------------------------------------------


@dataclass
class Exchange:
    """One request frame and the response frame sent for it (None if acks=0), both unprefixed."""

    client: str
    api_key: int
    api_version: int
    request: bytes
    response: bytes | None


@dataclass
class Group:
    generation_id: int = 0
    member_id: str = ""
    protocol_name: str | None = None
    assignment: bytes = b""
    offsets: dict[tuple[str, int], tuple[int, int, str | None]] = field(default_factory=dict)


class FakeBroker:
    """A single-node Kafka broker that is just good enough for real clients.

    One broker per client run (``label`` names the client in the recorded exchanges). Loop-only, not
    thread-safe: all state is touched by coroutines on the broker's event loop; the driver thread only
    reads ``port``, ``log_end`` and, after ``stop()``, ``exchanges``.
    """

    def __init__(self, label: str, advertised: dict[int, tuple[int, int]] | None = None) -> None:
        self.port = 0
        self.label = label
        self.advertised = dict(ADVERTISED if advertised is None else advertised)
        self.exchanges: list[Exchange] = []
        self.unhandled: list[tuple[str, int, int]] = []
        self.log: dict[int, list[bytearray]] = {p: [] for p in range(PARTITIONS)}  # partition -> batches
        self.log_end: dict[int, int] = dict.fromkeys(range(PARTITIONS), 0)
        self.groups: dict[str, Group] = defaultdict(Group)
        self.next_producer_id = 4000
        self.next_member = 0
        self.data_arrived: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._handlers = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.METADATA: self.metadata,
            ApiKey.PRODUCE: self.produce,
            ApiKey.FETCH: self.fetch,
            ApiKey.LIST_OFFSETS: self.list_offsets,
            ApiKey.FIND_COORDINATOR: self.find_coordinator,
            ApiKey.JOIN_GROUP: self.join_group,
            ApiKey.SYNC_GROUP: self.sync_group,
            ApiKey.HEARTBEAT: self.heartbeat,
            ApiKey.LEAVE_GROUP: self.leave_group,
            ApiKey.OFFSET_COMMIT: self.offset_commit,
            ApiKey.OFFSET_FETCH: self.offset_fetch,
            ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
        }

    # -- network -----------------------------------------------------------------------------------

    async def serve(self, started: threading.Event) -> None:
        self.data_arrived = asyncio.Event()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        started.set()
        async with server:
            await self._stop.wait()
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()

    def stop(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        assert self._stop is not None
        loop.call_soon_threadsafe(self._stop.set)
        thread.join(10)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        label = self.label
        decoder = FrameDecoder()
        try:
            while chunk := await reader.read(65536):
                for request in decoder.feed(chunk):
                    response = await self.handle(label, request)
                    if response is not None:
                        writer.write(response)
                        await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("connection of %s failed", label)
        finally:
            writer.close()

    async def handle(self, label: str, request: bytes) -> bytes | None:
        """The framed response to one request frame (None for acks=0 produce)."""
        api_key, api_version = peek_api(request)
        correlation_id = int.from_bytes(request[4:8], "big", signed=True)
        if api_key == ApiKey.API_VERSIONS and api_version > self.advertised[ApiKey.API_VERSIONS][1]:
            # KIP-511: an ApiVersions version we do not know gets a v0 body with error 35.
            lo, hi = self.advertised[ApiKey.API_VERSIONS]
            body = ApiVersionsResponse(
                error_code=UNSUPPORTED_VERSION,
                api_keys=[ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=lo, max_version=hi)],
            )
            response = encode_response(body, 0, correlation_id)
            self.exchanges.append(Exchange(label, api_key, api_version, request, response[4:]))
            return response
        handler = self._handlers.get(api_key)
        advertised = self.advertised.get(api_key, (0, -1))
        if handler is None or not advertised[0] <= api_version <= advertised[1]:
            log.warning("%s sent unhandled API %d v%d; closing", label, api_key, api_version)
            self.unhandled.append((label, api_key, api_version))
            raise ConnectionError("unhandled request")
        decoded = decode_request(request)
        body = await handler(decoded.body, api_version)
        response = None if body is None else encode_response(body, api_version, correlation_id)
        self.exchanges.append(
            Exchange(label, api_key, api_version, request, None if response is None else response[4:])
        )
        return response

    # -- handlers ------------------------------------------------------------------------------------

    async def api_versions(self, req, v):
        keys = [
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self.advertised.items())
        ]
        return ApiVersionsResponse(error_code=0, api_keys=keys)

    def _broker(self, cls):
        return cls(node_id=NODE_ID, host="127.0.0.1", port=self.port, rack=None)

    async def metadata(self, req, v):
        R = MetadataResponse
        if req.topics is None:
            wanted = [(TOPIC, TOPIC_ID)]
        else:
            wanted = [(t.name, t.topic_id) for t in req.topics]
        topics = []
        for name, topic_id in wanted:
            if name == TOPIC or (name is None and topic_id == TOPIC_ID):
                partitions = [
                    R.MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=NODE_ID,
                        leader_epoch=0,
                        replica_nodes=[NODE_ID],
                        isr_nodes=[NODE_ID],
                        offline_replicas=[],
                    )
                    for p in range(PARTITIONS)
                ]
                topics.append(R.MetadataResponseTopic(error_code=0, name=TOPIC, topic_id=TOPIC_ID, partitions=partitions))
            else:
                topics.append(
                    R.MetadataResponseTopic(error_code=UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=topic_id or uuid.UUID(int=0))
                )
        return R(
            brokers=[self._broker(R.MetadataResponseBroker)],
            cluster_id=CLUSTER_ID,
            controller_id=NODE_ID,
            topics=topics,
        )

    def _append(self, partition: int, records) -> int:
        """Append the record batches of a produce request; returns the base offset of the first."""
        data = bytes(records)
        first = self.log_end[partition]
        pos = 0
        while pos + 12 <= len(data):
            size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
            batch = bytearray(data[pos : pos + size])
            last_offset_delta = int.from_bytes(batch[23:27], "big")
            batch[0:8] = self.log_end[partition].to_bytes(8, "big")  # base offset is outside the CRC
            self.log[partition].append(batch)
            self.log_end[partition] += last_offset_delta + 1
            pos += size
        return first

    async def produce(self, req, v):
        R = ProduceResponse
        responses = []
        for topic in req.topic_data:
            parts = []
            for pd in topic.partition_data:
                if v < 3:
                    parts.append(R.PartitionProduceResponse(index=pd.index, error_code=UNSUPPORTED_VERSION))
                elif topic.name != TOPIC or not 0 <= pd.index < PARTITIONS:
                    parts.append(R.PartitionProduceResponse(index=pd.index, error_code=UNKNOWN_TOPIC_OR_PARTITION))
                else:
                    base = self._append(pd.index, pd.records or b"")
                    parts.append(R.PartitionProduceResponse(index=pd.index, base_offset=base, log_start_offset=0))
            responses.append(R.TopicProduceResponse(name=topic.name, partition_responses=parts))
        assert self.data_arrived is not None
        self.data_arrived.set()
        if req.acks == 0:
            return None
        return R(responses=responses)

    def _records_from(self, partition: int, offset: int, max_bytes: int) -> bytes:
        out = bytearray()
        for batch in self.log[partition]:
            base = int.from_bytes(batch[0:8], "big")
            last = base + int.from_bytes(batch[23:27], "big")
            if last < offset:
                continue
            if out and len(out) + len(batch) > max_bytes:
                break
            out += batch
        return bytes(out)

    def _has_data(self, req) -> bool:
        return any(
            self.log_end.get(p.partition, 0) > p.fetch_offset for t in req.topics for p in t.partitions
        )

    async def fetch(self, req, v):
        R = FetchResponse
        if not self._has_data(req) and req.max_wait_ms > 0:
            assert self.data_arrived is not None
            self.data_arrived.clear()
            try:
                await asyncio.wait_for(self.data_arrived.wait(), min(req.max_wait_ms, 500) / 1000)
            except TimeoutError:
                pass
        responses = []
        for topic in req.topics:
            known = topic.topic == TOPIC if v < 13 else topic.topic_id == TOPIC_ID
            parts = []
            for p in topic.partitions:
                if not known or not 0 <= p.partition < PARTITIONS:
                    parts.append(R.PartitionData(partition_index=p.partition, error_code=UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                leo = self.log_end[p.partition]
                parts.append(
                    R.PartitionData(
                        partition_index=p.partition,
                        high_watermark=leo,
                        last_stable_offset=leo,
                        log_start_offset=0,
                        aborted_transactions=[] if req.isolation_level == 1 else None,
                        records=self._records_from(p.partition, p.fetch_offset, p.partition_max_bytes),
                    )
                )
            responses.append(R.FetchableTopicResponse(topic=topic.topic, topic_id=topic.topic_id, partitions=parts))
        return R(error_code=0, session_id=0, responses=responses)

    async def list_offsets(self, req, v):
        R = ListOffsetsResponse
        topics = []
        for topic in req.topics:
            parts = []
            for p in topic.partitions:
                if topic.name != TOPIC or not 0 <= p.partition_index < PARTITIONS:
                    parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                offset = self.log_end[p.partition_index] if p.timestamp == -1 else 0
                parts.append(
                    R.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, timestamp=-1, offset=offset, leader_epoch=0
                    )
                )
            topics.append(R.ListOffsetsTopicResponse(name=topic.name, partitions=parts))
        return R(topics=topics)

    async def find_coordinator(self, req, v):
        R = FindCoordinatorResponse
        if v < 4:
            return R(error_code=0, error_message=None, node_id=NODE_ID, host="127.0.0.1", port=self.port)
        return R(
            coordinators=[
                R.Coordinator(key=key, node_id=NODE_ID, host="127.0.0.1", port=self.port, error_message=None)
                for key in req.coordinator_keys
            ]
        )

    async def join_group(self, req, v):
        R = JoinGroupResponse
        group = self.groups[req.group_id]
        member_id = req.member_id
        if not member_id:
            member_id = f"{self.label}-member-{self.next_member}"
            self.next_member += 1
            if v >= 4:  # KIP-394: the first join only hands out the member id
                return R(error_code=MEMBER_ID_REQUIRED, generation_id=-1, protocol_name="" if v < 7 else None,
                         leader="", member_id=member_id, members=[])
        protocol = req.protocols[0]
        group.generation_id += 1
        group.member_id = member_id
        group.protocol_name = protocol.name
        return R(
            error_code=0,
            generation_id=group.generation_id,
            protocol_type=req.protocol_type,
            protocol_name=protocol.name,
            leader=member_id,
            member_id=member_id,
            members=[R.JoinGroupResponseMember(member_id=member_id, group_instance_id=req.group_instance_id,
                                               metadata=bytes(protocol.metadata))],
        )

    async def sync_group(self, req, v):
        group = self.groups[req.group_id]
        for a in req.assignments:
            if a.member_id == req.member_id:
                group.assignment = bytes(a.assignment)
        return SyncGroupResponse(
            error_code=0, protocol_type=req.protocol_type, protocol_name=req.protocol_name, assignment=group.assignment
        )

    async def heartbeat(self, req, v):
        return HeartbeatResponse(error_code=0)

    async def leave_group(self, req, v):
        R = LeaveGroupResponse
        members = [R.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id) for m in req.members]
        return R(error_code=0, members=members)

    async def offset_commit(self, req, v):
        R = OffsetCommitResponse
        group = self.groups[req.group_id]
        topics = []
        for t in req.topics:
            for p in t.partitions:
                group.offsets[(t.name, p.partition_index)] = (
                    p.committed_offset, p.committed_leader_epoch, p.committed_metadata
                )
            topics.append(R.OffsetCommitResponseTopic(
                name=t.name, partitions=[R.OffsetCommitResponsePartition(partition_index=p.partition_index)
                                         for p in t.partitions]))
        return R(topics=topics)

    def _committed(self, group: Group, topics) -> list[tuple[str, list[tuple[int, int, int, str | None]]]]:
        """[(topic, [(partition, offset, leader_epoch, metadata)])] for the requested (or all) offsets."""
        if topics is None:
            by_topic: dict[str, list[int]] = defaultdict(list)
            for name, partition in sorted(group.offsets):
                by_topic[name].append(partition)
            wanted = list(by_topic.items())
        else:
            wanted = [(t.name, list(t.partition_indexes)) for t in topics]
        return [
            (name, [(p, *group.offsets.get((name, p), (-1, -1, ""))) for p in partitions])
            for name, partitions in wanted
        ]

    async def offset_fetch(self, req, v):
        R = OffsetFetchResponse
        if v < 8:
            committed = self._committed(self.groups[req.group_id], req.topics)
            return R(topics=[
                R.OffsetFetchResponseTopic(name=name, partitions=[
                    R.OffsetFetchResponsePartition(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                   metadata=m)
                    for p, o, e, m in parts])
                for name, parts in committed])
        groups = []
        for g in req.groups:
            committed = self._committed(self.groups[g.group_id], g.topics)
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, topics=[
                R.OffsetFetchResponseTopics(name=name, partitions=[
                    R.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                    metadata=m)
                    for p, o, e, m in parts])
                for name, parts in committed]))
        return R(groups=groups)

    async def init_producer_id(self, req, v):
        producer_id = self.next_producer_id
        self.next_producer_id += 1
        return InitProducerIdResponse(error_code=0, producer_id=producer_id, producer_epoch=0)


def start_broker(
    label: str, advertised: dict[int, tuple[int, int]] | None = None
) -> tuple[FakeBroker, asyncio.AbstractEventLoop, threading.Thread]:
    """A fresh broker serving on its own event loop in a daemon thread."""
    broker = FakeBroker(label, advertised)
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(broker.serve(started))
        loop.close()

    thread = threading.Thread(target=run, name="fake-broker", daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("fake broker did not start")
    return broker, loop, thread


# --------------------------------------------------------------------------------------------------
# Real clients
# --------------------------------------------------------------------------------------------------

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


#: A Kafka 2.3-like broker: no flexible versions anywhere, and ApiVersions v0-2 only, so clients that
#: open with v3/v4 get KIP-511's error answer (v0 body, error 35) and retry. Clients then send the
#: older, non-flexible encodings of every API.
KAFKA_2_3: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 7),
    ApiKey.FETCH: (4, 11),
    ApiKey.LIST_OFFSETS: (1, 5),
    ApiKey.METADATA: (0, 8),
    ApiKey.OFFSET_COMMIT: (2, 7),
    ApiKey.OFFSET_FETCH: (1, 5),
    ApiKey.FIND_COORDINATOR: (0, 2),
    ApiKey.JOIN_GROUP: (0, 5),
    ApiKey.HEARTBEAT: (0, 3),
    ApiKey.LEAVE_GROUP: (0, 2),
    ApiKey.SYNC_GROUP: (0, 3),
    ApiKey.API_VERSIONS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 1),
}

#: client -> runs, each against a fresh broker: (what the broker advertises, driver).
RUNS = {
    "confluent-kafka": [(ADVERTISED, drive_confluent_kafka), (KAFKA_2_3, drive_confluent_kafka)],
    "kafka-python": [(ADVERTISED, drive_kafka_python), (KAFKA_2_3, drive_kafka_python)],
}


# --------------------------------------------------------------------------------------------------
# Choosing and writing request frames
# --------------------------------------------------------------------------------------------------

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
        body = (ex.api_key, ex.api_version, ex.request[body_start:])
        if body in seen:
            continue
        seen.add(body)
        if len(chosen[ex.api_key, ex.api_version]) < CAPS.get(ex.api_key, cap_default):
            chosen[ex.api_key, ex.api_version].append(ex.request)
    return {key: sorted(frames, key=lambda f: (len(f), f)) for key, frames in chosen.items()}


def file_name(api_key: int, kind: str, version: int, n: int) -> str:
    return f"{snake(api_entry(api_key).name)}_{kind}_v{version}_{n}.bin"


def write_frames(out: Path, client: str, kind: str, frames: dict[tuple[int, int], list[bytes]]) -> int:
    """Replace ``out/client/*_<kind>_v*.bin`` with ``frames``; returns the number of files written."""
    folder = out / client
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(f"*_{kind}_v*.bin"):
        old.unlink()
    count = 0
    for (api_key, version), items in sorted(frames.items()):
        for n, data in enumerate(items):
            (folder / file_name(api_key, kind, version, n)).write_bytes(data)
            count += 1
    return count


def dump_exchanges(folder: Path, exchanges: list[Exchange]) -> None:
    """Every request and the response sent for it, numbered in arrival order (for debugging)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, ex in enumerate(exchanges):
        stem = f"{i:04d}_{snake(api_entry(ex.api_key).name)}_v{ex.api_version}"
        (folder / f"{stem}_request.bin").write_bytes(ex.request)
        if ex.response is not None:
            (folder / f"{stem}_response.bin").write_bytes(ex.response)


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


# --------------------------------------------------------------------------------------------------
# Response frames from independent encoders (kio, kafka-python)
# --------------------------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    """Zig-zag varint, as in record batches v2."""
    z = (value << 1) ^ (value >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record_batch(base_offset: int, records: list[tuple[bytes | None, bytes, int]]) -> bytes:
    """A valid uncompressed v2 record batch (magic 2, CRC-32C) holding (key, value, timestamp) records."""
    import crc32c

    base_ts = records[0][2]
    body = bytearray()
    for delta, (key, value, ts) in enumerate(records):
        rec = bytearray(b"\0")  # attributes
        rec += _varint(ts - base_ts) + _varint(delta)
        rec += _varint(-1) if key is None else _varint(len(key)) + key
        rec += _varint(len(value)) + value
        rec += _varint(0)  # no headers
        body += _varint(len(rec)) + rec
    after_crc = (
        (0).to_bytes(2, "big")  # attributes: no compression, create time
        + (len(records) - 1).to_bytes(4, "big")
        + base_ts.to_bytes(8, "big")
        + max(r[2] for r in records).to_bytes(8, "big")
        + (-1).to_bytes(8, "big", signed=True)  # producer id
        + (-1).to_bytes(2, "big", signed=True)  # producer epoch
        + (-1).to_bytes(4, "big", signed=True)  # base sequence
        + len(records).to_bytes(4, "big")
        + bytes(body)
    )
    crc = crc32c.crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # partition leader epoch, magic, crc, rest
    return (
        base_offset.to_bytes(8, "big")
        + batch_length.to_bytes(4, "big")
        + (0).to_bytes(4, "big")  # partition leader epoch
        + b"\x02"
        + crc.to_bytes(4, "big")
        + after_crc
    )


NO_AUTHORIZED_OPERATIONS = -(2**31)
GOLDEN_RECORDS = record_batch(40, [(b"k0", b"golden-0", BASE_TIMESTAMP_MS), (None, b"golden-1", BASE_TIMESTAMP_MS + 5)])
# ConsumerProtocolSubscription v0 (topics ["golden"], no user data) and Assignment v0 (golden: [0, 1]).
SUBSCRIPTION = b"\0\0" + b"\0\0\0\x01" + b"\0\x06golden" + b"\xff\xff\xff\xff"
ASSIGNMENT = b"\0\0" + b"\0\0\0\x01" + b"\0\x06golden" + b"\0\0\0\x02\0\0\0\0\0\0\0\x01" + b"\xff\xff\xff\xff"

# Response contents, written with Kafka's field names in snake_case, as the union over versions:
# each encoder takes the fields its schema of a version has and ignores the rest. Tagged fields
# appear only where they should be written (the encoders skip default values differently).
_BROKERS = [
    {"node_id": 1, "host": "broker-1.golden.example", "port": 9092, "rack": "rack-a"},
    {"node_id": 2, "host": "broker-2.golden.example", "port": 9093, "rack": None},
]
_NODE_ENDPOINTS = [{"node_id": 2, "host": "broker-2.golden.example", "port": 9093, "rack": None}]


def _offset_fetch_partitions() -> list[dict[str, Any]]:
    return [
        {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 3, "metadata": "golden-meta",
         "error_code": 0},
        {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": None,
         "error_code": 0},
    ]


#: (api_key, versions, content): one golden response per version and case.
RESPONSE_CASES: list[tuple[int, tuple[int, ...], dict[str, Any]]] = [
    (ApiKey.API_VERSIONS, (0, 1, 2, 3, 4), {
        "error_code": 0,
        "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in sorted(ADVERTISED.items())],
        "throttle_time_ms": 0,
        "supported_features": [{"name": "metadata.version", "min_version": 1, "max_version": 27}],
        "finalized_features_epoch": 7,
        "finalized_features": [{"name": "metadata.version", "max_version_level": 27, "min_version_level": 27}],
    }),
    # KIP-511: the answer to an ApiVersions request of an unknown version is a v0 body with error 35.
    (ApiKey.API_VERSIONS, (0,), {
        "error_code": UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": 0, "max_version": 4}],
    }),
    (ApiKey.METADATA, (0, 1, 4, 7, 8, 9, 10, 12, 13), {
        "throttle_time_ms": 0,
        "brokers": _BROKERS,
        "cluster_id": CLUSTER_ID,
        "controller_id": 1,
        "topics": [
            {"error_code": 0, "name": TOPIC, "topic_id": TOPIC_ID, "is_internal": False,
             "partitions": [
                 {"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 5, "replica_nodes": [1, 2],
                  "isr_nodes": [1, 2], "offline_replicas": []},
                 {"error_code": 0, "partition_index": 1, "leader_id": 2, "leader_epoch": 6, "replica_nodes": [2, 1],
                  "isr_nodes": [2], "offline_replicas": [1]},
             ],
             "topic_authorized_operations": 0b1111111000},
            {"error_code": UNKNOWN_TOPIC_OR_PARTITION, "name": "missing", "topic_id": uuid.UUID(int=0),
             "is_internal": False, "partitions": [], "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS},
        ],
        "cluster_authorized_operations": NO_AUTHORIZED_OPERATIONS,
        "error_code": 0,
    }),
    (ApiKey.PRODUCE, (3, 5, 7, 8, 9, 10), {
        "responses": [{"name": TOPIC, "partition_responses": [
            {"index": 0, "error_code": 0, "base_offset": 42, "log_append_time_ms": BASE_TIMESTAMP_MS, "log_start_offset": 0,
             "record_errors": [], "error_message": None},
            {"index": 1, "error_code": 6, "base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1,
             "record_errors": [{"batch_index": 0, "batch_index_error_message": "not the leader"}],
             "error_message": "This server is not the leader for that topic-partition.",
             "current_leader": {"leader_id": 2, "leader_epoch": 6}},
        ]}],
        "throttle_time_ms": 0,
        "node_endpoints": _NODE_ENDPOINTS,
    }),
    (ApiKey.FETCH, (4, 7, 11, 12, 13, 15, 16), {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 17,
        "responses": [{"topic": TOPIC, "topic_id": TOPIC_ID, "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 42, "last_stable_offset": 42,
             "log_start_offset": 0, "aborted_transactions": [{"producer_id": 4000, "first_offset": 40}],
             "preferred_read_replica": -1, "records": GOLDEN_RECORDS},
            {"partition_index": 1, "error_code": 6, "high_watermark": -1, "last_stable_offset": -1,
             "log_start_offset": -1, "aborted_transactions": None, "preferred_read_replica": -1, "records": b"",
             "current_leader": {"leader_id": 2, "leader_epoch": 6}},
        ]}],
        "node_endpoints": _NODE_ENDPOINTS,
    }),
    (ApiKey.LIST_OFFSETS, (1, 2, 4, 5, 6, 7), {
        "throttle_time_ms": 0,
        "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 42, "leader_epoch": 5},
            {"partition_index": 1, "error_code": 6, "timestamp": -1, "offset": -1, "leader_epoch": -1},
        ]}],
    }),
    (ApiKey.FIND_COORDINATOR, (0, 1, 2, 3, 4, 5, 6), {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "node_id": 1,
        "host": "broker-1.golden.example",
        "port": 9092,
        "coordinators": [
            {"key": "golden-group", "node_id": 1, "host": "broker-1.golden.example", "port": 9092, "error_code": 0,
             "error_message": None},
            {"key": "other-group", "node_id": -1, "host": "", "port": -1, "error_code": 15,
             "error_message": "The coordinator is not available."},
        ],
    }),
    (ApiKey.JOIN_GROUP, (0, 1, 2, 5, 6, 7, 9), {
        "throttle_time_ms": 0,
        "error_code": 0,
        "generation_id": 3,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "leader": "member-1",
        "skip_assignment": False,
        "member_id": "member-1",
        "members": [
            {"member_id": "member-1", "group_instance_id": None, "metadata": SUBSCRIPTION},
            {"member_id": "member-2", "group_instance_id": "static-2", "metadata": SUBSCRIPTION},
        ],
    }),
    (ApiKey.SYNC_GROUP, (0, 1, 3, 4, 5), {
        "throttle_time_ms": 0, "error_code": 0, "protocol_type": "consumer", "protocol_name": "range",
        "assignment": ASSIGNMENT,
    }),
    (ApiKey.HEARTBEAT, (0, 1, 2, 3, 4), {"throttle_time_ms": 0, "error_code": 27}),
    (ApiKey.LEAVE_GROUP, (0, 1, 3, 4, 5), {
        "throttle_time_ms": 0, "error_code": 0,
        "members": [{"member_id": "member-1", "group_instance_id": None, "error_code": 0}],
    }),
    (ApiKey.OFFSET_COMMIT, (2, 3, 7, 8, 9), {
        "throttle_time_ms": 0,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "error_code": 0},
                                                  {"partition_index": 1, "error_code": 22}]}],
    }),
    (ApiKey.OFFSET_FETCH, (1, 2, 3, 5, 6, 7, 8, 9), {
        "throttle_time_ms": 0,
        "topics": [{"name": TOPIC, "partitions": _offset_fetch_partitions()}],
        "error_code": 0,
        "groups": [{"group_id": "golden-group", "topics": [{"name": TOPIC, "partitions": _offset_fetch_partitions()}],
                    "error_code": 0}],
    }),
    (ApiKey.INIT_PRODUCER_ID, (0, 1, 2, 3, 4), {
        "throttle_time_ms": 0, "error_code": 0, "producer_id": 4000, "producer_epoch": 2,
    }),
]

RESPONSE_CORRELATION_ID = 7


def kio_encode(api_key: int, version: int, content: dict[str, Any]) -> bytes:
    """Response header + body written by kio's entity writers."""
    from kio.index import load_payload_module
    from kio.serial import entity_writer
    from kio.static.constants import EntityType

    module = load_payload_module(api_key, version, EntityType.response)
    (cls,) = [
        c for c in vars(module).values()
        if isinstance(c, type) and getattr(c, "__type__", None) is EntityType.response
        and c.__module__ == module.__name__
    ]
    body = _kio_entity(cls, content)
    header_cls = cls.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header_cls(correlation_id=RESPONSE_CORRELATION_ID))
    entity_writer(cls)(buf, body)
    return buf.getvalue()


def _kio_entity(entity_type: type, content: dict[str, Any]):
    import dataclasses

    from kio.schema.errors import ErrorCode
    from kio.serial._introspect import EntityField, EntityTupleField, classify_field

    kwargs = {}
    for f in dataclasses.fields(entity_type):
        kafka_type = f.metadata.get("kafka_type")
        key = f.name if f.name in content else f"{f.name}_ms"  # kio drops _ms: throttle_time, log_append_time
        if key not in content:
            continue  # kio's default (a missing required field fails loudly in the constructor)
        value = content[key]
        kind = classify_field(f)
        if value is None:
            pass
        elif isinstance(kind, EntityTupleField):
            value = tuple(_kio_entity(kind.type_, item) for item in value)
        elif isinstance(kind, EntityField):
            value = _kio_entity(kind.type_, value)
        elif isinstance(value, list):
            value = tuple(value)
        elif kafka_type in ("timedelta_i32", "timedelta_i64"):
            value = datetime.timedelta(milliseconds=value)
        elif kafka_type == "datetime_i64":  # kio: log_append_time_ms -> log_append_time, -1 -> None
            value = None if value == -1 else datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
        elif kafka_type == "error_code":
            value = ErrorCode(value)
        kwargs[f.name] = value
    return entity_type(**kwargs)


def kafka_python_encode(api_key: int, version: int, content: dict[str, Any]) -> bytes:
    """Response header + body written by kafka-python's (new, spec-driven) protocol classes."""
    import kafka.protocol.consumer
    import kafka.protocol.metadata
    import kafka.protocol.producer

    name = f"{api_entry(api_key).name}Response"
    modules = (kafka.protocol.metadata, kafka.protocol.consumer, kafka.protocol.producer)
    cls = next(getattr(m, name) for m in modules if hasattr(m, name))[None]  # [None]: the unversioned class
    if version > cls.max_version:
        raise LookupError(f"kafka-python has {name} up to v{cls.max_version}")
    obj = cls(version=version, **_kafka_python_fields(cls._struct, content, version))
    obj.with_header(correlation_id=RESPONSE_CORRELATION_ID)
    return bytes(obj.encode(header=True))


def _kafka_python_fields(struct, content: dict[str, Any], version: int) -> dict[str, Any]:
    from kafka.protocol.schemas.fields.codecs import BitField

    kwargs = {}
    for f in struct.fields.values():  # not ._fields: a struct array keeps its item fields in .array_of
        if not f.for_version_q(version):
            continue
        key = f.name
        if key == "authorized_operations":  # renamed by kafka-python's MetadataResponse.json_patch
            key = next((k for k in content if k.endswith("_authorized_operations")), key)
        if key not in content:
            continue
        value = content[key]
        if value is None:
            pass
        elif f.is_struct_array():
            value = [f.data_class(version=version, **_kafka_python_fields(f, item, version)) for item in value]
        elif f.is_struct():
            value = f.data_class(version=version, **_kafka_python_fields(f, value, version))
        elif getattr(f, "_type", None) is BitField:
            value = None if value == NO_AUTHORIZED_OPERATIONS else {b for b in range(32) if value >> b & 1}
        kwargs[f.name] = value
    return kwargs


ENCODERS = {"kio": kio_encode, "kafka-python": kafka_python_encode}


def encode_responses(out: Path) -> None:
    for name, encoder in ENCODERS.items():
        frames: dict[tuple[int, int], list[bytes]] = defaultdict(list)
        skipped = []
        for api_key, versions, content in RESPONSE_CASES:
            for version in versions:
                try:
                    frames[(api_key, version)].append(encoder(api_key, version, content))
                except Exception as e:
                    skipped.append(f"{api_entry(api_key).name} v{version}: {type(e).__name__}: {e}")
        written = write_frames(out, name, "response", frames)
        log.info("%s: %d response frames written", name, written)
        for line in skipped:
            log.warning("%s could not encode %s", name, line)


# --------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="capture_frames.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example (from the repository root): .venv/bin/python tools/capture_frames.py --out tests/data/frames",
    )
    parser.add_argument("--out", type=Path, default=Path("tests/data/frames"), help="output folder")
    parser.add_argument(
        "--clients", nargs="*", choices=sorted(RUNS), default=sorted(RUNS),
        help="real clients to capture requests from (default: all; none with an empty list)",
    )
    parser.add_argument("--no-responses", action="store_true", help="skip the kio / kafka-python responses")
    parser.add_argument(
        "--cap", type=int, default=DEFAULT_CAP,
        help="request frames kept per (client, API, version); Produce and Metadata keep more (CAPS)",
    )
    parser.add_argument(
        "--exchanges", type=Path, metavar="DIR",
        help="also write every request and the response the fake broker sent, in order (not committed)",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds each client step may take")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    log.setLevel(logging.DEBUG if args.verbose else logging.INFO)
    if args.clients:
        capture_requests(args.out, args.clients, args.timeout, args.cap, args.exchanges)
    if not args.no_responses:
        encode_responses(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
