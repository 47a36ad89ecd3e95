"""Dead-letter queues of share groups (KIP-1191, ``share.version=2``; Kafka's ``ShareGroupDLQManager``).

A share group names its dead-letter queue (DLQ) topic with the group config
``errors.deadletterqueue.topic.name``. With it set (and the broker at ``share.version`` 2), a record a
consumer REJECTs, or whose delivery count reaches ``share.delivery.count.limit`` (a RELEASE, a lock
expiry, its member leaving), is not archived at once: its share partition marks it ARCHIVING (never
offered again), hands its offsets to :meth:`DeadLetterWriter.send`, and archives it once the write is
done, whether it succeeded or not (Kafka: "proceeding to ARCHIVED regardless").

What is written, one record per offset, as Kafka 4.4 writes it:

* headers ``__dlq.errors.topic`` (the source topic's name), ``__dlq.errors.partition``,
  ``__dlq.errors.offset``, ``__dlq.errors.group``, ``__dlq.errors.delivery.count`` (decimal text) and
  ``__dlq.errors.message`` (``Offset rejected by client.`` or ``Offset delivery count exceeded the
  threshold.``);
* the original record's key and value only with the group config
  ``errors.deadletterqueue.copy.record.enable`` (default false: null key and value; a record larger than
  the DLQ topic's ``max.message.bytes`` also gets none); the original headers are never copied;
* the time of the write as a CreateTime timestamp, no producer id, uncompressed;
* to partition ``source partition % partitions of the DLQ topic``.

Rules (Kafka's checks before a write; a failed check fails the write, and the records are archived):
the name must not start with ``__``; it must start with the broker's
``errors.deadletterqueue.topic.name.prefix`` (``dlq.``; empty: any name); an existing topic must have
the topic config ``errors.deadletterqueue.group.enable=true``; a missing topic is created (broker
defaults for partitions and replicas, ``errors.deadletterqueue.group.enable=true``,
``message.timestamp.type=CreateTime``) only with the broker's
``errors.deadletterqueue.auto.create.topics.enable``.

The write goes through the replica manager as a produce does (acks=all, the topic's own checks), on this
broker when it leads the DLQ partition, else as a Produce request to its leader over the inter-broker
client. It is the broker's own write: no ACL is checked (Kafka's broker sends it as itself).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages.produce import ProduceRequest
from tidelog.records.batch import RecordBatchView
from tidelog.records.builder import RecordBatchBuilder
from tidelog.records.record import Record
from tidelog.replica.manager import ReplicaManager

log = logging.getLogger(__name__)

#: The group configs (Kafka 4.4's ``GroupConfig``).
TOPIC_NAME_CONFIG = "errors.deadletterqueue.topic.name"
COPY_RECORD_CONFIG = "errors.deadletterqueue.copy.record.enable"
#: The topic config a DLQ topic must have set to true.
TOPIC_ENABLE_CONFIG = "errors.deadletterqueue.group.enable"

#: ``__dlq.errors.message``: why the record is there.
CLIENT_REJECT = "Offset rejected by client."
DELIVERY_COUNT_EXCEEDED = "Offset delivery count exceeded the threshold."

HEADER_TOPIC = "__dlq.errors.topic"
HEADER_PARTITION = "__dlq.errors.partition"
HEADER_OFFSET = "__dlq.errors.offset"
HEADER_GROUP = "__dlq.errors.group"
HEADER_DELIVERY_COUNT = "__dlq.errors.delivery.count"
HEADER_MESSAGE = "__dlq.errors.message"

#: The Produce version of a write to another broker (by topic name)
PRODUCE_VERSION = 9
#: How long a write waits for the ISR (Kafka's DLQ produce: acks=-1, timeout 30 s).
WRITE_TIMEOUT_MS = 30_000
#: A record batch's fixed size before its records (Kafka's ``RECORD_BATCH_OVERHEAD``).
_BATCH_OVERHEAD = 61


@dataclass(frozen=True, slots=True)
class DeadLetters:
    """Offsets of one share partition on their way to the group's DLQ, with one delivery count and reason."""

    group_id: str
    topic: str
    partition: int
    first_offset: int
    last_offset: int
    delivery_count: int
    reason: str


def is_enabled(share_version: int, group_config: Mapping[str, Any] | None) -> bool:
    """Kafka's ``isDLQEnabledForGroup``: share.version 2 and a non-empty DLQ topic name for the group."""
    return share_version >= 2 and bool(str((group_config or {}).get(TOPIC_NAME_CONFIG, "") or "").strip())


def dead_letter_runs(group_id: str, topic: str, partition: int, archiving: Mapping[int, int],
                     reason_of: Callable[[int], str]) -> list[DeadLetters]:
    """Offsets on their way to the DLQ (with their delivery counts) as runs of consecutive offsets with one
    delivery count and reason."""
    runs: list[DeadLetters] = []
    for offset in sorted(archiving):
        count, reason = archiving[offset], reason_of(offset)
        last = runs[-1] if runs else None
        if last is not None and last.last_offset + 1 == offset and last.delivery_count == count \
                and last.reason == reason:
            runs[-1] = DeadLetters(group_id, topic, partition, last.first_offset, offset, count, reason)
        else:
            runs.append(DeadLetters(group_id, topic, partition, offset, offset, count, reason))
    return runs


def _true(value: Any) -> bool:
    return value is True or str(value).strip().lower() == "true"


def dlq_headers(letters: DeadLetters, offset: int) -> list[tuple[str, bytes]]:
    """The context headers of the DLQ record of ``offset``, in Kafka's order."""
    return [(HEADER_TOPIC, letters.topic.encode()),
            (HEADER_PARTITION, str(letters.partition).encode()),
            (HEADER_OFFSET, str(offset).encode()),
            (HEADER_GROUP, letters.group_id.encode()),
            (HEADER_DELIVERY_COUNT, str(letters.delivery_count).encode()),
            (HEADER_MESSAGE, letters.reason.encode())]


class DeadLetterSink(Protocol):
    """What a share partition hands its dead letters to (a :class:`DeadLetterWriter`)."""

    def enabled(self, group_id: str) -> bool:
        """Whether the group has a dead-letter queue now (Kafka's ``isDLQEnabledForGroup``)."""
        ...

    async def send(self, letters: DeadLetters) -> str | None:
        """Write them; None once written, else why not. Never raises."""
        ...


#: Sends a Produce request to another broker (the inter-broker client), answering its response.
RemoteProduce = Callable[[int, ProduceRequest], Awaitable[Any]]


class DeadLetterWriter:
    """Writes share groups' dead letters to their DLQ topics (see the module docstring)."""

    def __init__(self, replicas: ReplicaManager, *, share_version: Callable[[], int], broker_values: Mapping[str, Any],
                 group_configs: Callable[[str], Mapping[str, Any] | None],
                 create_topic: Callable[[str, Mapping[str, str]], Awaitable[object]],
                 wall_ms: Callable[[], int], remote: RemoteProduce | None = None) -> None:
        self.replicas = replicas
        #: the cluster's finalized share.version (UpdateFeatures changes it at runtime)
        self.share_version = share_version
        self.broker_values = broker_values
        self.group_configs = group_configs
        self.create_topic = create_topic
        self.wall_ms = wall_ms
        self.remote = remote
        #: DLQ records written, and writes that failed (their records were archived all the same)
        self.written = 0
        self.failed = 0

    def enabled(self, group_id: str) -> bool:
        return is_enabled(self.share_version(), self.group_configs(group_id))

    def topic_of(self, group_id: str) -> str:
        return str((self.group_configs(group_id) or {}).get(TOPIC_NAME_CONFIG, "") or "").strip()

    def check(self, group_id: str) -> str | None:
        """Kafka's ``validateDlqTopic``: None, or why the group's DLQ cannot be written."""
        name = self.topic_of(group_id)
        if not name:
            return f"Configured DLQ topic name in share group: {group_id} is empty."
        if name.startswith("__"):
            return f"Configured DLQ topic name in share group: {group_id} cannot start with __, topic: {name}."
        topic = self.replicas.image.topics.get(name)
        if topic is not None and not _true(topic.configs.get(TOPIC_ENABLE_CONFIG, False)):
            return f"DLQ is not enabled on configured DLQ topic for share group: {group_id}, topic: {name}."
        if topic is None and not _true(self.broker_values.get("errors.deadletterqueue.auto.create.topics.enable",
                                                              False)):
            return (f"DLQ topic does not exist and auto create is disabled on cluster for share group: {group_id}, "
                    f"topic: {name}.")
        prefix = str(self.broker_values.get("errors.deadletterqueue.topic.name.prefix", "dlq.") or "")
        if prefix and not name.startswith(prefix):
            return (f"Configured DLQ topic name does not comply with the DLQ topic prefix in share group: {group_id}, "
                    f"topic: {name}, prefix: {prefix}.")
        return None

    async def send(self, letters: DeadLetters) -> str | None:
        """Write the DLQ records of ``letters``; None once written, else why not (logged; never raises)."""
        try:
            error = await self._send(letters)
        except KafkaError as e:
            error = f"{e.code.name}: {e.message}"
        except Exception as e:  # the records are archived whatever happened here
            log.exception("writing dead letters %s", letters)
            error = repr(e)
        if error is None:
            self.written += letters.last_offset - letters.first_offset + 1
        else:
            self.failed += 1
            log.error("Failed to write to DLQ, proceeding to ARCHIVED regardless: %s (%s)", error, letters)
        return error

    async def _send(self, letters: DeadLetters) -> str | None:
        error = self.check(letters.group_id)
        if error is not None:
            return error
        name = self.topic_of(letters.group_id)
        image = self.replicas.image
        if name not in image.topics:
            try:
                await self.create_topic(name, {TOPIC_ENABLE_CONFIG: "true", "message.timestamp.type": "CreateTime"})
            except KafkaError as e:
                if e.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    return f"creating the DLQ topic {name}: {e.code.name}"
            image = self.replicas.image
        topic = image.topics.get(name)
        if topic is None or not topic.partitions:
            return f"the DLQ topic {name} has no partitions yet"
        partition = letters.partition % len(topic.partitions)
        copy = _true((self.group_configs(letters.group_id) or {}).get(COPY_RECORD_CONFIG, False))
        originals = self._originals(letters) if copy else {}
        max_bytes = self.replicas.topic_configs.for_topic(image, name).max_message_bytes
        for batch in self._batches(letters, originals, max_bytes):
            error = await self._append(name, partition, batch)
            if error is not None:
                return error
        return None

    def _originals(self, letters: DeadLetters) -> dict[int, Record]:
        """The source records of ``letters`` by offset (key and value copied); what cannot be read is left
        out (its DLQ record carries the headers only, as Kafka does)."""
        out: dict[int, Record] = {}
        try:
            batches: Iterator[RecordBatchView] = self.replicas.batches(letters.topic, letters.partition,
                                                                       letters.first_offset)
            for batch in batches:
                if batch.base_offset > letters.last_offset:
                    break
                if batch.last_offset < letters.first_offset or batch.is_control_batch:
                    continue
                for record in batch.records():
                    if letters.first_offset <= record.offset <= letters.last_offset:
                        out[record.offset] = record
        except Exception as e:
            log.warning("reading the records of %s for its DLQ: %s; headers only", letters, e)
        return out

    def _batches(self, letters: DeadLetters, originals: Mapping[int, Record], max_bytes: int) -> Iterator[bytes]:
        """The DLQ records of ``letters`` as batches of at most ``max_bytes`` (one record at least)."""
        builder: RecordBatchBuilder | None = None
        size = _BATCH_OVERHEAD
        for offset in range(letters.first_offset, letters.last_offset + 1):
            original = originals.get(offset)
            key = original.key if original is not None else None
            value = original.value if original is not None else None
            if len(key or b"") + len(value or b"") > max_bytes:  # too large to copy: headers only, as Kafka does
                key = value = None
            headers = dlq_headers(letters, offset)
            record_size = 24 + len(key or b"") + len(value or b"") + sum(len(k) + len(v) + 4 for k, v in headers)
            if builder is not None and size + record_size > max_bytes:
                yield builder.build()
                builder = None
            if builder is None:
                builder = RecordBatchBuilder()
                size = _BATCH_OVERHEAD
            builder.append(self.wall_ms(), key, value, headers)
            size += record_size
        if builder is not None:
            yield builder.build()

    async def _append(self, topic: str, partition: int, batch: bytes) -> str | None:
        meta = self.replicas.image.topics[topic].partitions[partition]
        if meta.leader != self.replicas.broker_id:
            return await self._append_remote(topic, partition, meta.leader, batch)
        result = self.replicas.append_records(topic, partition, bytearray(batch), acks=-1)
        if self.replicas.needs_acks_wait(topic, partition, -1):
            code = await self.replicas.wait_for_acks(topic, partition, result.last_offset + 1, WRITE_TIMEOUT_MS)
            if code:
                return f"acks=all on {topic}-{partition}: {code.name}"
        return None

    async def _append_remote(self, topic: str, partition: int, leader: int, batch: bytes) -> str | None:
        if self.remote is None or leader < 0:
            return f"{topic}-{partition} is not led by this broker (leader {leader})"
        request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=WRITE_TIMEOUT_MS, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.PartitionProduceData(index=partition, records=batch)])])
        response = await self.remote(leader, request)
        for t in response.responses:
            for p in t.partition_responses:
                if p.error_code:
                    return f"producing to {topic}-{partition} on broker {leader}: {ErrorCode(p.error_code).name}"
        return None


__all__ = [
    "CLIENT_REJECT",
    "COPY_RECORD_CONFIG",
    "DELIVERY_COUNT_EXCEEDED",
    "PRODUCE_VERSION",
    "TOPIC_ENABLE_CONFIG",
    "TOPIC_NAME_CONFIG",
    "DeadLetterSink",
    "DeadLetterWriter",
    "DeadLetters",
    "dead_letter_runs",
    "dlq_headers",
    "is_enabled",
]
