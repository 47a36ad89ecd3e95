"""Share groups (KIP-932), with share groups on in both brokers (both at their default, share.version 2):
ShareGroupHeartbeat (join, heartbeat, fenced and unknown members, bad requests, leave), ShareGroupDescribe,
ListGroups with the ``share`` type, ShareFetch / ShareAcknowledge (a share session opened, records
acquired, acknowledged, the session closed), Describe/Alter/DeleteShareGroupOffsets on a group with
members and once empty.

Each share group starts reading at the earliest offset (the group config ``share.auto.offset.reset``, set
by an uncompared step); a member's assignment comes with a later heartbeat on both brokers, so an
uncompared loop heartbeats until the member holds its partitions before the compared steps. Member ids are
the client's own (a UUID, as Kafka's clients make them), named by order of appearance when compared.
"""

from __future__ import annotations

import time
import uuid

from tests.oracle.wire.program import Program, Session
from tests.oracle.wire.setup import batch, create_topics, produce, wait_for_coordinator
from tidelog.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)

HEARTBEAT = ShareGroupHeartbeatRequest.API_KEY
DESCRIBE = ShareGroupDescribeRequest.API_KEY
FETCH = ShareFetchRequest.API_KEY
ACKNOWLEDGE = ShareAcknowledgeRequest.API_KEY
DESCRIBE_OFFSETS = DescribeShareGroupOffsetsRequest.API_KEY
ALTER_OFFSETS = AlterShareGroupOffsetsRequest.API_KEY
DELETE_OFFSETS = DeleteShareGroupOffsetsRequest.API_KEY
TOPIC = "diff-sg-topic"
ACCEPT = 1
GROUP_RESOURCE = 32
#: The members' ids: UUIDs, as Kafka's share consumers make them (fixed, so both brokers see the same).
MEMBERS = {name: str(uuid.uuid5(uuid.NAMESPACE_DNS, f"diff-sg-{name}")) for name in ("a", "b", "c", "x")}


def heartbeat(group: str, member: str, epoch: int, topics: list[str] | None = None) -> ShareGroupHeartbeatRequest:
    return ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
                                      subscribed_topic_names=topics)


def add(program: Program) -> None:
    versions = program.versions(HEARTBEAT)
    if not versions:
        return  # a broker without share groups: the generated family shows what it answers
    create_topics(program, "share-groups", {TOPIC: (2, {})})
    produce(program, "share-groups", TOPIC, 0, [batch(program.now_ms, [b"s0", b"s1", b"s2"])])
    _heartbeats(program, versions[-1])
    for v in program.versions(FETCH):
        _fetch_and_acknowledge(program, v)
    _offsets(program)


def _earliest(program: Program, group: str) -> None:
    r = IncrementalAlterConfigsRequest
    program.request(f"setup-earliest-{group}", program.top(r.API_KEY), r(resources=[r.AlterConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configs=[r.AlterableConfig(
            name="share.auto.offset.reset", config_operation=0, value="earliest")])]), compare=False)


def _holds(response) -> bool:
    """A heartbeat's answer brings partitions (an assignment is sent only when it changes)."""
    return response.assignment is not None and any(tp.partitions for tp in response.assignment.topic_partitions)


def _join(program: Program, group: str, member: str, version: int, compare_join: bool = True,
          label: str = "") -> None:
    """The member joins (compared unless ``compare_join``), then heartbeats (uncompared) until it holds
    partitions; its epoch is ``vars[f"{group}/{member}"]``."""
    key = f"{group}/{member}"

    def remember(session: Session, response) -> None:
        if response.error_code == 0:
            session.vars[key] = response.member_epoch
            session.vars[f"{key}/assigned"] = _holds(response)

    program.request(f"join-{group}{label}", version, heartbeat(group, member, 0, [TOPIC]), after=remember,
                    compare=compare_join)

    def until_assigned(session: Session) -> None:
        if session.vars.get(f"{key}/assigned"):  # the join's answer brought them (Tidelog)
            return
        deadline = time.monotonic() + 60
        while True:
            r = session.call(heartbeat(group, member, session.vars.get(key, 0),
                                       None if key in session.vars else [TOPIC]), version)
            if r.error_code == 0:
                session.vars[key] = r.member_epoch
                if _holds(r):
                    return
            if time.monotonic() > deadline:
                raise AssertionError(f"{member} of {group} got no partitions on {session.bootstrap}: {r}")
            time.sleep(0.2)

    program.action(f"assigned-{group}-{member}", until_assigned)


def _heartbeats(program: Program, v: int) -> None:
    group = "diff-sg"
    wait_for_coordinator(program, "share-groups", group)
    _earliest(program, group)
    a, b = MEMBERS["a"], MEMBERS["b"]
    key = f"{group}/{a}"

    def beat(delta: int = 0, member: str | None = None, epoch: int | None = None):
        return lambda s: heartbeat(group, member or a, s.vars[key] + delta if epoch is None else epoch)

    program.request("empty-group-id", v, heartbeat("", a, 0, [TOPIC]))
    program.request("empty-member-id", v, heartbeat(group, "", 0, [TOPIC]))
    program.request("join-without-subscription", v, heartbeat(f"{group}-nosub", a, 0))
    program.request("unknown-group-with-epoch", v, heartbeat(f"{group}-unknown", a, 3))
    program.request("negative-epoch", v, heartbeat(group, a, -5, [TOPIC]))
    _join(program, group, a, v)
    def remember(session: Session, response) -> None:
        if response.error_code == 0:
            session.vars[key] = response.member_epoch

    program.request("heartbeat", v, beat(), api=HEARTBEAT, after=remember)
    program.request("fenced-epoch", v, beat(5), api=HEARTBEAT)
    program.request("unknown-member", v, beat(member=MEMBERS["x"], epoch=1), api=HEARTBEAT)
    program.request("describe", program.top(DESCRIBE), ShareGroupDescribeRequest(
        group_ids=[group, f"{group}-unknown", ""], include_authorized_operations=True))
    # The second member, not compared: its assignment comes with its join on Tidelog, with a later
    # heartbeat on Kafka, and which of the two partitions each member then holds varies from run to run.
    _join(program, group, b, v, compare_join=False, label="-second-member")
    program.request("first-member-after-second-joined", v, beat(), api=HEARTBEAT, after=remember, compare=False)
    for lv in program.versions(ListGroupsRequest.API_KEY):
        if lv >= 5:
            program.request("share-type", lv, ListGroupsRequest(types_filter=["share"], states_filter=[]))
    program.request("second-member-leaves", v, lambda s: heartbeat(group, b, -1), api=HEARTBEAT)
    program.request("leave", v, beat(epoch=-1), api=HEARTBEAT)
    program.request("describe-after-leaving", program.top(DESCRIBE), ShareGroupDescribeRequest(group_ids=[group]))


def _fetch_and_acknowledge(program: Program, v: int) -> None:
    group, member = f"diff-sgf-v{v}", MEMBERS["c"]
    wait_for_coordinator(program, f"share-fetch-v{v}", group)
    _earliest(program, group)
    _join(program, group, member, program.top(HEARTBEAT), compare_join=False)

    def fetch(epoch: int, *, acknowledge: bool = False, close: bool = False):
        f = ShareFetchRequest

        def build(s: Session) -> ShareFetchRequest:
            tid = s.topic_id(TOPIC)
            acks = [f.AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[ACCEPT])] if acknowledge else []
            partitions = [] if close else [f.FetchPartition(partition_index=0, partition_max_bytes=1 << 20,
                                                            acknowledgement_batches=acks)]
            return f(group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=3000, min_bytes=1,
                     max_bytes=1 << 20, max_records=500, batch_size=500,
                     topics=[f.FetchTopic(topic_id=tid, partitions=partitions)] if partitions else [])
        return build

    def acknowledge(epoch: int, first: int, last: int):
        a = ShareAcknowledgeRequest
        return lambda s: a(group_id=group, member_id=member, share_session_epoch=epoch, topics=[a.AcknowledgeTopic(
            topic_id=s.topic_id(TOPIC), partitions=[a.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                a.AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=[ACCEPT])])])])

    program.request("unknown-member", v, lambda s: ShareFetchRequest(
        group_id=group, member_id=MEMBERS["x"], share_session_epoch=1, max_wait_ms=0,
        topics=[]), api=FETCH)
    program.request("open-session", v, fetch(0), api=FETCH)
    program.request("fetch-with-acknowledgement", v, fetch(1, acknowledge=True), api=FETCH)
    program.request("wrong-session-epoch", v, fetch(7), api=FETCH)
    ack_v = v if v in program.versions(ACKNOWLEDGE) else program.top(ACKNOWLEDGE)
    program.request(f"acknowledge-after-fetch-v{v}", ack_v, acknowledge(2, 1, 2), api=ACKNOWLEDGE)
    program.request(f"acknowledge-unacquired-after-fetch-v{v}", ack_v, acknowledge(3, 0, 2), api=ACKNOWLEDGE)
    program.request("close-session", v, fetch(-1, close=True), api=FETCH)


def _until_start_offset(session: Session, group: str, offset: int, timeout: float = 5.0) -> None:
    """Until the group's persisted start offset of partition 0 is ``offset``, ``timeout`` seconds at most
    (Tidelog's is there at once; Kafka 4.4's stays behind: docs/compat.md ``share-start-offset``)."""
    d = DescribeShareGroupOffsetsRequest
    request = d(groups=[d.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=[
        d.DescribeShareGroupOffsetsRequestTopic(topic_name=TOPIC, partitions=[0])])])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        (g,) = session.call(request, 0).groups
        if [p.start_offset for t in g.topics for p in t.partitions] == [offset]:
            return
        time.sleep(0.3)


def _offsets(program: Program) -> None:
    group = "diff-sgf-v" + str(program.versions(FETCH)[-1])  # its member still there, its records acknowledged
    d, al, de = DescribeShareGroupOffsetsRequest, AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest
    program.action("share-state-written", lambda s: _until_start_offset(s, group, 3))
    for v in program.versions(DESCRIBE_OFFSETS):
        program.request("with-members", v, d(groups=[
            d.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),
            d.DescribeShareGroupOffsetsRequestGroup(group_id="diff-sg-none", topics=None)]))
        program.request("named-topics", v, d(groups=[d.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=[
            d.DescribeShareGroupOffsetsRequestTopic(topic_name=TOPIC, partitions=[0])])]))

    def alter(target: str, topic: str = TOPIC) -> AlterShareGroupOffsetsRequest:
        return al(group_id=target, topics=[al.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[
            al.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=1)])])

    for v in program.versions(ALTER_OFFSETS):
        program.request("non-empty-group", v, alter(group))
        program.request("unknown-group", v, alter("diff-sg-none"))
    for v in program.versions(DELETE_OFFSETS):
        program.request("non-empty-group", v, de(group_id=group, topics=[de.DeleteShareGroupOffsetsRequestTopic(
            topic_name=TOPIC)]))
        program.request("unknown-group", v, de(group_id="diff-sg-none", topics=[
            de.DeleteShareGroupOffsetsRequestTopic(topic_name=TOPIC)]))
    # the member leaves: the group is empty
    program.request("offsets-member-leaves", program.top(HEARTBEAT), heartbeat(group, MEMBERS["c"], -1),
                    compare=False)
    for v in program.versions(ALTER_OFFSETS):
        program.request("empty-group", v, alter(group))
        program.request("unknown-topic", v, alter(group, "diff-no-such-topic"))
    for v in program.versions(DESCRIBE_OFFSETS):
        program.request("after-alter", v, d(groups=[d.DescribeShareGroupOffsetsRequestGroup(group_id=group,
                                                                                            topics=None)]))
    for v in program.versions(DELETE_OFFSETS):
        program.request("empty-group", v, de(group_id=group, topics=[
            de.DeleteShareGroupOffsetsRequestTopic(topic_name=TOPIC),
            de.DeleteShareGroupOffsetsRequestTopic(topic_name="diff-no-such-topic")]))


__all__ = ["add"]
