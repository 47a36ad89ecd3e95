"""Request builders and answer readers for the in-process handler tests: the few shapes every test
module sends (a Produce of one batch, a Fetch of one partition, a ListOffsets), in the fields of
Kafka's message definitions."""

from __future__ import annotations

from tidelog.protocol.messages import FetchRequest, ListOffsetsRequest, ProduceRequest
from tidelog.records import iter_batches


def produce(topic: str, records: bytes, *, partition: int = 0, acks: int = -1,
            transactional_id: str | None = None) -> ProduceRequest:
    data = ProduceRequest.PartitionProduceData(index=partition, records=records)
    return ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=10_000,
                          topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[data])])


def produced(response) -> tuple[int, int]:
    """(error_code, base_offset) of a one-partition Produce answer."""
    (topic,) = response.responses
    (p,) = topic.partition_responses
    return p.error_code, p.base_offset


def fetch(topic: str, offset: int, *, partition: int = 0, max_wait_ms: int = 0, min_bytes: int = 0,
          isolation_level: int = 0) -> FetchRequest:
    """A sessionless Fetch (v4-v12: by topic name) of one partition."""
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=50 << 20,
                        isolation_level=isolation_level, session_id=0, session_epoch=-1, topics=[
                            FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                                partition=partition, fetch_offset=offset, partition_max_bytes=10 << 20)])])


def fetched(response):
    """The one partition of a one-partition Fetch answer."""
    assert response.error_code == 0
    (topic,) = response.responses
    (p,) = topic.partitions
    return p


def values(records) -> list[bytes | None]:
    """The values of the data records (control batches left out) in fetched ``records``."""
    out: list[bytes | None] = []
    for batch in iter_batches(bytes(records or b"")):
        if not batch.is_control_batch:
            out.extend(r.value for r in batch.records())
    return out


def list_offsets(topic: str, timestamp: int, *, partition: int = 0, isolation_level: int = 0) -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=timestamp)])])


def listed(response) -> tuple[int, int, int]:
    """(error_code, timestamp, offset) of a one-partition ListOffsets answer."""
    (topic,) = response.topics
    (p,) = topic.partitions
    return p.error_code, p.timestamp, p.offset
