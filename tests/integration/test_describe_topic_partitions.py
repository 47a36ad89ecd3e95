"""DescribeTopicPartitions (KIP-966) against a real broker: paging with a cursor, limits, errors.

The wire-level differential suite (tests/oracle/test_wire_differential.py) compares the same paths
with Apache Kafka; this module checks them without Java.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import CreateTopicsRequest, DescribeTopicPartitionsRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

Request = DescribeTopicPartitionsRequest
Cursor = DescribeTopicPartitionsRequest.Cursor
TOPICS = {"dtp-c": 4, "dtp-a": 3, "dtp-b": 2}


@pytest.fixture(scope="module")
def client(broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient.connect(broker.bootstrap) as wire:
        answer = wire.request(CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=n, num_partitions=p, replication_factor=1)
            for n, p in TOPICS.items()]), 7)
        assert [t.error_code for t in answer.topics] == [0, 0, 0]
        yield wire


def pages(client: WireClient, limit: int) -> list[list[tuple[str, int]]]:
    """Every page of the three topics, following next_cursor."""
    out, cursor = [], None
    while True:
        answer = client.request(Request(topics=[Request.TopicRequest(name=n) for n in TOPICS],
                                        response_partition_limit=limit, cursor=cursor), 0)
        assert all(t.error_code == 0 for t in answer.topics)
        out.append([(t.name, p.partition_index) for t in answer.topics for p in t.partitions])
        if answer.next_cursor is None:
            return out
        cursor = Cursor(topic_name=answer.next_cursor.topic_name, partition_index=answer.next_cursor.partition_index)


def test_pages_cover_every_partition_once_in_name_order(client: WireClient) -> None:
    everything = [(n, p) for n in sorted(TOPICS) for p in range(TOPICS[n])]
    assert pages(client, 2000) == [everything]
    assert pages(client, 4) == [everything[:4], everything[4:8], everything[8:]]
    assert pages(client, 3) == [everything[:3], everything[3:6], everything[6:]]
    assert pages(client, 0) == [[p] for p in everything]  # at least one partition per answer


def test_cursor_errors(client: WireClient) -> None:
    asked = [Request.TopicRequest(name="dtp-a")]
    for cursor in (Cursor(topic_name="dtp-c", partition_index=0), Cursor(topic_name="dtp-a", partition_index=-1)):
        answer = client.request(Request(topics=asked, cursor=cursor), 0)
        assert [(t.name, t.error_code) for t in answer.topics] == [("dtp-a", ErrorCode.INVALID_REQUEST)]


def test_unknown_and_invalid_names(client: WireClient) -> None:
    answer = client.request(Request(topics=[Request.TopicRequest(name=n) for n in ("dtp-a", "dtp-none", "bad name!")]),
                            0)
    assert [(t.name, t.error_code, len(t.partitions)) for t in answer.topics] == [
        ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION, 0), ("dtp-a", 0, 3),
        ("dtp-none", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)]
