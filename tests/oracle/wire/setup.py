"""Steps that prepare state and are not compared: topics, records, waiting until a broker is ready.

Kafka answers CreateTopics once its controller has committed the topic, a moment before the broker
leads the new partitions (a Produce right after may see UNKNOWN_TOPIC_OR_PARTITION or
NOT_LEADER_OR_FOLLOWER); :func:`create_topics` therefore waits, on either broker, until every new
partition answers ListOffsets, and describes the topics with Metadata so their ids are known
(:meth:`Session.topic_id`). Waiting is not behaviour under test: Tidelog is ready at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from tests.oracle.wire.program import Program, Session
from tidelog.protocol.messages import (
    CreateTopicsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetFetchRequest,
    ProduceRequest,
)
from tidelog.records import CompressionType, RecordBatchBuilder

Topic = tuple[int, dict[str, str]]  # (partitions, configs)


def create_topics(program: Program, label: str, topics: dict[str, Topic]) -> None:
    """Create ``topics`` (name -> (partitions, configs)) with one uncompared CreateTopics, then wait."""
    request = CreateTopicsRequest(timeout_ms=30000, topics=[
        CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])
        for name, (partitions, configs) in topics.items()])
    program.request(f"setup-{label}", program.top(request.API_KEY), request, compare=False, after=_check_created)
    wait_ready(program, label, list(topics))


def _check_created(session: Session, response) -> None:
    failed = {t.name: t.error_code for t in response.topics if t.error_code}
    if failed:
        raise AssertionError(f"set-up CreateTopics failed: {failed}")


def wait_ready(program: Program, label: str, names: list[str], timeout: float = 60.0) -> None:
    metadata_version = program.top(MetadataRequest.API_KEY)
    list_offsets_version = program.top(ListOffsetsRequest.API_KEY)

    def run(session: Session) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if _ready(session, names, metadata_version, list_offsets_version):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"topics {names} not ready on {session.bootstrap} after {timeout} s")
            time.sleep(0.05)

    program.action(f"wait-{label}", run)


def _ready(session: Session, names: list[str], metadata_version: int, list_offsets_version: int) -> bool:
    metadata = session.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                                            allow_auto_topic_creation=False), metadata_version)
    session.symbols.learn_topics(metadata, metadata_version)
    partitions = {}
    for topic in metadata.topics:
        if topic.error_code or not topic.partitions or any(p.leader_id < 0 for p in topic.partitions):
            return False
        partitions[topic.name] = [p.partition_index for p in topic.partitions]
    request = ListOffsetsRequest(replica_id=-1, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=name, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in indexes])
        for name, indexes in partitions.items()])
    answer = session.call(request, list_offsets_version)
    return all(p.error_code == 0 for t in answer.topics for p in t.partitions)


def wait_for_coordinator(program: Program, label: str, group: str, timeout: float = 60.0) -> None:
    """Until FindCoordinator finds the group's coordinator (Kafka creates and loads
    __consumer_offsets on the first request, answering COORDINATOR_NOT_AVAILABLE meanwhile)."""
    version = program.top(FindCoordinatorRequest.API_KEY)

    def run(session: Session) -> None:
        deadline = time.monotonic() + timeout
        while True:
            answer = session.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[group], key=group), version)
            codes = [c.error_code for c in answer.coordinators] if version >= 4 else [answer.error_code]
            if codes == [0]:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no coordinator for {group} on {session.bootstrap}: {codes}")
            time.sleep(0.1)

    program.action(f"coordinator-{label}", run)


def wait_for_group_partition(program: Program, label: str, group: str, timeout: float = 60.0) -> None:
    """Until the __consumer_offsets partition of ``group`` is loaded: OffsetFetch v7 (whose answer has
    a top-level error) stops answering NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS. Kafka loads
    its 50 partitions one by one after creating the topic; a group id that is not a valid coordinator
    key ("") cannot be waited for with FindCoordinator."""
    version = min(7, program.top(OffsetFetchRequest.API_KEY))
    loading = {14, 15, 16}

    def run(session: Session) -> None:
        deadline = time.monotonic() + timeout
        while True:
            answer = session.call(OffsetFetchRequest(group_id=group, topics=[]), version)
            if answer.error_code not in loading:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"group {group!r} still loading on {session.bootstrap}: {answer.error_code}")
            time.sleep(0.1)

    program.action(f"group-partition-{label}", run)


def wait_for_producer_ids(program: Program, timeout: float = 60.0) -> None:
    """Until InitProducerId hands out an id (Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its
    controller has granted the broker a block of producer ids)."""
    version = program.top(InitProducerIdRequest.API_KEY)

    def run(session: Session) -> None:
        deadline = time.monotonic() + timeout
        while True:
            answer = session.call(InitProducerIdRequest(transactional_id=None, producer_id=-1, producer_epoch=-1),
                                  version)
            if answer.error_code == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no producer id from {session.bootstrap}: error {answer.error_code}")
            time.sleep(0.1)

    program.action("producer-ids", run)


def batch(base_timestamp: int, values: Iterable[bytes | None], *, key: bytes | None = b"k",
          compression: CompressionType = CompressionType.NONE, producer_id: int = -1, producer_epoch: int = -1,
          base_sequence: int = -1, headers: tuple = ()) -> bytes:
    """One magic-v2 batch; record i has timestamp ``base_timestamp + i``."""
    builder = RecordBatchBuilder(compression=compression, producer_id=producer_id, producer_epoch=producer_epoch,
                                 base_sequence=base_sequence)
    for i, value in enumerate(values):
        builder.append(base_timestamp + i, key, value, headers)
    return builder.build()


def produce_request(topic: str, partition: int, records: bytes | None, *, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])])


def produce(program: Program, label: str, topic: str, partition: int, batches: list[bytes]) -> None:
    """Append ``batches`` one request each (uncompared); fails the run if one is refused."""
    version = program.top(ProduceRequest.API_KEY)
    for i, data in enumerate(batches):
        program.request(f"setup-{label}-{i}", version, produce_request(topic, partition, data), compare=False,
                        after=_check_produced)


def _check_produced(session: Session, response) -> None:
    codes = [p.error_code for t in response.responses for p in t.partition_responses]
    if any(codes):
        raise AssertionError(f"set-up Produce failed: {codes}")


__all__ = ["batch", "create_topics", "produce", "produce_request", "wait_for_coordinator", "wait_for_group_partition", "wait_for_producer_ids", "wait_ready"]
