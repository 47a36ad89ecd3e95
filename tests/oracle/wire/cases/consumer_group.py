"""KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe, and what the other
group APIs say about a consumer group (DescribeGroups, ListGroups, OffsetCommit/OffsetFetch fenced
by member epochs).

Classic members joining a consumer group (the online-migration path) are another engineer's work
and are not sent here. Member ids are the client's own from ConsumerGroupHeartbeat v1 (KIP-1082)
and the broker's at v0; either way they are named by order of appearance when compared.
"""

from __future__ import annotations

from tests.oracle.wire.cases.offset import commit, fetch
from tests.oracle.wire.program import Program, Session
from tests.oracle.wire.setup import create_topics
from tidelog.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

HEARTBEAT = ConsumerGroupHeartbeatRequest.API_KEY
DESCRIBE = ConsumerGroupDescribeRequest.API_KEY
TOPIC = "diff-cg-topic"
REBALANCE_MS = 60_000


def heartbeat(group: str, member_id: str, epoch: int, *, topics: list[str] | None = None, regex: str | None = None,
              assignor: str | None = None, owned: list | None = None, instance: str | None = None,
              rebalance_ms: int = REBALANCE_MS) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance, rack_id=None,
        rebalance_timeout_ms=rebalance_ms, subscribed_topic_names=topics, subscribed_topic_regex=regex,
        server_assignor=assignor, topic_partitions=owned)


def _owned(session: Session, name: str) -> list:
    """The member's current assignment, as it reports it back (``topic_partitions``)."""
    assignment = session.vars.get(name)
    if assignment is None:
        return []
    return [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
            for tp in assignment.topic_partitions]


def add(program: Program) -> None:
    create_topics(program, "consumer-groups", {TOPIC: (4, {})})
    for v in program.versions(HEARTBEAT):
        _member_lifecycle(program, v)
    _describe(program)


def _member_lifecycle(program: Program, v: int) -> None:
    group = f"diff-cg-v{v}"
    first = f"diff-cg-member-a-v{v}" if v >= 1 else ""
    second = f"diff-cg-member-b-v{v}" if v >= 1 else ""

    def remember(prefix: str):
        def after(session: Session, response) -> None:
            if response.error_code == 0:
                session.vars[f"{prefix}-id"] = response.member_id
                session.vars[f"{prefix}-epoch"] = response.member_epoch
                if response.assignment is not None:
                    session.vars[f"{prefix}-assignment"] = response.assignment
        return after

    def beat(prefix: str, *, epoch_delta: int = 0, epoch: int | None = None, member: str | None = None, **options):
        def make(s: Session) -> ConsumerGroupHeartbeatRequest:
            return heartbeat(group, s.vars[f"{prefix}-id"] if member is None else member,
                             s.vars[f"{prefix}-epoch"] + epoch_delta if epoch is None else epoch,
                             owned=_owned(s, f"{prefix}-assignment"), **options)
        return make

    a, b = f"cga-v{v}", f"cgb-v{v}"
    program.request("join", v, heartbeat(group, first, 0, topics=[TOPIC], assignor="uniform", owned=[]),
                    after=remember(a))
    program.request("heartbeat", v, beat(a), api=HEARTBEAT, after=remember(a))
    program.request("second-member-joins", v, heartbeat(group, second, 0, topics=[TOPIC], owned=[]),
                    after=remember(b))
    program.request("first-member-after-second-joined", v, beat(a), api=HEARTBEAT, after=remember(a))
    program.request("second-member-heartbeat", v, beat(b), api=HEARTBEAT, after=remember(b))
    program.request("first-member-again", v, beat(a), api=HEARTBEAT, after=remember(a))
    program.request("fenced-epoch", v, beat(a, epoch_delta=5), api=HEARTBEAT)
    program.request("older-epoch", v, beat(a, epoch_delta=-1), api=HEARTBEAT)
    program.request("unknown-member", v, beat(a, member="diff-unknown-member", epoch=1), api=HEARTBEAT)
    program.request("rejoin-with-epoch-0", v, beat(a, epoch=0), api=HEARTBEAT)
    program.request("change-subscription", v, beat(b, topics=[TOPIC, "diff-meta-c"]), api=HEARTBEAT,
                    after=remember(b))
    program.request("unknown-assignor", v, heartbeat(f"{group}-x", f"{first}x" if first else "", 0, topics=[TOPIC],
                                                     assignor="bowling", owned=[]))
    program.request("range-assignor", v, heartbeat(f"{group}-range", f"{first}r" if first else "", 0, topics=[TOPIC],
                                                   assignor="range", owned=[]))
    program.request("empty-group-id", v, heartbeat("", first, 0, topics=[TOPIC], owned=[]))
    program.request("join-without-subscription", v, heartbeat(f"{group}-y", first, 0, owned=[]))
    program.request("join-without-rebalance-timeout", v, heartbeat(f"{group}-y", first, 0, topics=[TOPIC],
                                                                   owned=[], rebalance_ms=-1))
    program.request("join-without-owned-partitions", v, heartbeat(f"{group}-y", first, 0, topics=[TOPIC]))
    program.request("join-subscribed-to-unknown-topic", v, heartbeat(
        f"{group}-z", f"{first}z" if first else "", 0, topics=["diff-no-such-topic"], owned=[]))
    program.request("negative-epoch-join", v, heartbeat(f"{group}-n", first, -5, topics=[TOPIC], owned=[]))
    if v >= 1:
        program.request("empty-member-id", v, heartbeat(f"{group}-e", "", 0, topics=[TOPIC], owned=[]))
        program.request("regex-subscription", v, heartbeat(f"{group}-re", "diff-cg-re", 0, regex="diff-cg-t.*",
                                                           owned=[]))
        program.request("invalid-regex", v, heartbeat(f"{group}-bad-re", "diff-cg-bad-re", 0, regex="[", owned=[]))
        program.request("names-and-regex", v, heartbeat(f"{group}-both", "diff-cg-both", 0, topics=[TOPIC],
                                                        regex="diff-.*", owned=[]))
    program.request("static-member-joins", v, heartbeat(f"{group}-static", f"{first}s" if first else "", 0,
                                                        topics=[TOPIC], instance="diff-instance", owned=[]),
                    after=remember(f"cgs-v{v}"))
    program.request("static-member-leaves-temporarily", v, lambda s: heartbeat(
        f"{group}-static", s.vars[f"cgs-v{v}-id"], -2, instance="diff-instance"), api=HEARTBEAT)
    # What the other APIs say about this consumer group.
    program.request(f"describe-consumer-group-v{v}", program.top(DescribeGroupsRequest.API_KEY),
                    DescribeGroupsRequest(groups=[group]))
    commit_v = program.top(OffsetCommitRequest.API_KEY)
    program.request(f"commit-as-member-v{v}", commit_v, lambda s: commit(
        group, {0: 3}, topic=TOPIC, generation=s.vars[f"{a}-epoch"], member=s.vars[f"{a}-id"]),
        api=OffsetCommitRequest.API_KEY)
    program.request(f"commit-stale-epoch-v{v}", commit_v, lambda s: commit(
        group, {0: 4}, topic=TOPIC, generation=s.vars[f"{a}-epoch"] - 1, member=s.vars[f"{a}-id"]),
        api=OffsetCommitRequest.API_KEY)
    program.request(f"commit-future-epoch-v{v}", commit_v, lambda s: commit(
        group, {0: 4}, topic=TOPIC, generation=s.vars[f"{a}-epoch"] + 3, member=s.vars[f"{a}-id"]),
        api=OffsetCommitRequest.API_KEY)
    program.request(f"commit-unknown-member-v{v}", commit_v, commit(group, {0: 4}, topic=TOPIC, generation=1,
                                                                    member="diff-unknown-member"))
    program.request(f"commit-without-member-v{v}", commit_v, commit(group, {0: 4}, topic=TOPIC))
    fetch_v = program.top(OffsetFetchRequest.API_KEY)
    program.request(f"fetch-as-member-v{v}", fetch_v, lambda s: fetch(
        group, {TOPIC: [0, 1]}, version=fetch_v, member_id=s.vars[f"{a}-id"], member_epoch=s.vars[f"{a}-epoch"]),
        api=OffsetFetchRequest.API_KEY)
    program.request(f"fetch-stale-epoch-v{v}", fetch_v, lambda s: fetch(
        group, {TOPIC: [0]}, version=fetch_v, member_id=s.vars[f"{a}-id"], member_epoch=s.vars[f"{a}-epoch"] - 1),
        api=OffsetFetchRequest.API_KEY)
    program.request(f"fetch-unknown-member-v{v}", fetch_v, fetch(
        group, {TOPIC: [0]}, version=fetch_v, member_id="diff-unknown-member", member_epoch=1))
    program.request(f"fetch-without-member-v{v}", fetch_v, fetch(group, {TOPIC: [0]}, version=fetch_v))
    # Keep one group with members for ConsumerGroupDescribe; the others leave.
    if v != program.top(HEARTBEAT):
        program.request("leave", v, beat(a, epoch=-1), api=HEARTBEAT)
        program.request("leave-again", v, beat(a, epoch=-1), api=HEARTBEAT)
        program.request("second-member-leaves", v, beat(b, epoch=-1), api=HEARTBEAT)


def _describe(program: Program) -> None:
    group = f"diff-cg-v{program.top(HEARTBEAT)}"
    for v in program.versions(DESCRIBE):
        cases = {
            "with-members": [group], "unknown": ["diff-no-such-group"], "classic-group": ["diff-describe-empty"],
            "empty-group-id": [""], "several": [group, "diff-no-such-group"], "none": [],
            "emptied": [f"diff-cg-v{program.versions(HEARTBEAT)[0]}"],
        }
        for case, groups in cases.items():
            program.request(case, v, ConsumerGroupDescribeRequest(group_ids=groups))
        program.request("authorized-operations", v, ConsumerGroupDescribeRequest(
            group_ids=[group], include_authorized_operations=True))
    list_v = program.top(ListGroupsRequest.API_KEY)
    program.request("list-consumer-groups", list_v, ListGroupsRequest(types_filter=["consumer"]))
    program.request("list-all-groups", list_v, ListGroupsRequest())


__all__ = ["add", "heartbeat"]
