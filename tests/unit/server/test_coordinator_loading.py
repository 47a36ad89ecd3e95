"""The group handlers while a ``__consumer_offsets`` partition loads in the background: ListGroups
answers COORDINATOR_LOAD_IN_PROGRESS at the top level (as Kafka), DescribeGroups and
ConsumerGroupDescribe per group, ConsumerGroupHeartbeat as its error; all serve once it is loaded.
A real group coordinator (with KIP-848 consumer groups) on partition logs in tmp_path."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tidelog.cluster.metadata import BrokerInfo
from tidelog.cluster.store import EmbeddedStore
from tidelog.config import TopicConfig
from tidelog.coordinator.group import GroupConfig, GroupCoordinator, RequestInfo
from tidelog.coordinator.group.modern.consumer.group_type import ConsumerGroupType
from tidelog.coordinator.group.offsets import PartitionCommit
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.coordinator.runtime import LogWriter, partition_for
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
)
from tidelog.protocol.messages.header import RequestHeader
from tidelog.server.context import RequestContext
from tidelog.server.handlers.consumer_group import ConsumerGroupHandlers
from tidelog.server.handlers.groups import GroupHandlers
from tidelog.storage.loader import load_log
from tidelog.testing import ManualClock

LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
PARTITIONS = 2


def ctx(api_key: ApiKey, version: int) -> RequestContext:
    return RequestContext(RequestHeader(request_api_key=int(api_key), request_api_version=version, client_id="t"),
                          "c1", "127.0.0.1")


def group_on(partition: int) -> str:
    return next(g for g in (f"g{i}" for i in range(100)) if partition_for(g, PARTITIONS) == partition)


def test_group_handlers_while_a_partition_loads(tmp_path: Path) -> None:
    clock = ManualClock()
    logs = {p: load_log(tmp_path / f"__consumer_offsets-{p}", "__consumer_offsets", p,
                        TopicConfig(cleanup_policy="compact"), clock) for p in range(PARTITIONS)}
    config = GroupConfig(offsets_topic_num_partitions=PARTITIONS)
    loading, served = group_on(1), group_on(0)
    first = GroupCoordinator(config, clock, LogWriter(logs.__getitem__), num_partitions=PARTITIONS,
                             group_types=[ConsumerGroupType])
    first.load(range(PARTITIONS))
    for i in range(200):
        first.commit_offsets(RequestInfo("c", "/h", 9), loading, "", None, -1, [PartitionCommit("t", 0, i)])
    first.commit_offsets(RequestInfo("c", "/h", 9), served, "", None, -1, [PartitionCommit("t", 0, 1)])
    store = EmbeddedStore(tmp_path / "meta")
    store.open(BrokerInfo(0, "h", 9092))

    async def scenario() -> None:
        c = GroupCoordinator(config, clock, LogWriter(logs.__getitem__), num_partitions=PARTITIONS,
                             group_types=[ConsumerGroupType])
        c.load([0])
        c.runtime.loads.chunk_batches = 5
        c.load([1], background=True)
        service = GroupCoordinatorService(c)
        groups = GroupHandlers(service)
        consumer = ConsumerGroupHandlers(service, store, ("classic", "consumer"))

        listed = await groups.handle_list_groups(ctx(ApiKey.LIST_GROUPS, 4), ListGroupsRequest())
        assert (listed.error_code, listed.groups) == (LOADING, [])
        described = await groups.handle_describe_groups(ctx(ApiKey.DESCRIBE_GROUPS, 5),
                                                  DescribeGroupsRequest(groups=[loading, served]))
        assert [(d.group_id, d.error_code) for d in described.groups] == [(loading, LOADING), (served, 0)]
        cg = await consumer.handle_consumer_group_describe(ctx(ApiKey.CONSUMER_GROUP_DESCRIBE, 0),
                                                     ConsumerGroupDescribeRequest(group_ids=[loading, served]))
        assert [(d.group_id, d.error_code) for d in cg.groups] == [(loading, LOADING),
                                                                   (served, ErrorCode.GROUP_ID_NOT_FOUND)]
        try:
            await consumer.handle_consumer_group_heartbeat(
                ctx(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0),
                ConsumerGroupHeartbeatRequest(group_id=loading, member_epoch=0, rebalance_timeout_ms=10_000,
                                              subscribed_topic_names=["t"], topic_partitions=[]))
            raise AssertionError("heartbeat served while loading")
        except KafkaError as e:
            assert e.code == LOADING

        await c.runtime.loads.task(1)
        listed = await groups.handle_list_groups(ctx(ApiKey.LIST_GROUPS, 4), ListGroupsRequest())
        assert listed.error_code == 0 and {g.group_id for g in listed.groups} == {loading, served}
        described = await groups.handle_describe_groups(ctx(ApiKey.DESCRIBE_GROUPS, 5), DescribeGroupsRequest(groups=[loading]))
        assert [(d.error_code, d.group_state) for d in described.groups] == [(0, "Empty")]

    asyncio.run(scenario())
