"""Share groups (KIP-932) through the broker's request dispatcher, in process: the share.version gate,
ShareGroupHeartbeat (join, share-partition initialization, assignment, leave, session expiry),
ShareGroupDescribe, ListGroups by type, DescribeGroups / ConsumerGroupDescribe / OffsetFetch on a share
group, DeleteGroups, Describe/Alter/DeleteShareGroupOffsets, and the state rebuilt from __consumer_offsets
after a restart.

Until the share coordinator is merged, the broker's group service is given tests/share_state_memory.py's
MemorySharePersister (the broker builds it without one)."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.inprocess.harness import InProcessBroker, run
from tests.inprocess.test_groups import find_coordinator
from tests.share_state_memory import MemorySharePersister
from tidelog.coordinator.share.persister import SharePartitionKey
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    ApiVersionsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeGroupsRequest,
    DescribeShareGroupOffsetsRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)

SHARE_ON = {"share.version": "1"}
SESSION_MS = 45_000  # group.share.session.timeout.ms's default
SHARE_APIS = {76, 77, 90, 91, 92}


def hb(group: str, member: str, epoch: int, *topics: str) -> ShareGroupHeartbeatRequest:
    return ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                      subscribed_topic_names=list(topics) if topics else None)


def assigned(response) -> dict[uuid.UUID, list[int]] | None:
    if response.assignment is None:
        return None
    return {tp.topic_id: sorted(tp.partitions) for tp in response.assignment.topic_partitions}


async def topic_id(b: InProcessBroker, name: str) -> uuid.UUID:
    r = await b.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)]), 12)
    return r.topics[0].topic_id


async def share_broker(b: InProcessBroker) -> MemorySharePersister:
    persister = MemorySharePersister()
    b.broker.group_service.share_persister = persister
    return persister


async def join_until_assigned(b: InProcessBroker, group: str, member: str, topic: str, want: int) -> tuple[int, dict]:
    """Join, then heartbeat until the member holds ``want`` partitions; (epoch, assignment)."""
    r = await b.request(hb(group, member, 0, topic), 1)
    assert r.error_code == ErrorCode.NONE, r
    epoch, got = r.member_epoch, assigned(r) or {}
    state = {"epoch": epoch, "got": got}

    async def holds() -> bool:
        await b.settle()
        r = await b.request(hb(group, member, state["epoch"]), 1)
        assert r.error_code == ErrorCode.NONE, r
        state["epoch"] = r.member_epoch
        if r.assignment is not None:
            state["got"] = assigned(r)
        return sum(len(ps) for ps in state["got"].values()) == want

    await b.wait_until(holds, f"{member} holding {want} partitions")
    return state["epoch"], state["got"]


def test_share_apis_are_served_only_with_share_version_1(tmp_path: Path) -> None:
    async def off(b: InProcessBroker) -> None:
        versions = await b.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
        assert not SHARE_APIS & {k.api_key for k in versions.api_keys}
        assert "share.version" not in {f.name for f in versions.finalized_features}
        r = await b.request(hb("g", "m1", 0, "t"), 1)
        assert r.error_code == ErrorCode.UNSUPPORTED_VERSION

    async def on(b: InProcessBroker) -> None:
        versions = await b.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
        served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert served[76] == (1, 1) and served[77] == (1, 1) and served[90] == (0, 1)
        assert ("share.version", 1, 1) in [(f.name, f.min_version_level, f.max_version_level)
                                           for f in versions.finalized_features]
        assert ("share.version", 0, 2) in [(f.name, f.min_version, f.max_version) for f in versions.supported_features]

    run(tmp_path / "off", off, overrides={"share.version": "0"})
    run(tmp_path / "on", on, overrides=SHARE_ON)


def test_members_share_the_initialized_partitions_then_leave_and_expire(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        persister = await share_broker(b)
        await b.create_topic("q", 3)
        tid = await topic_id(b, "q")
        await find_coordinator(b, "sg")
        # Bad requests are INVALID_REQUEST; a heartbeat of an unknown group GROUP_ID_NOT_FOUND.
        assert (await b.request(hb("sg", "m1", 0), 1)).error_code == ErrorCode.INVALID_REQUEST
        assert (await b.request(hb("sg", "", 0, "q"), 1)).error_code == ErrorCode.INVALID_REQUEST
        assert (await b.request(hb("sg", "m1", -2), 1)).error_code == ErrorCode.INVALID_REQUEST
        assert (await b.request(hb("sg", "m1", 3), 1)).error_code == ErrorCode.GROUP_ID_NOT_FOUND

        # The first member: the partitions are initialized through the persister, then assigned.
        first = await b.request(hb("sg", "m1", 0, "q"), 1)
        assert first.error_code == ErrorCode.NONE and first.member_id == "m1" and first.member_epoch >= 1
        assert first.heartbeat_interval_ms == 5000
        epoch1, got1 = await join_until_assigned(b, "sg", "m1", "q", 3)
        assert got1 == {tid: [0, 1, 2]}
        assert {k for k in persister.states} == {SharePartitionKey("sg", tid, p) for p in range(3)}
        assert all(s.start_offset == -1 for s in persister.states.values())
        # A wrong epoch is fenced, an unknown member is unknown.
        assert (await b.request(hb("sg", "m1", epoch1 + 5), 1)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        assert (await b.request(hb("sg", "zz", 1), 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID

        # A second member: the three partitions are split 2/1, nothing shared.
        epoch2, got2 = await join_until_assigned(b, "sg", "m2", "q", 1)
        r = await b.request(hb("sg", "m1", epoch1), 1)
        assert r.error_code == ErrorCode.NONE
        got1 = assigned(r) or got1
        assert sorted(got1[tid] + got2[tid]) == [0, 1, 2] and len(got1[tid]) == 2
        epoch1 = r.member_epoch

        described = (await b.request(ShareGroupDescribeRequest(group_ids=["sg", "nope"]), 1)).groups
        assert described[0].error_code == 0 and described[0].group_state == "Stable"
        assert described[0].assignor_name == "simple"
        assert [(m.member_id, m.member_epoch) for m in described[0].members] == [("m1", epoch1), ("m2", epoch2)]
        assert {p for m in described[0].members for t in m.assignment.topic_partitions for p in t.partitions} == {0, 1, 2}
        assert described[0].members[0].assignment.topic_partitions[0].topic_name == "q"
        assert described[1].error_code == ErrorCode.GROUP_ID_NOT_FOUND

        listed = await b.request(ListGroupsRequest(types_filter=["share"]), 5)
        assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed.groups] == [
            ("sg", "share", "share", "Stable")]
        assert (await b.request(ListGroupsRequest(types_filter=["consumer"]), 5)).groups == []
        assert [g.group_id for g in (await b.request(ListGroupsRequest(states_filter=["Stable"]), 5)).groups] == ["sg"]
        # Kafka's answers for the other group APIs on a share group.
        d = (await b.request(DescribeGroupsRequest(groups=["sg"]), 6)).groups[0]
        assert d.error_code == ErrorCode.GROUP_ID_NOT_FOUND and d.error_message == "Group sg is not a classic group."
        d = (await b.request(DescribeGroupsRequest(groups=["sg"]), 5)).groups[0]
        assert (d.error_code, d.group_state) == (0, "Dead")
        c = (await b.request(ConsumerGroupDescribeRequest(group_ids=["sg"]), 1)).groups[0]
        assert c.error_code == ErrorCode.GROUP_ID_NOT_FOUND and "not a consumer group" in c.error_message
        f = await b.request(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id="sg", topics=None)]), 8)
        assert (f.groups[0].error_code, f.groups[0].topics) == (0, [])  # as for an unknown group
        deleted = await b.request(DeleteGroupsRequest(groups_names=["sg"]), 2)
        assert deleted.results[0].error_code == ErrorCode.NON_EMPTY_GROUP

        # m2 leaves: m1 gets all three back.
        left = await b.request(hb("sg", "m2", -1), 1)
        assert left.error_code == ErrorCode.NONE and left.member_epoch == -1
        r = await b.request(hb("sg", "m1", epoch1), 1)
        assert assigned(r) == {tid: [0, 1, 2]}

        # m1 goes silent: fenced after its session; the group is Empty.
        await b.advance(SESSION_MS + 1)
        described = (await b.request(ShareGroupDescribeRequest(group_ids=["sg"]), 1)).groups[0]
        assert described.group_state == "Empty" and described.members == []
        assert (await b.request(hb("sg", "m1", r.member_epoch), 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID

        # An empty share group is not taken over by other protocols (as Kafka 4.4 answers).
        join = await b.request(JoinGroupRequest(group_id="sg", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                                member_id="", protocol_type="consumer", protocols=[
                                                    JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]), 5)
        assert join.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        cg = await b.request(ConsumerGroupHeartbeatRequest(group_id="sg", member_id="c", member_epoch=0,
                                                           rebalance_timeout_ms=10_000, subscribed_topic_names=["q"],
                                                           topic_partitions=[]), 1)
        assert (cg.error_code, cg.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group sg is not a consumer group.")
        commit = await b.request(OffsetCommitRequest(group_id="sg", generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="q", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]), 8)
        assert commit.topics[0].partitions[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert [g.group_type for g in (await b.request(ListGroupsRequest(), 5)).groups] == ["share"]

        # DeleteGroups of the empty share group deletes its share state too.
        deleted = await b.request(DeleteGroupsRequest(groups_names=["sg"]), 2)
        assert deleted.results[0].error_code == ErrorCode.NONE
        assert persister.states == {}
        assert (await b.request(ListGroupsRequest(types_filter=["share"]), 5)).groups == []

    run(tmp_path, scenario, overrides=SHARE_ON)


def test_share_group_offsets_describe_alter_delete(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        persister = await share_broker(b)
        await b.create_topic("q", 2)
        tid = await topic_id(b, "q")
        await find_coordinator(b, "og")
        epoch, _ = await join_until_assigned(b, "og", "m1", "q", 2)

        D = DescribeShareGroupOffsetsRequest
        described = await b.request(D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id="og", topics=None)]), 0)
        (group,) = described.groups
        assert group.error_code == 0
        assert [(t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions]) for t in group.topics] == [
            ("q", [(0, -1), (1, -1)])]

        A = AlterShareGroupOffsetsRequest
        alter = A(group_id="og", topics=[A.AlterShareGroupOffsetsRequestTopic(topic_name="q", partitions=[
            A.AlterShareGroupOffsetsRequestPartition(partition_index=1, start_offset=7)])])
        assert (await b.request(alter, 0)).error_code == ErrorCode.NON_EMPTY_GROUP
        assert (await b.request(hb("og", "m1", -1), 1)).error_code == 0
        altered = await b.request(alter, 0)
        assert altered.error_code == 0
        assert [(t.topic_name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in altered.responses] == [
            ("q", [(1, 0)])]
        assert persister.states[SharePartitionKey("og", tid, 1)].start_offset == 7
        described = await b.request(D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id="og", topics=[
            D.DescribeShareGroupOffsetsRequestTopic(topic_name="q", partitions=[1])])]), 0)
        assert described.groups[0].topics[0].partitions[0].start_offset == 7

        X = DeleteShareGroupOffsetsRequest
        dropped = await b.request(X(group_id="og", topics=[X.DeleteShareGroupOffsetsRequestTopic(topic_name="q"),
                                                          X.DeleteShareGroupOffsetsRequestTopic(topic_name="nope")]), 0)
        assert dropped.error_code == 0
        assert [(t.topic_name, t.error_code, t.error_message) for t in dropped.responses] == [  # as Kafka 4.4
            ("q", 0, None), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")]
        assert persister.states == {}
        described = await b.request(D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id="og", topics=None)]), 0)
        assert described.groups[0].topics == []
        assert epoch > 0

    run(tmp_path, scenario, overrides=SHARE_ON)


def test_share_groups_are_rebuilt_from_the_log_after_a_restart(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await share_broker(b)
        await b.create_topic("q", 4)
        await find_coordinator(b, "rg")
        await join_until_assigned(b, "rg", "a", "q", 4)
        await join_until_assigned(b, "rg", "b", "q", 2)
        before = (await b.request(ShareGroupDescribeRequest(group_ids=["rg"]), 1)).groups[0]
        group = b.broker.group_service.share_groups.group("rg")
        live = (group.group_epoch, group.assignment_epoch, dict(group.members), dict(group.target_assignment),
                dict(group.initialized), dict(group.initializing))
        await b.restart()
        await share_broker(b)
        await find_coordinator(b, "rg")
        after = (await b.request(ShareGroupDescribeRequest(group_ids=["rg"]), 1)).groups[0]
        assert after == before
        group = b.broker.group_service.share_groups.group("rg")
        assert (group.group_epoch, group.assignment_epoch, dict(group.members), dict(group.target_assignment),
                dict(group.initialized), dict(group.initializing)) == live

    run(tmp_path, scenario, overrides=SHARE_ON)


def test_share_group_configs_set_the_heartbeat_interval_and_session(tmp_path: Path) -> None:
    from tidelog.protocol.messages import IncrementalAlterConfigsRequest

    async def scenario(b: InProcessBroker) -> None:
        await share_broker(b)
        await b.create_topic("q", 1)
        await find_coordinator(b, "cg")
        R = IncrementalAlterConfigsRequest
        resource = R.AlterConfigsResource(resource_type=32, resource_name="cg", configs=[
            R.AlterableConfig(name="share.heartbeat.interval.ms", config_operation=0, value="6000"),
            R.AlterableConfig(name="share.session.timeout.ms", config_operation=0, value="50000")])
        (r,) = (await b.request(R(resources=[resource]), 1)).responses
        assert r.error_code == 0
        joined = await b.request(hb("cg", "m1", 0, "q"), 1)
        assert joined.heartbeat_interval_ms == 6000
        await b.advance(SESSION_MS + 1)  # past the broker's default session, within the group's
        assert (await b.request(ShareGroupDescribeRequest(group_ids=["cg"]), 1)).groups[0].group_state == "Stable"
        await b.advance(50_000 - SESSION_MS)
        assert (await b.request(ShareGroupDescribeRequest(group_ids=["cg"]), 1)).groups[0].group_state == "Empty"

    run(tmp_path, scenario, overrides=SHARE_ON)


def test_a_deleted_topic_loses_its_share_state(tmp_path: Path) -> None:
    from tidelog.protocol.messages import DeleteTopicsRequest

    async def scenario(b: InProcessBroker) -> None:
        persister = await share_broker(b)
        await b.create_topic("gone", 2)
        await b.create_topic("kept", 1)
        gone, kept = await topic_id(b, "gone"), await topic_id(b, "kept")
        await find_coordinator(b, "dg")
        r = await b.request(ShareGroupHeartbeatRequest(group_id="dg", member_id="m", member_epoch=0,
                                                       subscribed_topic_names=["gone", "kept"]), 1)
        epoch, got = r.member_epoch, {}

        async def holds_three() -> bool:
            nonlocal epoch, got
            await b.settle()
            r = await b.request(hb("dg", "m", epoch), 1)
            epoch, got = r.member_epoch, assigned(r) or got
            return sum(len(ps) for ps in got.values()) == 3

        await b.wait_until(holds_three, "all three partitions assigned")
        assert {k.topic_id for k in persister.states} == {gone, kept}
        deleted = await b.request(DeleteTopicsRequest(topic_names=["gone"], timeout_ms=10_000), 5)
        assert deleted.responses[0].error_code == 0

        async def forgotten() -> bool:
            nonlocal epoch, got
            await b.settle()
            r = await b.request(hb("dg", "m", epoch), 1)
            assert r.error_code == 0, r
            epoch, got = r.member_epoch, assigned(r) or got
            return {k.topic_id for k in persister.states} == {kept} and got == {kept: [0]}

        await b.wait_until(forgotten, "the deleted topic's share state gone and the member left with 'kept'")
        group = b.broker.group_service.share_groups.group("dg")
        assert set(group.initialized) == {kept} and group.deleting == {}

    run(tmp_path, scenario, overrides=SHARE_ON)
