"""Classic and consumer-protocol members in one group, and the online upgrade and downgrade, against
Apache Kafka and Tidelog: the same sequence of requests (sent on the wire, in the versions real
clients use) to each broker, and what each answer says compared step by step.

The sequence: a consumer-protocol member (ConsumerGroupHeartbeat v1) takes every partition; a classic
member (JoinGroup v5, librdkafka's subscription v3) joins the consumer group, syncs, heartbeats, is
told to rejoin once the first member has released its half, and collects it; requests that must fail
do; the consumer-protocol member leaves, which downgrades the group to a classic one that rebalances
with the classic member as its leader; a new consumer-protocol member upgrades it again; the classic
member leaves. Member ids and topic ids differ between runs; the outcomes compared are error codes,
epochs and generations, protocol names, group types and states, and partition counts. ~35 s on 2
cores (Kafka starts in ~8 s).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.oracle.fixtures import SHARED_OVERRIDES
from tidelog.coordinator.group.classic.consumer_protocol import (
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from tidelog.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("oracle_group_migration")]

GROUP, TOPIC, PARTITIONS = "migration", "migration-t", 4
RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


#: Kafka 4.2+ computes target assignments on a background thread, at most once per
#: group.consumer.assignment.interval.ms (1 s by default); Tidelog computes them in the request that
#: moves the group epoch, as Kafka 4.0/4.1 did. Kafka's settings for that behaviour make the answers
#: comparable step by step (Tidelog ignores the two Kafka-only properties, with a log line).
SYNCHRONOUS_ASSIGNMENT = {"group.consumer.assignor.offload.enable": "false", "group.consumer.assignment.interval.ms": "0",
                          "group.consumer.min.assignment.interval.ms": "0"}


@pytest.fixture(scope="module")
def broker_overrides() -> dict[str, str]:
    return {**SHARED_OVERRIDES, **SYNCHRONOUS_ASSIGNMENT, "offsets.topic.num.partitions": "1"}


class Session:
    """One broker: a connection, the topic's id, and the members' ids and epochs as the answers give them."""

    def __init__(self, bootstrap: str) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
        self.client = WireClient.connect(bootstrap, timeout=60)
        self.topic_id = self._topic_id()
        self._until(lambda: self.client.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 4)
                    .coordinators[0], "the group coordinator")
        # A fresh Kafka loads __consumer_offsets after creating it: wait until a read of another group
        # (same partition) answers, so that no group request of the sequence meets a loading coordinator.
        self._until(lambda: self.client.request(OffsetFetchRequest(groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id="probe", topics=None)]), 8).groups[0],
            "a loaded group coordinator")

    def _topic_id(self) -> uuid.UUID:
        def lookup() -> Any:
            r = self.client.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)]), 12)
            return r.topics[0] if r.topics[0].partitions else None
        return self._until(lookup, "the topic's metadata").topic_id

    @staticmethod
    def _until(call: Callable[[], Any], what: str, timeout: float = 60) -> Any:
        """``call()`` until its answer is there and carries no retriable coordinator error."""
        deadline = time.monotonic() + timeout
        while True:
            answer = call()
            if answer is not None and getattr(answer, "error_code", 0) not in RETRIABLE:
                return answer
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} after {timeout} s: {answer}")
            time.sleep(0.2)

    # -- the consumer protocol ---------------------------------------------------------------------------

    def heartbeat(self, member_id: str, epoch: int, owned: list[int] | None = None) -> Any:
        joining = epoch == 0
        request = ConsumerGroupHeartbeatRequest(
            group_id=GROUP, member_id=member_id, member_epoch=epoch,
            rebalance_timeout_ms=30_000 if joining else -1, subscribed_topic_names=[TOPIC] if joining else None,
            topic_partitions=[] if joining else None if owned is None else [
                ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=self.topic_id, partitions=owned)])
        return self._until(lambda: self.client.request(request, 1), "a heartbeat answer")

    @staticmethod
    def partitions(response: Any) -> list[int] | None:
        if response.assignment is None:
            return None
        return sorted(p for tp in response.assignment.topic_partitions for p in tp.partitions)

    # -- the classic protocol ------------------------------------------------------------------------------

    def join(self, member_id: str, protocols: tuple[str, ...] = ("range", "roundrobin")) -> Any:
        metadata = encode_subscription([TOPIC], b"", version=3)
        return self.client.request(JoinGroupRequest(
            group_id=GROUP, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=metadata) for n in protocols]), 5)

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None) -> Any:
        return self.client.request(SyncGroupRequest(
            group_id=GROUP, generation_id=generation, member_id=member_id, protocol_type="consumer",
            protocol_name="range", assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                                                for m, a in (assignments or {}).items()]), 5)

    def classic_heartbeat(self, member_id: str, generation: int) -> int:
        return self.client.request(HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id=member_id), 4
                                   ).error_code

    def commit(self, member_id: str, generation: int) -> int:
        r = self.client.request(OffsetCommitRequest(
            group_id=GROUP, generation_id_or_member_epoch=generation, member_id=member_id, topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]), 8)
        return r.topics[0].partitions[0].error_code

    # -- the group as the admin APIs show it ---------------------------------------------------------------

    def listed(self) -> tuple[str, str, str] | None:
        r = self.client.request(ListGroupsRequest(), 5)
        return next(((g.group_type, g.group_state, g.protocol_type) for g in r.groups if g.group_id == GROUP), None)

    def described(self) -> Any:
        return self.client.request(ConsumerGroupDescribeRequest(group_ids=[GROUP]), 1).groups[0]

    def classic_described(self) -> Any:
        return self.client.request(DescribeGroupsRequest(groups=[GROUP]), 5).groups[0]


def run(bootstrap: str) -> dict[str, Any]:
    """The sequence on one broker; step name -> outcome."""
    s = Session(bootstrap)
    out: dict[str, Any] = {}
    m1 = str(uuid.uuid4())
    r = s.heartbeat(m1, 0)
    # Epochs and generations are compared relative to the group's first epoch: Kafka 4.4 starts a new
    # consumer group at epoch 2, Tidelog at 1 (see test_a_new_consumer_group_starts_at_kafkas_epoch).
    e0 = r.member_epoch
    out["first-epoch"] = e0
    out["consumer-member-joins"] = (r.error_code, s.partitions(r))

    first = s.join("")
    out["classic-join-without-id"] = (first.error_code, bool(first.member_id))
    c = first.member_id
    j = s.join(c)
    out["classic-join"] = (j.error_code, j.generation_id - e0, j.protocol_type, j.protocol_name, j.leader, len(j.members),
                           j.skip_assignment)
    generation = j.generation_id
    sy = s.sync(c, generation)
    out["classic-sync-waits-for-released-partitions"] = (sy.error_code, sy.protocol_type, sy.protocol_name,
                                                         decode_assignment(sy.assignment))
    out["classic-heartbeat-while-waiting"] = s.classic_heartbeat(c, generation)
    out["group-after-classic-join"] = s.listed()

    # The consumer-protocol member revokes what the classic member gets, then says it has.
    epoch = e0
    r = s.heartbeat(m1, epoch)
    keep = s.partitions(r)
    out["consumer-member-told-to-revoke"] = (r.error_code, r.member_epoch - epoch, len(keep or []))
    r = s.heartbeat(m1, r.member_epoch, owned=keep)
    out["consumer-member-revoked"] = (r.error_code, r.member_epoch - epoch)
    m1_epoch = r.member_epoch
    out["classic-heartbeat-after-release"] = s.classic_heartbeat(c, generation)
    j = s.join(c)
    out["classic-rejoin"] = (j.error_code, j.generation_id - e0, j.leader, len(j.members))
    sy = s.sync(c, j.generation_id)
    out["classic-sync-collects"] = (sy.error_code, len(decode_assignment(sy.assignment).get(TOPIC, [])))
    generation = j.generation_id
    d = s.described()
    out["consumer-group-described"] = (d.error_code, d.group_state, d.group_epoch - e0, d.assignment_epoch - e0,
                                       sorted(m.member_type for m in d.members))
    out["classic-describe-of-consumer-group"] = s.classic_described().error_code

    out["classic-sync-wrong-generation"] = s.sync(c, generation + 5).error_code
    out["classic-heartbeat-of-consumer-member"] = s.classic_heartbeat(m1, m1_epoch)
    out["classic-join-without-a-common-protocol"] = s.join("", protocols=("roundrobin",)).error_code
    out["classic-commit"] = s.commit(c, generation)
    out["classic-commit-wrong-generation"] = s.commit(c, generation + 5)

    # Downgrade: the last consumer-protocol member leaves.
    r = s.heartbeat(m1, -1)
    out["consumer-member-leaves"] = (r.error_code, r.member_epoch)
    out["group-after-downgrade"] = s.listed()
    g = s.classic_described()
    out["downgraded-group-described"] = (g.error_code, g.group_state, g.protocol_type, len(g.members))
    out["classic-heartbeat-after-downgrade"] = s.classic_heartbeat(c, generation)
    j = s.join(c)
    out["classic-rejoin-after-downgrade"] = (j.error_code, j.generation_id - generation, j.leader == c,
                                             len(j.members), j.protocol_name)
    sy = s.sync(c, j.generation_id, {c: encode_assignment({TOPIC: list(range(PARTITIONS))})})
    out["classic-leader-sync"] = (sy.error_code, decode_assignment(sy.assignment))
    out["group-after-classic-rebalance"] = s.listed()
    generation = j.generation_id

    # Upgrade: a consumer-protocol member joins the classic group.
    m2 = str(uuid.uuid4())
    r = s.heartbeat(m2, 0)
    out["consumer-member-upgrades"] = (r.error_code, r.member_epoch - generation, s.partitions(r))
    m2_epoch = r.member_epoch
    out["group-after-upgrade"] = s.listed()
    d = s.described()
    out["upgraded-group-described"] = (d.group_state, d.group_epoch - generation, d.assignment_epoch - generation,
                                       sorted((m.member_type, m.member_epoch - generation) for m in d.members))
    out["classic-heartbeat-after-upgrade"] = s.classic_heartbeat(c, generation)
    leave = s.client.request(LeaveGroupRequest(group_id=GROUP, members=[
        LeaveGroupRequest.MemberIdentity(member_id=c), LeaveGroupRequest.MemberIdentity(member_id=m2),
        LeaveGroupRequest.MemberIdentity(member_id="nobody")]), 5)
    out["classic-leave"] = (leave.error_code, [m.error_code for m in leave.members])
    r = s.heartbeat(m2, m2_epoch)
    out["consumer-member-after-classic-leave"] = (r.error_code, r.member_epoch - generation if not r.error_code
                                                  else None, s.partitions(r))
    out["group-at-the-end"] = s.listed()
    s.client.close()
    return out


@pytest.fixture(scope="module")
def outcomes(java_classpath, kafka_broker, tidelog_broker) -> dict[str, dict[str, Any]]:
    return {"kafka": run(kafka_broker.bootstrap), "tidelog": run(tidelog_broker.bootstrap)}


STEPS = [
    "first-epoch", "consumer-member-joins", "classic-join-without-id", "classic-join", "classic-sync-waits-for-released-partitions",
    "classic-heartbeat-while-waiting", "group-after-classic-join", "consumer-member-told-to-revoke",
    "consumer-member-revoked", "classic-heartbeat-after-release", "classic-rejoin", "classic-sync-collects",
    "consumer-group-described", "classic-describe-of-consumer-group", "classic-sync-wrong-generation",
    "classic-heartbeat-of-consumer-member", "classic-join-without-a-common-protocol", "classic-commit",
    "classic-commit-wrong-generation", "consumer-member-leaves", "group-after-downgrade",
    "downgraded-group-described", "classic-heartbeat-after-downgrade", "classic-rejoin-after-downgrade",
    "classic-leader-sync", "group-after-classic-rebalance", "consumer-member-upgrades", "group-after-upgrade",
    "upgraded-group-described", "classic-heartbeat-after-upgrade", "classic-leave",
    "consumer-member-after-classic-leave", "group-at-the-end",
]


def test_both_brokers_ran_every_step(outcomes) -> None:
    assert list(outcomes["kafka"]) == list(outcomes["tidelog"]) == STEPS


@pytest.mark.parametrize("step", [s for s in STEPS if s != "first-epoch"])
def test_step_matches_kafka(outcomes, step: str) -> None:
    assert outcomes["tidelog"][step] == outcomes["kafka"][step]


@pytest.mark.xfail(strict=True, reason="Kafka 4.4 answers a consumer group's first member with member epoch 2, Tidelog with 1 (KIP-848 "
            "group creation, not the migration; epochs are compared relative to the first one above)")
def test_a_new_consumer_group_starts_at_kafkas_epoch(outcomes) -> None:
    assert outcomes["tidelog"]["first-epoch"] == outcomes["kafka"]["first-epoch"]
