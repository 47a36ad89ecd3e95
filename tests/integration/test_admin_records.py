"""DeleteRecords against a real broker, through confluent-kafka's AdminClient and a wire client for the
errors the library does not show: the low watermark moves, and what is below it is no longer read.
"""

from __future__ import annotations

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.error import KafkaError as CKError

from tests.integration.kafka_io import create_topics, error_code, produce, read_partition
from tidelog.protocol.messages import DeleteRecordsRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

# One worker runs the whole module, on one broker (see conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("admin_records")]


def test_delete_records_moves_the_low_watermark(admin: AdminClient, broker: BrokerProcess) -> None:
    create_topics(admin, NewTopic("dr-topic", 1, 1))
    produce(broker, "dr-topic", [f"m{i}".encode() for i in range(10)], partition=0)
    (future,) = admin.delete_records([TopicPartition("dr-topic", 0, 4)]).values()
    assert future.result(10).low_watermark == 4
    messages = read_partition(broker, "dr-topic", 0, 6)
    assert [m.offset() for m in messages] == list(range(4, 10))
    assert messages[0].value() == b"m4"
    (above,) = admin.delete_records([TopicPartition("dr-topic", 0, 11)]).values()
    assert error_code(above) == CKError.OFFSET_OUT_OF_RANGE
    (everything,) = admin.delete_records([TopicPartition("dr-topic", 0, -1)]).values()
    assert everything.result(10).low_watermark == 10


def test_delete_records_errors(admin: AdminClient, wire: WireClient) -> None:
    create_topics(admin, NewTopic("dr-compact", 1, 1, config={"cleanup.policy": "compact"}))
    (compact,) = admin.delete_records([TopicPartition("dr-compact", 0, 0)]).values()
    assert error_code(compact) == CKError.POLICY_VIOLATION
    Topic, Partition = DeleteRecordsRequest.DeleteRecordsTopic, DeleteRecordsRequest.DeleteRecordsPartition
    response = wire.request(DeleteRecordsRequest(topics=[
        Topic(name="dr-compact", partitions=[Partition(partition_index=5, offset=0)]),
        Topic(name="dr-nowhere", partitions=[Partition(partition_index=0, offset=0)]),
    ], timeout_ms=5000), 2)
    codes = [(p.error_code, p.low_watermark) for t in response.topics for p in t.partitions]
    assert codes == [(3, -1), (3, -1)]  # UNKNOWN_TOPIC_OR_PARTITION
