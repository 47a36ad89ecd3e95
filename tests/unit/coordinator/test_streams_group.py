"""The streams group type (KIP-1071) driven through the real coordinator runtime on a real
``__consumer_offsets`` log, without sockets: records and their round trip, topology configuration
(internal topics, partition counts, copartitioning), the sticky task assignor, the heartbeat state machine
(join, revocation before a task moves, leave, static membership, fencing by session timeout), offset commit
checks, and the state rebuilt by replay equal to the live state."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.coordinator.conftest import image_with
from tidelog.cluster.group_config import validate_group_configs
from tidelog.config import BrokerConfig, TopicConfig
from tidelog.coordinator.group import GroupConfig, GroupCoordinator
from tidelog.coordinator.group.group import RequestInfo
from tidelog.coordinator.group.modern.streams.assignor import MemberSpec, sticky_assign
from tidelog.coordinator.group.modern.streams.describe import describe_group
from tidelog.coordinator.group.modern.streams.group import (
    StreamsGroup,
    StreamsGroupMember,
    StreamsMemberState,
)
from tidelog.coordinator.group.modern.streams.group_type import StreamsGroupType
from tidelog.coordinator.group.modern.streams.manager import StreamsGroupCoordinator, topology_value
from tidelog.coordinator.group.modern.streams.reconciliation import reconcile
from tidelog.coordinator.group.modern.streams.records import (
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyKey,
)
from tidelog.coordinator.group.modern.streams.tasks import TasksTuple, tasks_of
from tidelog.coordinator.group.modern.streams.topology import (
    ASSIGNMENT_DELAYED,
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    configure,
)
from tidelog.coordinator.group.offsets import PartitionCommit
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.group.serde import deserialize, serialize
from tidelog.coordinator.runtime import LogWriter
from tidelog.errors import ConfigError, ErrorCode, KafkaError
from tidelog.protocol.messages import StreamsGroupHeartbeatRequest
from tidelog.storage.loader import load_log
from tidelog.testing import ManualClock

GROUP = "app"
Q = StreamsGroupHeartbeatRequest
REPARTITION = "app-count-repartition"
CHANGELOG = "app-count-changelog"


def word_count(epoch: int = 0, repartition_partitions: int = 0):
    """Kafka Streams' word count: input -> (re-key) -> repartition -> count (a store with a changelog)."""
    return Q.Topology(epoch=epoch, subtopologies=[
        Q.Subtopology(subtopology_id="0", source_topics=["input"], repartition_sink_topics=[REPARTITION]),
        Q.Subtopology(subtopology_id="1", source_topics=[REPARTITION],
                      repartition_source_topics=[Q.TopicInfo(name=REPARTITION, partitions=repartition_partitions)],
                      state_changelog_topics=[Q.TopicInfo(name=CHANGELOG,
                                                          topic_configs=[Q.KeyValue(key="cleanup.policy",
                                                                                    value="compact")])]),
    ])


class Harness:
    def __init__(self, tmp_path: Path, **values) -> None:
        self.clock = ManualClock()
        self.image = image_with(input=4)
        self.plog = load_log(tmp_path / "__consumer_offsets-0", "__consumer_offsets", 0,
                             TopicConfig.from_dict({"cleanup.policy": "compact"}), self.clock)
        self.writer = LogWriter(lambda p: self.plog)
        self.config = GroupConfig(offsets_topic_num_partitions=1, values={
            "group.streams.initial.rebalance.delay.ms": 0, "group.streams.assignment.interval.ms": 0, **values})
        self.coordinator = self._new()

    def _new(self) -> GroupCoordinator:
        return GroupCoordinator(self.config, self.clock, self.writer, num_partitions=1,
                                group_types=[StreamsGroupType], image_source=lambda: self.image)

    @property
    def sg(self) -> StreamsGroupCoordinator:
        streams = self.coordinator.types["streams"]
        assert isinstance(streams, StreamsGroupType)
        return streams.manager

    def join(self, member_id: str, process: str | None = None, **fields):
        fields.setdefault("topology", word_count())
        return self.heartbeat(member_id, 0, process_id=process or member_id, rebalance_timeout_ms=30_000, **fields)

    def heartbeat(self, member_id: str, epoch: int, **fields):
        request = Q(group_id=fields.pop("group_id", GROUP), member_id=member_id, member_epoch=epoch, **fields)
        outcome = self.coordinator.runtime.apply(0, lambda: self.sg.heartbeat(
            request, api_version=1, image=self.image, client_id="client", client_host="/127.0.0.1"))
        self.last_to_create = outcome.to_create
        return outcome.response

    def group(self) -> StreamsGroup:
        group = self.sg.group(GROUP)
        assert group is not None
        return group

    def reloaded(self) -> StreamsGroupCoordinator:
        coordinator = self._new()
        coordinator.load([0])
        streams = coordinator.types["streams"]
        assert isinstance(streams, StreamsGroupType)
        return streams.manager

    def create_internal_topics(self) -> None:
        topics = {name: len(t.partitions) for name, t in self.image.topics.items()}
        topics.update({t.name: t.partitions for t in self.last_to_create})
        self.image = image_with(**topics)


def active(response) -> dict[str, frozenset[int]]:
    assert response.active_tasks is not None
    return tasks_of(response.active_tasks)


def owned(tasks: dict[str, frozenset[int]]) -> list:
    return [Q.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items())]


def snapshot(group: StreamsGroup) -> tuple:
    return (group.group_epoch, group.metadata_hash, group.assignment_epoch, dict(group.members),
            dict(group.target_assignment), group.topology, group.validated_topology_epoch)


def _tasks_value(cls, **tasks):
    return [cls.TaskIds(subtopology_id=s, partitions=ps) for s, ps in tasks.items()]


CA = StreamsGroupCurrentMemberAssignmentValue
TA = StreamsGroupTargetAssignmentMemberValue
MM = StreamsGroupMemberMetadataValue


@pytest.mark.parametrize("record", [
    CoordinatorRecord(StreamsGroupMetadataKey(GROUP), StreamsGroupMetadataValue(epoch=3, metadata_hash=-42,
                                                                                validated_topology_epoch=0)),
    CoordinatorRecord(StreamsGroupMemberMetadataKey(GROUP, "m"), MM(
        instance_id=None, rack_id="r", client_id="c", client_host="/h", rebalance_timeout_ms=300, topology_epoch=0,
        process_id="p", user_endpoint=MM.Endpoint(host="h", port=8080), client_tags=[MM.KeyValue(key="k", value="v")])),
    CoordinatorRecord(StreamsGroupTargetAssignmentMetadataKey(GROUP),
                      StreamsGroupTargetAssignmentMetadataValue(assignment_epoch=3, assignment_timestamp=17)),
    CoordinatorRecord(StreamsGroupTargetAssignmentMemberKey(GROUP, "m"), TA(active_tasks=[TA.TaskIds(
        subtopology_id="0", partitions=[0, 2])])),
    CoordinatorRecord(StreamsGroupCurrentMemberAssignmentKey(GROUP, "m"), CA(
        member_epoch=3, previous_member_epoch=2, state=1, active_tasks=[CA.TaskIds(subtopology_id="1", partitions=[1],
                                                                                 assignment_epochs=None)])),
    CoordinatorRecord(StreamsGroupCurrentMemberAssignmentKey(GROUP, "m"), CA(
        member_epoch=3, previous_member_epoch=2, state=2,
        active_tasks=[CA.TaskIds(subtopology_id="1", partitions=[1, 3], assignment_epochs=[1, 3])],
        active_tasks_pending_revocation=[CA.TaskIds(subtopology_id="0", partitions=[2], assignment_epochs=[2])])),
    CoordinatorRecord(StreamsGroupTopologyKey(GROUP), topology_value(word_count())),
    CoordinatorRecord(StreamsGroupMemberMetadataKey(GROUP, "m")),
])
def test_records_round_trip_with_kafka_record_types(record: CoordinatorRecord) -> None:
    key, value = serialize(record)
    assert int.from_bytes(key[:2], "big") == type(record.key).RECORD_TYPE
    assert 17 <= type(record.key).RECORD_TYPE <= 23
    assert deserialize(key, value) == record


# ------------------------------------------------------------------------------ topology configuration


def test_word_count_topology_is_configured_from_its_source_topic() -> None:
    t = topology_value(word_count())
    missing = configure(t, image_with(input=4))
    assert [c for c, _ in missing.statuses] == [MISSING_INTERNAL_TOPICS]
    assert {(x.name, x.partitions) for x in missing.to_create} == {(REPARTITION, 4), (CHANGELOG, 4)}
    assert dict(next(x for x in missing.to_create if x.name == CHANGELOG).configs) == {"cleanup.policy": "compact"}
    assert missing.task_counts == {}
    ready = configure(t, image_with(input=4, **{REPARTITION: 4, CHANGELOG: 4}))
    assert ready.ready and ready.task_counts == {"0": 4, "1": 4} and ready.to_create == ()
    # a fixed repartition partition count wins; the changelog follows its subtopology's tasks
    fixed = configure(topology_value(word_count(repartition_partitions=2)), image_with(input=4))
    assert {(x.name, x.partitions) for x in fixed.to_create} == {(REPARTITION, 2), (CHANGELOG, 2)}


def test_missing_source_and_wrongly_partitioned_topics() -> None:
    t = topology_value(word_count())
    gone = configure(t, image_with())
    assert [c for c, _ in gone.statuses] == [MISSING_SOURCE_TOPICS] and "input" in gone.statuses[0][1]
    wrong = configure(t, image_with(input=4, **{REPARTITION: 4, CHANGELOG: 3}))
    assert [c for c, _ in wrong.statuses] == [INCORRECTLY_PARTITIONED_TOPICS] and CHANGELOG in wrong.statuses[0][1]


def test_copartitioned_join_sources_must_match() -> None:
    join = Q.Topology(epoch=0, subtopologies=[Q.Subtopology(
        subtopology_id="0", source_topics=["left", "right"],
        copartition_groups=[Q.CopartitionGroup(source_topics=[0, 1])])])
    assert configure(topology_value(join), image_with(left=3, right=3)).task_counts == {"0": 3}
    bad = configure(topology_value(join), image_with(left=3, right=2))
    assert [c for c, _ in bad.statuses] == [INCORRECTLY_PARTITIONED_TOPICS]


# ------------------------------------------------------------------------------------------ the assignor


def _all_active(out: dict[str, TasksTuple]) -> list[tuple[str, int]]:
    return sorted((s, p) for t in out.values() for s, ps in t.active.items() for p in ps)


def test_sticky_assignor_balances_keeps_tasks_and_places_standbys_on_other_processes() -> None:
    counts = {"0": 4, "1": 4}
    every = sorted((s, p) for s in counts for p in range(4))
    one = sticky_assign({"a": MemberSpec("p1")}, counts)
    assert _all_active(one) == every
    two = sticky_assign({"a": MemberSpec("p1", one["a"]), "b": MemberSpec("p2")}, counts)
    assert _all_active(two) == every
    assert sum(len(ps) for ps in two["a"].active.values()) == 4 == sum(len(ps) for ps in two["b"].active.values())
    # sticky: a keeps only tasks it had
    assert all(p in one["a"].active[s] for s, ps in two["a"].active.items() for p in ps)
    # b goes away and comes back: a gives nothing up beyond its share, b's previous tasks return to b
    again = sticky_assign({"a": MemberSpec("p1", two["a"]), "b": MemberSpec("p2", two["b"])}, counts)
    assert again == two
    # standbys: one per task, never on the process holding it as active
    standby = sticky_assign({"a": MemberSpec("p1", two["a"]), "b": MemberSpec("p2", two["b"])}, counts, 1)
    for mid, other in (("a", "b"), ("b", "a")):
        assert standby[mid].standby == standby[other].active
    # only one process: no standby can be placed
    alone = sticky_assign({"a": MemberSpec("p1"), "a2": MemberSpec("p1")}, counts, 1)
    assert all(not t.standby for t in alone.values()) and _all_active(alone) == every


# ------------------------------------------------------------------------------ the heartbeat state machine


def test_join_creates_internal_topics_then_assigns_then_rebalances(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    first = h.join("a")
    assert (first.member_id, first.member_epoch) == ("a", 1)
    assert [s.status_code for s in first.status] == [MISSING_INTERNAL_TOPICS]
    assert {t.name for t in h.last_to_create} == {REPARTITION, CHANGELOG}
    assert active(first) == {} and h.group().state_name() == "NotReady"
    h.create_internal_topics()
    r = h.heartbeat("a", 1)
    assert r.status == [] and r.member_epoch == 2
    assert active(r) == {"0": frozenset(range(4)), "1": frozenset(range(4))}
    assert h.group().state_name() == "Stable"

    # b joins: a must give tasks up first (revocation), b gets them only once a released them
    b = h.join("b")
    assert b.member_epoch == 3 and active(b) == {}
    assert h.group().members["b"].state == StreamsMemberState.UNRELEASED_TASKS
    r = h.heartbeat("a", 2)
    assert r.member_epoch == 2 and h.group().members["a"].state == StreamsMemberState.UNREVOKED_TASKS
    kept = active(r)
    assert sum(len(ps) for ps in kept.values()) == 4
    assert h.group().state_name() == "Reconciling"
    r = h.heartbeat("a", 2, active_tasks=owned(kept), standby_tasks=[], warmup_tasks=[])
    assert r.member_epoch == 3 and r.active_tasks is None  # unchanged tasks are not sent again
    b = h.heartbeat("b", 3)
    assert sum(len(ps) for ps in active(b).values()) == 4
    assert not any(active(b).get(s, frozenset()) & ps for s, ps in kept.items())
    assert h.group().state_name() == "Stable"
    assert snapshot(h.reloaded().group(GROUP)) == snapshot(h.group())

    # a leaves: b gets everything (nothing to revoke from anyone)
    assert h.heartbeat("a", -1).member_epoch == -1
    b = h.heartbeat("b", 3, active_tasks=owned(active(b)), standby_tasks=[], warmup_tasks=[])
    assert b.member_epoch == 4 and active(b) == {"0": frozenset(range(4)), "1": frozenset(range(4))}


def test_session_timeout_fences_a_member(tmp_path: Path) -> None:
    h = Harness(tmp_path, **{"group.streams.session.timeout.ms": 10_000})
    h.image = image_with(input=2, **{REPARTITION: 2, CHANGELOG: 2})
    h.join("a")
    h.join("b")
    h.clock.advance(6_000)
    r = h.heartbeat("a", h.group().members["a"].member_epoch)  # told to give half its tasks to b
    assert h.group().members["a"].state == StreamsMemberState.UNREVOKED_TASKS
    kept = active(r)
    h.clock.advance(6_000)  # b is silent for 12 s
    h.coordinator.poll()
    assert set(h.group().members) == {"a"}
    r = h.heartbeat("a", r.member_epoch, active_tasks=owned(kept), standby_tasks=[], warmup_tasks=[])
    assert active(r) == {"0": frozenset({0, 1}), "1": frozenset({0, 1})}
    assert h.group().members["a"].state == StreamsMemberState.STABLE


def test_static_member_leaves_for_now_and_its_successor_takes_its_tasks(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.image = image_with(input=2, **{REPARTITION: 2, CHANGELOG: 2})
    r = h.join("a", instance_id="i1")
    tasks = active(r)
    assert tasks
    with pytest.raises(KafkaError) as e:
        h.join("a2", instance_id="i1")
    assert e.value.code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert h.heartbeat("a", -2, instance_id="i1").member_epoch == -2
    assert set(h.group().members) == {"a"}  # still there, keeping its tasks
    epoch = h.group().group_epoch
    r = h.join("a2", process="a", instance_id="i1")
    assert active(r) == tasks and set(h.group().members) == {"a2"}
    assert h.group().group_epoch == epoch  # a static member's return is no rebalance


def test_bad_heartbeats(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    for member, epoch, fields, code in [
        ("", 0, {"topology": word_count(), "process_id": "p", "rebalance_timeout_ms": 1}, ErrorCode.INVALID_REQUEST),
        ("a", 0, {"process_id": "p", "rebalance_timeout_ms": 1}, ErrorCode.INVALID_REQUEST),  # no topology
        ("a", 0, {"topology": word_count(), "process_id": "p"}, ErrorCode.INVALID_REQUEST),  # no rebalance timeout
        ("a", 1, {"topology": word_count()}, ErrorCode.INVALID_REQUEST),  # a topology only when joining
        ("a", 1, {"active_tasks": []}, ErrorCode.INVALID_REQUEST),  # some task kinds but not all
        ("a", -3, {}, ErrorCode.INVALID_REQUEST),
        ("a", -2, {}, ErrorCode.INVALID_REQUEST),  # -2 without an instance id
        ("a", 1, {}, ErrorCode.GROUP_ID_NOT_FOUND),
        ("a", -1, {}, ErrorCode.GROUP_ID_NOT_FOUND),
    ]:
        with pytest.raises(KafkaError) as e:
            h.heartbeat(member, epoch, **fields)
        assert e.value.code == code, (member, epoch, fields)
    bad = Q.Topology(epoch=0, subtopologies=[Q.Subtopology(subtopology_id="0", source_topics=["x"]),
                                             Q.Subtopology(subtopology_id="0", source_topics=["y"])])
    with pytest.raises(KafkaError) as e:
        h.join("a", topology=bad)
    assert e.value.code == ErrorCode.STREAMS_INVALID_TOPOLOGY
    regex = Q.Topology(epoch=0, subtopologies=[Q.Subtopology(subtopology_id="0", source_topic_regex=["in.*"])])
    with pytest.raises(KafkaError) as e:
        h.join("a", topology=regex)
    assert (e.value.code, e.value.message) == (ErrorCode.INVALID_REQUEST,
                                               "Regular expressions for source topics are not supported yet.")
    sized = Q.Topology(epoch=0, subtopologies=[Q.Subtopology(subtopology_id="0", source_topics=["input"],
                                                             state_changelog_topics=[Q.TopicInfo(name="c",
                                                                                                 partitions=3)])])
    with pytest.raises(KafkaError) as e:
        h.join("a", topology=sized)
    assert e.value.code == ErrorCode.STREAMS_INVALID_TOPOLOGY
    r = h.join("a")
    with pytest.raises(KafkaError) as e:
        h.heartbeat("a", r.member_epoch + 5)
    assert e.value.code == ErrorCode.FENCED_MEMBER_EPOCH
    with pytest.raises(KafkaError) as e:
        h.heartbeat("zz", 1)
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID


def test_offset_commit_checks_the_member_epoch_and_describe(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.image = image_with(input=2, **{REPARTITION: 2, CHANGELOG: 2})
    r = h.join("a")
    group = h.group()
    assert group.validate_offset_commit("a", None, r.member_epoch, 9) is None  # its epoch: any partition
    for member, epoch, version, code in [("a", r.member_epoch + 1, 9, ErrorCode.STALE_MEMBER_EPOCH),
                                         ("zz", r.member_epoch, 9, ErrorCode.UNKNOWN_MEMBER_ID),
                                         ("a", r.member_epoch, 8, ErrorCode.UNSUPPORTED_VERSION)]:
        with pytest.raises(KafkaError) as e:
            group.validate_offset_commit(member, None, epoch, version)
        assert e.value.code == code
    described = describe_group(group, h.image)
    assert described.group_state == "Stable" and described.group_epoch == r.member_epoch
    assert [m.member_id for m in described.members] == ["a"] and described.assignor_name == "sticky"
    assert described.topology.epoch == 0 and [s.subtopology_id for s in described.topology.subtopologies] == ["0", "1"]
    assert group.listed_group().group_type == "streams" and group.listed_group().protocol_type == "streams"
    with pytest.raises(KafkaError) as e:
        group.validate_delete()
    assert e.value.code == ErrorCode.NON_EMPTY_GROUP


def test_initial_rebalance_delay_holds_the_first_assignment(tmp_path: Path) -> None:
    h = Harness(tmp_path, **{"group.streams.initial.rebalance.delay.ms": 3000})
    h.image = image_with(input=2, **{REPARTITION: 2, CHANGELOG: 2})
    r = h.join("a")
    assert [s.status_code for s in r.status] == [ASSIGNMENT_DELAYED] and r.active_tasks is None
    assert r.member_epoch == 0  # no assignment yet: the member stays joining (it sends its topology again)
    h.clock.advance(1000)
    assert [s.status_code for s in h.join("a").status] == [ASSIGNMENT_DELAYED]
    h.clock.advance(2001)
    r = h.join("a")
    assert r.status == [] and r.member_epoch == 1
    assert active(r) == {"0": frozenset({0, 1}), "1": frozenset({0, 1})}


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_answers_encode_at_every_version(tmp_path: Path, version: int) -> None:
    h = Harness(tmp_path)
    request = Q(group_id=GROUP, member_id="a", member_epoch=0, topology=word_count(), process_id="p",
                rebalance_timeout_ms=1000)
    outcome = h.coordinator.runtime.apply(0, lambda: h.sg.heartbeat(request, api_version=version, image=h.image))
    response = outcome.response
    decoded = type(response).decode(response.encode(version), version)
    assert decoded.member_epoch == 1 and [s.status_code for s in decoded.status] == [MISSING_INTERNAL_TOPICS]
    assert (decoded.acceptable_recovery_lag_legacy if version == 0 else decoded.acceptable_recovery_lag) == 10_000


def test_an_empty_classic_group_gives_way_to_a_streams_member(tmp_path: Path) -> None:
    from tidelog.coordinator.group.classic.group import ClassicGroup

    h = Harness(tmp_path)
    h.coordinator.groups[GROUP] = ClassicGroup(GROUP, h.clock)  # a Streams app that ran with the classic protocol
    r = h.join("a")
    assert r.member_epoch == 1 and isinstance(h.coordinator.groups[GROUP], StreamsGroup)
    # a non-empty group of another type, or a heartbeat past joining, is refused
    h.coordinator.groups["other"] = ClassicGroup("other", h.clock)
    with pytest.raises(KafkaError) as e:
        h.heartbeat("b", 3, group_id="other")
    assert e.value.code == ErrorCode.GROUP_ID_NOT_FOUND


def test_standby_goes_to_the_process_that_reported_the_most_of_the_tasks_state() -> None:
    counts = {"1": 1}
    out = sticky_assign({"a": MemberSpec("p1", TasksTuple({"1": frozenset({0})})),
                         "b": MemberSpec("p2", task_offsets={("1", 0): 10}),
                         "c": MemberSpec("p3", task_offsets={("1", 0): 500})}, counts, 1)
    assert out["a"].active == {"1": frozenset({0})}
    assert out["c"].standby == {"1": frozenset({0})} and not out["b"].standby


def test_rack_aware_tags_spread_standbys_and_a_member_without_them_is_told(tmp_path: Path) -> None:
    counts = {"0": 1}
    specs = {"a": MemberSpec("p1", TasksTuple({"0": frozenset({0})}), client_tags={"zone": "z1"}),
             "b": MemberSpec("p2", client_tags={"zone": "z1"}),
             "c": MemberSpec("p3", client_tags={"zone": "z2"})}
    assert sticky_assign(specs, counts, 1)["b"].standby == {"0": frozenset({0})}  # no tags: least loaded, by id
    spread = sticky_assign(specs, counts, 1, ("zone",))
    assert spread["c"].standby == {"0": frozenset({0})} and not spread["b"].standby

    h = Harness(tmp_path, **{"group.streams.rack.aware.assignment.tags": "zone"})
    r = h.join("a", client_tags=[Q.KeyValue(key="rack", value="r1")])
    assert any(s.status_code == 6 and "zone" in s.status_detail for s in r.status)
    r = h.join("b", client_tags=[Q.KeyValue(key="zone", value="z1")])
    assert not any(s.status_code == 6 for s in r.status)


def test_the_first_topology_stays_the_groups(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.join("a")
    other = Q.Topology(epoch=0, subtopologies=[Q.Subtopology(subtopology_id="0", source_topics=["input"])])
    for topology in (other, word_count(epoch=1)):  # another topology, or the same one at a newer epoch
        with pytest.raises(KafkaError) as e:
            h.join("b", topology=topology)
        assert (e.value.code, e.value.message) == (ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet.")
    h.heartbeat("a", -1)  # even once the group is empty
    with pytest.raises(KafkaError):
        h.join("b", topology=other)
    assert h.group().topology == topology_value(word_count())


# ------------------------------------------------------------------- per-task assignment epochs


SOURCE = {"0": "input", "1": REPARTITION}  # each subtopology's source topic: a task's partition is its


def commit(h: Harness, member: str, epoch: int, *tasks: tuple[str, int]) -> dict:
    return h.coordinator.commit_offsets(RequestInfo(api_version=10), GROUP, member, None, epoch,
                                        [PartitionCommit(SOURCE.get(s, s), p, 7) for s, p in tasks])


def ok(*tasks: tuple[str, int]) -> dict:
    return {(SOURCE.get(s, s), p): ErrorCode.NONE for s, p in tasks}


def stale(h: Harness, member: str, epoch: int, *tasks: tuple[str, int]) -> str:
    with pytest.raises(KafkaError) as e:
        commit(h, member, epoch, *tasks)
    assert e.value.code == ErrorCode.STALE_MEMBER_EPOCH
    return e.value.message


def test_a_commit_at_an_older_epoch_is_checked_against_each_tasks_assignment_epoch(tmp_path: Path) -> None:
    """Kafka 4.4's StreamsGroup.validateOffsetCommit: an older epoch is accepted only for partitions of the
    member's active tasks assigned to it at that epoch or before, whatever its previous epoch is."""
    h = Harness(tmp_path)
    h.image = image_with(input=2, **{REPARTITION: 2, CHANGELOG: 2})
    assert h.join("a").member_epoch == 1  # a holds every task, assigned at epoch 1
    h.join("b")  # group epoch 2: a gives half its tasks up
    kept = active(h.heartbeat("a", 1))
    assert h.heartbeat("a", 1, active_tasks=owned(kept), standby_tasks=[], warmup_tasks=[]).member_epoch == 2
    b = h.heartbeat("b", 2)
    assert b.member_epoch == 2 and active(b)
    assert h.heartbeat("b", -1).member_epoch == -1  # group epoch 3: a gets every task back
    r = h.heartbeat("a", 2, active_tasks=owned(kept), standby_tasks=[], warmup_tasks=[])
    assert r.member_epoch == 3 and active(r) == {"0": frozenset({0, 1}), "1": frozenset({0, 1})}
    a = h.group().members["a"]
    assert a.previous_member_epoch == 2
    held = next((s, p) for s, ps in kept.items() for p in ps)
    regained = next((s, p) for s, ps in active(b).items() for p in ps)

    # a task held since epoch 1: epoch 1 commits it although it is older than the previous epoch (2)
    assert commit(h, "a", 1, held) == ok(held)
    # a task given back at epoch 3: epochs 2 and 1 are too old for it, and fail the whole request
    assert stale(h, "a", 2, held, regained) == (
        f"Received member epoch 2 is older than assignment epoch 3 for task {regained[0]}-{regained[1]}.")
    fetched = h.coordinator.fetch_offsets(GROUP, [(SOURCE[regained[0]], [regained[1]])])
    assert fetched.topics[0].partitions[0].committed_offset == -1
    # the current epoch commits anything; a topic that is no source topic at an older epoch is refused
    assert commit(h, "a", 3, regained, ("other", 0)) == ok(regained, ("other", 0))
    assert stale(h, "a", 2, ("other", 0)) == "Topic other is not in the topology."
    # the epochs are in the records: the state rebuilt by replay has them
    assert a.epochs()[held] == 1 and a.epochs()[regained] == 3
    assert h.reloaded().group(GROUP).members["a"].epochs() == a.epochs()


def test_a_task_pending_revocation_keeps_its_epoch_and_one_no_longer_held_is_refused(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.image = image_with(input=2, **{REPARTITION: 2, CHANGELOG: 2})
    h.join("a")
    h.join("b")
    kept = active(h.heartbeat("a", 1))  # UNREVOKED at epoch 1: the rest is pending revocation
    a = h.group().members["a"]
    assert a.state == StreamsMemberState.UNREVOKED_TASKS and a.member_epoch == 1
    revoked = next((s, p) for s, ps in a.pending_revocation.active.items() for p in ps)
    name = f"{revoked[0]}-{revoked[1]}"
    # still the member's (pending revocation): epoch 0 is older than its assignment epoch 1
    assert stale(h, "a", 0, revoked) == f"Received member epoch 0 is older than assignment epoch 1 for task {name}."
    h.heartbeat("a", 1, active_tasks=owned(kept), standby_tasks=[], warmup_tasks=[])
    assert h.group().members["a"].member_epoch == 2
    # revoked now: its old epoch commits nothing of it (Kafka 4.4; the previous-epoch rule accepted it)
    assert stale(h, "a", 1, revoked) == f"Task {name} is not assigned or pending revocation for member."
    # b: given it at epoch 2
    assert revoked in [(s, p) for s, ps in active(h.heartbeat("b", 2)).items() for p in ps]
    assert commit(h, "b", 2, revoked) == ok(revoked)
    assert stale(h, "b", 1, revoked) == f"Received member epoch 1 is older than assignment epoch 2 for task {name}."
    assert a.epochs()[revoked] == 1


def test_after_revoking_with_more_to_revoke_the_member_moves_to_the_next_epoch() -> None:
    """Kafka's CurrentAssignmentBuilder: once an UNREVOKED member has revoked, it reconciles as from its
    epoch + 1; with again something to revoke it waits there (and its kept tasks keep their epochs)."""
    m = StreamsGroupMember("a", member_epoch=4, previous_member_epoch=3, state=StreamsMemberState.UNREVOKED_TASKS,
                           assigned=TasksTuple({"0": frozenset({0, 1})}),
                           pending_revocation=TasksTuple({"0": frozenset({2})}),
                           active_epochs=(("0", 0, 2), ("0", 1, 4), ("0", 2, 3)))
    never = lambda *_: False  # noqa: E731
    target = TasksTuple({"0": frozenset({0})})
    assert reconcile(m, 6, target, TasksTuple({"0": frozenset({0, 1, 2})}), never, never) == m  # not yet revoked
    r = reconcile(m, 6, target, TasksTuple({"0": frozenset({0, 1})}), never, never)
    assert (r.state, r.member_epoch, r.previous_member_epoch) == (StreamsMemberState.UNREVOKED_TASKS, 5, 4)
    assert r.pending_revocation == TasksTuple({"0": frozenset({1})}) and r.epochs() == {("0", 0): 2, ("0", 1): 4}
    r = reconcile(r, 6, TasksTuple({"0": frozenset({0, 3})}), TasksTuple({"0": frozenset({0})}), never, never)
    assert (r.state, r.member_epoch, r.previous_member_epoch) == (StreamsMemberState.STABLE, 6, 5)
    assert r.epochs() == {("0", 0): 2, ("0", 3): 6}
    value = r.current_assignment()
    assert value.state == 1 and [t.assignment_epochs for t in value.active_tasks] == [[2, 6]]


def test_a_target_assignment_is_computed_at_most_once_per_assignment_interval(tmp_path: Path) -> None:
    """Kafka 4.4's group.streams.assignment.interval.ms (default 1000): a heartbeat that needs a new target
    sooner than the interval after the last one is told ASSIGNMENT_DELAYED and keeps the old target."""
    h = Harness(tmp_path, **{"group.streams.assignment.interval.ms": 1000})
    h.image = image_with(input=2, **{REPARTITION: 2, CHANGELOG: 2})
    assert h.join("a").member_epoch == 1  # the first target: at once
    b = h.join("b")  # group epoch 2, but the last target is 0 ms old
    assert (b.member_epoch, h.group().group_epoch, h.group().assignment_epoch) == (1, 2, 1)
    assert h.group().assignment_timestamp == h.clock.wall_ms()
    assert [(s.status_code, s.status_detail) for s in b.status] == [
        (ASSIGNMENT_DELAYED, "Assignment delayed due to the configured assignment interval.")]
    assert h.group().state_name() == "Assigning"
    h.clock.advance(999)
    assert h.heartbeat("a", 1).member_epoch == 1 and h.group().assignment_epoch == 1
    h.clock.advance(1)
    r = h.heartbeat("a", 1)
    assert r.status == [] and h.group().assignment_epoch == 2
    assert h.group().members["a"].state == StreamsMemberState.UNREVOKED_TASKS
    assert h.reloaded().group(GROUP).assignment_timestamp == h.clock.wall_ms()


def test_a_transactional_commit_is_checked_alike_with_its_versions_error(tmp_path: Path) -> None:
    """TxnOffsetCommit runs the same per-task check; before v6 (KIP-1251) the error is ILLEGAL_GENERATION."""
    h = Harness(tmp_path)
    h.image = image_with(input=2, **{REPARTITION: 2, CHANGELOG: 2})
    h.join("a")
    h.join("b")
    kept = active(h.heartbeat("a", 1))
    h.heartbeat("a", 1, active_tasks=owned(kept), standby_tasks=[], warmup_tasks=[])
    gone = next((s, p) for s, ps in active(h.heartbeat("b", 2)).items() for p in ps)
    for version, code in [(5, ErrorCode.ILLEGAL_GENERATION), (6, ErrorCode.STALE_MEMBER_EPOCH)]:
        with pytest.raises(KafkaError) as e:
            h.coordinator.commit_transactional_offsets(RequestInfo(api_version=version), GROUP, 7, 0, "a", None, 1,
                                                       [PartitionCommit(SOURCE[gone[0]], gone[1], 7)])
        assert e.value.code == code


def test_the_assignment_interval_as_a_group_config_within_the_broker_bounds(tmp_path: Path) -> None:
    broker = BrokerConfig.from_props({})
    assert validate_group_configs({}, broker)["streams.assignment.interval.ms"] == 1000
    assert validate_group_configs({"streams.assignment.interval.ms": "0"}, broker)["streams.assignment.interval.ms"] == 0
    with pytest.raises(ConfigError) as e:
        validate_group_configs({"streams.assignment.interval.ms": "15001"}, broker)
    assert str(e.value) == ("streams.assignment.interval.ms must be less than or equal to "
                            "group.streams.max.assignment.interval.ms")
    # the group's own value wins over the broker's (here: no interval for this group)
    h = Harness(tmp_path, **{"group.streams.assignment.interval.ms": 60_000})
    h.image = replace(image_with(input=2, **{REPARTITION: 2, CHANGELOG: 2}),
                      group_configs={GROUP: {"streams.assignment.interval.ms": "0"}})
    h.join("a")
    assert h.join("b").status == [] and h.group().assignment_epoch == 2
