"""The internal-topic table drives the broker: every entry of ``INTERNAL_TOPICS`` is created on first use
with its configs, found by FindCoordinator for its key type and bound to a coordinator; an entry added to
a table is created and found with nothing else wired (issue 24, point 4)."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from types import MappingProxyType

import pytest

from tidelog.cluster.controller import Controller
from tidelog.cluster.metadata import BrokerInfo
from tidelog.cluster.store import EmbeddedStore
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.config import BrokerConfig, TopicConfig
from tidelog.coordinator.internal_topics import (
    CONSUMER_OFFSETS,
    INTERNAL_TOPICS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    InternalTopic,
    InternalTopicManager,
    enabled_internal_topics,
)
from tidelog.coordinator.runtime import partition_for
from tidelog.errors import ErrorCode
from tidelog.protocol import encode_request
from tidelog.protocol.messages import FindCoordinatorRequest, ProduceRequest
from tidelog.records import RecordBatchBuilder
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.server.broker import Broker
from tidelog.server.context import RequestContext
from tidelog.server.controller_events import ControllerEventManager
from tidelog.server.dispatcher import HandlerRegistry
from tidelog.server.handlers import FindCoordinatorHandler
from tidelog.server.partition_controller import PartitionController
from tidelog.testing import ManualClock

PARTITIONS = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "5"}


def broker_config(data: Path) -> BrokerConfig:
    return BrokerConfig.from_props({"log.dirs": str(data), "listeners": "PLAINTEXT://127.0.0.1:0",
                                    "broker.id": "7", **PARTITIONS})


async def dispatch(handlers: HandlerRegistry, body, version: int):
    d = handlers.dispatch(encode_request(body, version, 1, "test"),
                          lambda header: RequestContext(header, "conn-1", "127.0.0.1"))
    return await d.result if inspect.isawaitable(d.result) else d.result


def test_the_table_names_each_coordinator_topic_once() -> None:
    assert [t.name for t in INTERNAL_TOPICS] == ["__consumer_offsets", "__transaction_state", "__share_group_state"]
    assert len({t.key_type for t in INTERNAL_TOPICS}) == len(INTERNAL_TOPICS)  # one topic answers a key type
    # FindCoordinator's GROUP, TRANSACTION, SHARE
    assert (CONSUMER_OFFSETS.key_type, TRANSACTION_STATE.key_type, SHARE_GROUP_STATE.key_type) == (0, 1, 2)


def test_the_share_state_topic_is_enabled_by_share_version_only() -> None:
    share_version = [0]
    enabled = enabled_internal_topics(lambda: share_version[0] >= 1)  # the finalized level, as it changes
    assert enabled() == (CONSUMER_OFFSETS, TRANSACTION_STATE)
    share_version[0] = 1
    assert enabled() == INTERNAL_TOPICS


def test_the_share_state_topic_is_kafkas() -> None:
    """Kafka 4.4's ShareCoordinatorConfig defaults and the topic configs its ShareCoordinatorService gives;
    FindCoordinator authorizes its keys with CLUSTER_ACTION on the cluster (brokers only), from v6."""
    config = BrokerConfig.from_props({"log.dirs": "/tmp/x", "share.version": "1"})
    topic = SHARE_GROUP_STATE.new_topic(config, 3)
    assert (topic.name, topic.num_partitions, topic.replication_factor) == ("__share_group_state", 50, 3)
    assert dict(topic.configs) == {"cleanup.policy": "delete", "compression.type": "producer", "retention.ms": "-1",
                                   "segment.bytes": "104857600", "min.insync.replicas": "2"}
    assert SHARE_GROUP_STATE.authorization("g:t:0") == (AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER,
                                                        "kafka-cluster")
    assert CONSUMER_OFFSETS.authorization("g") == (AclOperation.DESCRIBE, ResourceType.GROUP, "g")
    assert SHARE_GROUP_STATE.key_denied == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert SHARE_GROUP_STATE.min_find_coordinator_version == 6


def test_every_internal_topic_is_created_with_its_configs_and_found_by_find_coordinator(tmp_path: Path) -> None:
    """In-process broker: FindCoordinator (v3 and the batched v4) for each table entry's key type creates
    its topic with the entry's configs and answers this broker; each entry is bound to a coordinator
    that loaded it; clients cannot produce to any of them."""

    async def main() -> None:
        config = broker_config(tmp_path)
        broker = Broker(config)
        await broker.start()
        try:
            enabled = enabled_internal_topics(lambda: False)()  # share.version 0: no __share_group_state
            # every coordinator is bound (share.version may be raised at runtime); FindCoordinator finds the enabled
            assert [c.topic for c in broker.coordinators.coordinated] == list(INTERNAL_TOPICS)
            for entry in enabled:
                assert entry.name not in broker.store.image.topics  # created on first use only
                old = await dispatch(broker.handlers, FindCoordinatorRequest(key="k-1", key_type=entry.key_type), 3)
                assert (old.error_code, old.node_id, old.port) == (0, 7, broker.port), old
                new = await dispatch(broker.handlers, FindCoordinatorRequest(
                    key_type=entry.key_type, coordinator_keys=["k-1", "k-2"]), 4)
                assert [(c.key, c.error_code, c.node_id) for c in new.coordinators] == [("k-1", 0, 7), ("k-2", 0, 7)]

                topic = broker.store.image.topics[entry.name]
                assert topic.is_internal
                assert len(topic.partitions) == int(PARTITIONS[entry.num_partitions_config])
                assert dict(topic.configs) == entry.new_topic(config, 1).configs
                assert topic.configs["cleanup.policy"] == "compact"
                assert topic.configs["segment.bytes"] == str(config[entry.segment_bytes_config])
                assert broker.internal_topics.locate(entry, "k-1") == (
                    topic, partition_for("k-1", len(topic.partitions)))

                batch = RecordBatchBuilder()
                batch.append(1, b"k", b"v")
                produced = await dispatch(broker.handlers, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[
                    ProduceRequest.TopicProduceData(name=entry.name, partition_data=[
                        ProduceRequest.PartitionProduceData(index=0, records=batch.build())])]), 9)
                (p,) = produced.responses[0].partition_responses
                assert p.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
            txn = broker.store.image.topics[TRANSACTION_STATE.name].configs
            assert (txn["min.insync.replicas"], txn["unclean.leader.election.enable"]) == ("1", "false")
            assert broker.store.image.topics[CONSUMER_OFFSETS.name].configs["compression.type"] == "producer"

            bad = await dispatch(broker.handlers, FindCoordinatorRequest(key="k", key_type=9), 3)
            assert bad.error_code == ErrorCode.INVALID_REQUEST
            disabled = await dispatch(broker.handlers, FindCoordinatorRequest(key_type=2, coordinator_keys=["k"]), 6)
            assert disabled.coordinators[0].error_code == ErrorCode.INVALID_REQUEST
        finally:
            await broker.stop()

    asyncio.run(main())


SHARE_STATE = InternalTopic(
    "__share_group_state", key_type=2, key_resource=ResourceType.GROUP,
    key_denied=ErrorCode.GROUP_AUTHORIZATION_FAILED,
    num_partitions_config="offsets.topic.num.partitions",
    replication_factor_config="offsets.topic.replication.factor",
    segment_bytes_config="offsets.topic.segment.bytes", min_isr_config="transaction.state.log.min.isr",
    configs=MappingProxyType({"cleanup.policy": "delete", "retention.ms": "-1"}))


@pytest.mark.parametrize("version", [3, 4])
def test_a_new_table_entry_is_created_and_found_with_nothing_else_wired(tmp_path: Path, version: int) -> None:
    """One more entry (shaped as KIP-932's ``__share_group_state``): the controller creates it on the first
    FindCoordinator for its key type, with its configs, and the key's partition leader answers."""
    store = EmbeddedStore(tmp_path)
    store.open(BrokerInfo(1, "127.0.0.1", 9092, endpoints=(("PLAINTEXT", "127.0.0.1", 9092),)))
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path), "offsets.topic.num.partitions": "4"})
    table = (*(t for t in INTERNAL_TOPICS if t is not SHARE_GROUP_STATE), SHARE_STATE)
    controller = Controller(store, 1, TopicConfigs(TopicConfig()), config,
                            internal_topics=frozenset(t.name for t in table))
    # the controller's queue decides the new partitions' first leaders; FindCoordinator waits for them
    events = ControllerEventManager()
    leadership = PartitionController(store, events, ManualClock(), alter=store.alter_partition_state,
                                     is_controller=lambda: True)
    store.subscribe(leadership.on_metadata_change)
    handlers = HandlerRegistry()
    handlers.add(FindCoordinatorHandler(store, InternalTopicManager(controller, config, lambda: store.image, lambda: table,
                                                                    leadership.await_leaders)))

    request = (FindCoordinatorRequest(key_type=2, coordinator_keys=["share:t:0"]) if version >= 4
               else FindCoordinatorRequest(key="share:t:0", key_type=2))

    async def find():
        events.start()
        try:
            return await dispatch(handlers, request, version)
        finally:
            await events.stop()

    answer = asyncio.run(find())
    found = answer.coordinators[0] if version >= 4 else answer
    assert (found.error_code, found.node_id, found.host, found.port) == (0, 1, "127.0.0.1", 9092)
    topic = store.image.topics["__share_group_state"]
    assert topic.is_internal and len(topic.partitions) == 4
    assert dict(topic.configs) == {"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "104857600",
                                   "min.insync.replicas": "1"}
    assert set(store.image.topics) == {"__share_group_state"}  # the other entries wait for their own keys
