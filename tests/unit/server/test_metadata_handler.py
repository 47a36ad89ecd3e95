"""Metadata's answer for a topic's partitions: a leader the broker list does not name is never given out."""

from __future__ import annotations

import uuid

from tidelog.cluster.metadata import BrokerInfo, MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.errors import ErrorCode
from tidelog.server.handlers.metadata import topic_metadata


def image(live: tuple[int, ...], *partitions: PartitionMetadata) -> MetadataImage:
    brokers = {i: BrokerInfo(i, "127.0.0.1", 9000 + i) for i in live}
    return MetadataImage("c", live[0], brokers, {"t": TopicMetadata("t", uuid.uuid4(), partitions)})


def answer(img: MetadataImage) -> list[tuple[int, int, int, int, list[int], list[int]]]:
    return [(p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes)
            for p in topic_metadata(img, "t", 12).partitions]


def test_a_partition_led_by_a_live_broker_names_its_leader() -> None:
    img = image((1, 2, 3), PartitionMetadata(0, 3, 2, (3, 1, 2), (3, 1, 2)))
    assert answer(img) == [(0, 0, 3, 2, [3, 1, 2], [3, 1, 2])]


def test_a_leader_gone_from_the_broker_list_is_answered_leader_not_available() -> None:
    """Broker 3 was killed: its registration is gone, the controller has not elected another leader
    of partition 1 yet. Kafka answers LEADER_NOT_AVAILABLE with leader -1 (and the epoch, replicas and
    ISR as they are); naming broker 3 made kafka-python's fetcher raise UnknownBrokerIdError from poll()."""
    img = image((1, 2), PartitionMetadata(0, 2, 0, (2, 1, 3), (2, 1, 3)),
                PartitionMetadata(1, 3, 0, (3, 2, 1), (3, 2, 1)))
    assert answer(img) == [(0, 0, 2, 0, [2, 1, 3], [2, 1, 3]),
                           (1, int(ErrorCode.LEADER_NOT_AVAILABLE), -1, 0, [3, 2, 1], [3, 2, 1])]


def test_an_offline_partition_is_answered_leader_not_available() -> None:
    img = image((2, 3), PartitionMetadata(0, -1, 5, (1, 2, 3), (1,)))
    assert answer(img) == [(0, int(ErrorCode.LEADER_NOT_AVAILABLE), -1, 5, [1, 2, 3], [1])]


def test_replicas_on_brokers_that_are_not_live_are_offline() -> None:
    img = image((1, 2), PartitionMetadata(0, 2, 0, (2, 1, 3), (2, 1)), PartitionMetadata(1, 1, 0, (1, 2), (1, 2)))
    assert [p.offline_replicas for p in topic_metadata(img, "t", 12).partitions] == [[3], []]


def test_describe_topic_partitions_gives_no_dead_leader_and_lists_offline_replicas() -> None:
    """DescribeTopicPartitions (KIP-966), as Kafka's metadata cache answers it: leader -1 without an
    error code where the leader is not a live broker; replicas on such brokers offline."""
    from tidelog.server.handlers.describe_topic_partitions import described_topic

    img = image((1, 2), PartitionMetadata(0, 2, 0, (2, 1, 3), (2, 1)), PartitionMetadata(1, 3, 4, (3, 2, 1), (3, 2, 1)))
    got = [(p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.offline_replicas)
           for p in described_topic(img, "t", img.topics["t"].partitions).partitions]
    assert got == [(0, 0, 2, 0, [3]), (1, 0, -1, 4, [3])]
