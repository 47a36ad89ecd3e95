"""Streams groups (KIP-1071) over the wire on a real ``tidelog serve``: served by default as in Kafka 4.4
(StreamsGroupHeartbeat, StreamsGroupDescribe, StreamsGroupTopologyDescriptionUpdate in ApiVersions,
``streams.version`` 1 among the features), not with ``group.coordinator.rebalance.protocols`` leaving out
``streams``; a member joining with a word
count topology makes the broker create the repartition and changelog topics, then gets every task;
ListGroups, DescribeGroups, StreamsGroupDescribe, OffsetCommit with the member epoch, leaving and
DeleteGroups."""

from __future__ import annotations

import pytest

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import wait_for

pytestmark = [pytest.mark.integration]

BROKER_OVERRIDES = {"group.streams.initial.rebalance.delay.ms": "0"}  # streams groups: served by default
FRESH_BROKER_OVERRIDES = {"group.coordinator.rebalance.protocols": "classic,consumer"}
Q = StreamsGroupHeartbeatRequest
GROUP = "wc-app"
REPARTITION, CHANGELOG = "wc-app-count-repartition", "wc-app-count-changelog"
STREAMS_APIS = {88: (0, 1), 89: (0, 1), 93: (0, 0)}


def topology() -> Q.Topology:
    return Q.Topology(epoch=0, subtopologies=[
        Q.Subtopology(subtopology_id="0", source_topics=["wc-lines"], repartition_sink_topics=[REPARTITION]),
        Q.Subtopology(subtopology_id="1", source_topics=[REPARTITION],
                      repartition_source_topics=[Q.TopicInfo(name=REPARTITION, topic_configs=[
                          Q.KeyValue(key="cleanup.policy", value="delete")])],
                      state_changelog_topics=[Q.TopicInfo(name=CHANGELOG, topic_configs=[
                          Q.KeyValue(key="cleanup.policy", value="compact")])])])


def api_versions(wire: WireClient):
    return wire.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)


def test_streams_apis_are_not_served_without_streams_in_the_rebalance_protocols(fresh_broker: BrokerProcess) -> None:
    with WireClient.connect(fresh_broker.bootstrap) as wire:
        r = api_versions(wire)
        assert not {k.api_key for k in r.api_keys} & set(STREAMS_APIS)
        assert "streams.version" not in {f.name for f in r.supported_features}
        assert "streams.version" not in {f.name for f in r.finalized_features}


def test_a_member_joins_gets_internal_topics_then_tasks_then_leaves(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as wire:
        r = api_versions(wire)
        served = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
        assert {k: served.get(k) for k in STREAMS_APIS} == STREAMS_APIS
        assert {(f.name, f.max_version_level) for f in r.finalized_features if f.name == "streams.version"} == {
            ("streams.version", 1)}
        created = wire.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="wc-lines", num_partitions=3, replication_factor=1)], timeout_ms=10_000), 7)
        assert created.topics[0].error_code == 0
        found = wire.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 4)
        assert found.coordinators[0].error_code == 0

        def heartbeat(epoch: int, **fields):
            return wire.request(Q(group_id=GROUP, member_id="m1", member_epoch=epoch, **fields), 1)

        first = heartbeat(0, topology=topology(), process_id="p1", rebalance_timeout_ms=30_000, active_tasks=[],
                          standby_tasks=[], warmup_tasks=[])
        assert first.error_code == 0, first.error_message
        assert [s.status_code for s in first.status] == [3]  # MISSING_INTERNAL_TOPICS
        topics = {t.name: len(t.partitions) for t in wire.request(MetadataRequest(topics=None), 12).topics}
        assert topics[REPARTITION] == 3 and topics[CHANGELOG] == 3

        epochs = [first.member_epoch]

        def assigned():
            r = heartbeat(epochs[-1])
            epochs.append(r.member_epoch)
            return r if r.error_code == 0 and not r.status and r.active_tasks else None

        r = wait_for(assigned, timeout=30, what="the tasks once the internal topics exist")
        assert {(t.subtopology_id, tuple(t.partitions)) for t in r.active_tasks} == {("0", (0, 1, 2)),
                                                                                      ("1", (0, 1, 2))}
        epoch = r.member_epoch

        listed = wire.request(ListGroupsRequest(states_filter=[], types_filter=["streams"]), 5)
        assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed.groups] == [
            (GROUP, "streams", "streams", "Stable")]
        classic = wire.request(DescribeGroupsRequest(groups=[GROUP]), 6).groups[0]
        assert classic.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        d = wire.request(StreamsGroupDescribeRequest(group_ids=[GROUP, "nope"]), 1).groups
        assert (d[0].error_code, d[0].group_state, d[0].group_epoch, d[0].assignor_name) == (0, "Stable", epoch,
                                                                                           "sticky")
        assert [m.member_id for m in d[0].members] == ["m1"] and d[1].error_code == ErrorCode.GROUP_ID_NOT_FOUND

        # as Kafka 4.4 without a topology description plugin: nothing is stored, pushes are refused
        U = StreamsGroupTopologyDescriptionUpdateRequest
        pushed = wire.request(U(group_id=GROUP, member_id="m1", topology_epoch=0,
                                topology_description=U.TopologyDescription()), 0)
        assert pushed.error_code == ErrorCode.UNSUPPORTED_VERSION
        described = wire.request(StreamsGroupDescribeRequest(group_ids=[GROUP], include_topology_description=True), 1)
        assert (described.groups[0].topology_description_status, described.groups[0].topology_description) == (1, None)
        assert r.topology_description_required is False

        def commit(member_epoch: int) -> int:
            c = wire.request(OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=member_epoch,
                                                 member_id="m1", topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                                                     name="wc-lines", partitions=[
                                                         OffsetCommitRequest.OffsetCommitRequestPartition(
                                                             partition_index=0, committed_offset=5)])]), 9)
            return c.topics[0].partitions[0].error_code

        assert commit(epoch) == 0
        assert commit(epoch + 1) == ErrorCode.STALE_MEMBER_EPOCH

        busy = wire.request(DeleteGroupsRequest(groups_names=[GROUP]), 2).results[0]
        assert busy.error_code == ErrorCode.NON_EMPTY_GROUP
        left = heartbeat(-1)
        assert (left.error_code, left.member_epoch) == (0, -1)
        gone = wire.request(DeleteGroupsRequest(groups_names=[GROUP]), 2).results[0]
        assert gone.error_code == 0
        assert wire.request(ListGroupsRequest(states_filter=[], types_filter=["streams"]), 5).groups == []
