"""The group APIs through the broker's request dispatcher, in process: FindCoordinator, a classic
group's JoinGroup / SyncGroup / Heartbeat / LeaveGroup, OffsetCommit / OffsetFetch, and a KIP-848
consumer group's ConsumerGroupHeartbeat; sessions that expire when the (manual) clock passes them."""

from __future__ import annotations

import struct
from pathlib import Path

from tests.inprocess.harness import InProcessBroker, run
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

SESSION_MS = 6000  # group.min.session.timeout.ms's default


def _string(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0, as a Java consumer sends it in JoinGroup."""
    return struct.pack(">hi", 0, len(topics)) + b"".join(_string(t) for t in topics) + struct.pack(">i", -1)


def assignment(topic: str, *partitions: int) -> bytes:
    """ConsumerProtocolAssignment v0 of one topic."""
    return (struct.pack(">hi", 0, 1) + _string(topic) + struct.pack(">i", len(partitions))
            + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1))


def join(group: str, member_id: str = "", *topics: str) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=30_000,
                            member_id=member_id, protocol_type="consumer", protocols=[
                                JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                                          metadata=subscription(*topics))])


async def find_coordinator(b: InProcessBroker, key: str, key_type: int = 0) -> tuple[int, int]:
    """(error_code, node_id) of FindCoordinator v4 for ``key``; the coordinator's partition is loaded
    on first use, meanwhile COORDINATOR_NOT_AVAILABLE, as in Kafka."""
    answer: list[tuple[int, int]] = []

    async def found() -> bool:
        r = await b.request(FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]), 4)
        (c,) = r.coordinators
        answer[:] = [(c.error_code, c.node_id)]
        return c.error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE

    await b.wait_until(found, f"the coordinator of {key!r}")
    return answer[0]


async def commit(b: InProcessBroker, group: str, generation: int, member: str, topic: str,
                 offsets: dict[int, int]) -> dict[int, int]:
    """{partition: error_code} of OffsetCommit v8."""
    r = await b.request(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                                            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                                                OffsetCommitRequest.OffsetCommitRequestPartition(
                                                    partition_index=p, committed_offset=o, committed_metadata="m")
                                                for p, o in offsets.items()])]), 8)
    (t,) = r.topics
    return {p.partition_index: p.error_code for p in t.partitions}


async def committed(b: InProcessBroker, group: str, topic: str, *partitions: int) -> tuple[int, dict[int, tuple]]:
    """(group error, {partition: (committed_offset, metadata, error_code)}) of OffsetFetch v8."""
    r = await b.request(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopics(name=topic,
                                                                            partition_indexes=list(partitions))])]), 8)
    (g,) = r.groups
    return g.error_code, {p.partition_index: (p.committed_offset, p.metadata, p.error_code)
                          for t in g.topics for p in t.partitions}


def test_find_coordinator_names_this_broker_for_groups_and_transactional_ids(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        assert await find_coordinator(b, "g") == (0, 0)
        assert await find_coordinator(b, "txn", key_type=1) == (0, 0)
        assert (await find_coordinator(b, "x", key_type=7))[0] == ErrorCode.INVALID_REQUEST
        topics = (await b.request(MetadataRequest(topics=None), 12)).topics
        assert {"__consumer_offsets", "__transaction_state"} <= {t.name for t in topics}  # created on first use

    run(tmp_path, scenario)


def test_a_classic_group_forms_syncs_commits_and_leaves(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("in", 2)
        await find_coordinator(b, "g")
        first = await b.request(join("g", "", "in"), 5)
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id  # KIP-394
        member = first.member_id
        joined = await b.request(join("g", member, "in"), 5)
        assert (joined.error_code, joined.generation_id, joined.protocol_name) == (0, 1, "range")
        assert (joined.leader, joined.member_id) == (member, member)
        assert [(m.member_id, m.metadata) for m in joined.members] == [(member, subscription("in"))]

        synced = await b.request(SyncGroupRequest(group_id="g", generation_id=1, member_id=member, assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=assignment("in", 0, 1))]), 3)
        assert (synced.error_code, synced.assignment) == (0, assignment("in", 0, 1))
        beat = HeartbeatRequest(group_id="g", generation_id=1, member_id=member)
        assert (await b.request(beat, 3)).error_code == 0
        stale = HeartbeatRequest(group_id="g", generation_id=0, member_id=member)
        assert (await b.request(stale, 3)).error_code == ErrorCode.ILLEGAL_GENERATION

        assert await commit(b, "g", 1, member, "in", {0: 5, 1: 7}) == {0: 0, 1: 0}
        assert await commit(b, "g", 1, "stranger", "in", {0: 9}) == {0: ErrorCode.UNKNOWN_MEMBER_ID}
        assert await committed(b, "g", "in", 0, 1) == (0, {0: (5, "m", 0), 1: (7, "m", 0)})

        left = await b.request(LeaveGroupRequest(group_id="g", members=[
            LeaveGroupRequest.MemberIdentity(member_id=member)]), 3)
        assert (left.error_code, [(m.member_id, m.error_code) for m in left.members]) == (0, [(member, 0)])
        assert (await b.request(beat, 3)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert await committed(b, "g", "in", 0, 1) == (0, {0: (5, "m", 0), 1: (7, "m", 0)})  # offsets outlive members

    run(tmp_path, scenario)


def test_a_classic_member_that_stops_heartbeating_is_expired_after_its_session(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await find_coordinator(b, "g")
        member = (await b.request(join("g", "", "in"), 5)).member_id
        joined = await b.request(join("g", member, "in"), 5)
        assert joined.error_code == 0
        await b.request(SyncGroupRequest(group_id="g", generation_id=1, member_id=member, assignments=[]), 3)
        beat = HeartbeatRequest(group_id="g", generation_id=1, member_id=member)
        await b.advance(SESSION_MS - 1000)
        assert (await b.request(beat, 3)).error_code == 0  # within its session: renewed
        await b.advance(SESSION_MS - 1000)
        assert (await b.request(beat, 3)).error_code == 0
        await b.advance(SESSION_MS + 1000)
        assert (await b.request(beat, 3)).error_code == ErrorCode.UNKNOWN_MEMBER_ID

    run(tmp_path, scenario)


def test_offsets_of_an_unknown_group_and_of_a_generation_less_commit(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("in", 1)
        await find_coordinator(b, "solo")
        assert await committed(b, "solo", "in", 0) == (0, {0: (-1, "", 0)})
        # generation -1, no member: a standalone consumer's (assign()) commit
        assert await commit(b, "solo", -1, "", "in", {0: 42}) == {0: 0}
        assert await committed(b, "solo", "in", 0) == (0, {0: (42, "m", 0)})

    run(tmp_path, scenario)


def test_a_consumer_group_member_gets_its_assignment_by_heartbeat_and_leaves(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("in", 3)
        topic_id = next(t.topic_id for t in (await b.request(MetadataRequest(topics=None), 12)).topics if t.name == "in")
        await find_coordinator(b, "cg")
        hello = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m-1", member_epoch=0, rebalance_timeout_ms=30_000,
                                              subscribed_topic_names=["in"], server_assignor="uniform",
                                              topic_partitions=[])
        r = await b.request(hello, 1)
        assert (r.error_code, r.member_id, r.member_epoch) == (0, "m-1", 1)
        assert r.heartbeat_interval_ms > 0
        assert r.assignment is not None
        assert [(tp.topic_id, sorted(tp.partitions)) for tp in r.assignment.topic_partitions] == [(topic_id, [0, 1, 2])]

        owned = [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=topic_id, partitions=[0, 1, 2])]
        again = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m-1", member_epoch=1, topic_partitions=owned)
        r = await b.request(again, 1)
        assert (r.error_code, r.member_epoch) == (0, 1)
        fenced = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m-1", member_epoch=7)
        assert (await b.request(fenced, 1)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        bye = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m-1", member_epoch=-1)
        r = await b.request(bye, 1)
        assert (r.error_code, r.member_id, r.member_epoch) == (0, "m-1", -1)
        unknown = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m-1", member_epoch=1)
        assert (await b.request(unknown, 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID

    run(tmp_path, scenario)


def test_a_consumer_group_member_that_stops_heartbeating_is_expired(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("in", 1)
        await find_coordinator(b, "cg")
        hello = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m-1", member_epoch=0, rebalance_timeout_ms=30_000,
                                              subscribed_topic_names=["in"], topic_partitions=[])
        assert (await b.request(hello, 1)).member_epoch == 1
        await b.advance(46_000)  # group.consumer.session.timeout.ms: 45 s
        late = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m-1", member_epoch=1)
        assert (await b.request(late, 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID

    run(tmp_path, scenario)
