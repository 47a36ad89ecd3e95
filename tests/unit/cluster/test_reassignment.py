"""The reassignment state logic (KIP-455): starting, replacing, cancelling and completing a
reassignment, and the checks of a request; the topic znode's encoding of it."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from tidelog.cluster import zk_data as zk
from tidelog.cluster.metadata import BrokerInfo, MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.reassignment import (
    Reassigner,
    ReassignmentRequest,
    complete,
    completions,
    encode_assignment,
    ongoing,
    origin_replicas,
    reassign,
    target_replicas,
)
from tidelog.errors import ErrorCode, KafkaError

LIVE = {1, 2, 3, 4}


def part(replicas, isr=None, leader=None, epoch=5, pepoch=7, adding=(), removing=()) -> PartitionMetadata:
    replicas = tuple(replicas)
    isr = tuple(replicas if isr is None else isr)
    return PartitionMetadata(0, replicas[0] if leader is None else leader, epoch, replicas, isr, pepoch,
                             tuple(adding), tuple(removing))


def test_start_records_union_adding_and_removing_in_kafkas_order() -> None:
    p = reassign(part([1, 2]), (3, 2), LIVE)
    assert p.replicas == (3, 2, 1)
    assert p.adding_replicas == (3,) and p.removing_replicas == (1,)
    assert (p.leader, p.leader_epoch, p.isr) == (1, 5, (1, 2))  # nothing else changes yet
    # as Kafka's ReplicaAssignment: ORS is RS without the adding replicas (in RS's order)
    assert origin_replicas(p) == (2, 1) and target_replicas(p) == (3, 2)


def test_completion_waits_for_every_target_replica_in_the_isr() -> None:
    p = reassign(part([1]), (2,), LIVE)
    assert complete(p, LIVE) is None
    caught_up = PartitionMetadata(0, 1, 5, p.replicas, (1, 2), 8, p.adding_replicas, p.removing_replicas)
    done = complete(caught_up, LIVE)
    assert done is not None
    # the leader leaves: the first target replica in the ISR leads, in a new epoch
    assert (done.replicas, done.isr, done.leader, done.leader_epoch) == ((2,), (2,), 2, 6)
    assert not done.reassigning


def test_completion_keeps_a_leader_that_stays_and_bumps_the_epoch() -> None:
    p = part([1, 2, 3], isr=(1, 2, 3), leader=2, adding=(), removing=(3,))
    done = complete(p, LIVE)
    assert (done.replicas, done.isr, done.leader, done.leader_epoch) == ((1, 2), (1, 2), 2, 6)


def test_completion_skips_dead_leader_candidates_and_waits_without_any() -> None:
    p = part([2, 3, 1], isr=(1, 2, 3), leader=1, adding=(2, 3), removing=(1,))
    done = complete(p, {1, 3})
    assert done.leader == 3
    assert complete(p, {1}) is None  # no target replica alive to lead


def test_replication_factor_up_and_down() -> None:
    up = reassign(part([1]), (1, 2, 3), LIVE)
    assert (up.replicas, up.adding_replicas, up.removing_replicas) == ((1, 2, 3), (2, 3), ())
    down = reassign(part([1, 2, 3]), (2, 3), LIVE)
    assert (down.replicas, down.adding_replicas, down.removing_replicas) == ((2, 3, 1), (), (1,))
    done = complete(down, LIVE)
    assert (done.replicas, done.leader, done.isr) == ((2, 3), 2, (2, 3))


def test_reordering_ends_at_once_with_a_new_epoch() -> None:
    p = reassign(part([1, 2, 3]), (3, 2, 1), LIVE)
    assert p.replicas == (3, 2, 1) and not p.reassigning
    assert (p.leader, p.leader_epoch) == (1, 6)


def test_same_replicas_change_nothing() -> None:
    p = part([1, 2])
    assert reassign(p, (1, 2), LIVE) is p


def test_cancel_goes_back_to_the_original_replicas() -> None:
    moving = reassign(part([1, 2]), (3, 4), LIVE)
    caught = PartitionMetadata(0, 1, 5, moving.replicas, (1, 2, 3), 9, moving.adding_replicas,
                               moving.removing_replicas)
    back = reassign(caught, None, LIVE)
    assert (back.replicas, back.isr, back.leader, back.leader_epoch) == ((1, 2), (1, 2), 1, 6)
    assert not back.reassigning


def test_cancel_without_reassignment_is_refused() -> None:
    with pytest.raises(KafkaError) as e:
        reassign(part([1, 2]), None, LIVE)
    assert e.value.code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


def test_new_target_replaces_a_reassignment_in_progress() -> None:
    first = reassign(part([1]), (2,), LIVE)
    caught = PartitionMetadata(0, 2, 6, first.replicas, (1, 2), 9, first.adding_replicas, first.removing_replicas)
    second = reassign(caught, (3,), LIVE)  # relative to the origin [1]; 2 (added by the first) leaves at once
    assert (second.replicas, second.adding_replicas, second.removing_replicas) == ((3, 1), (3,), (1,))
    assert (second.isr, second.leader, second.leader_epoch) == ((1,), 1, 7)


@pytest.mark.parametrize(("target", "fragment"), [
    ((), "empty replica list"),
    ((1, 1), "more than once"),
    ((1, 9), "broker 9, but no such broker"),
    ((-1,), "Invalid broker id"),
])
def test_invalid_targets(target, fragment) -> None:
    with pytest.raises(KafkaError) as e:
        reassign(part([1]), target, LIVE)
    assert e.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert fragment in e.value.message


def test_replication_factor_change_refused_when_not_allowed() -> None:
    with pytest.raises(KafkaError) as e:
        reassign(part([1, 2]), (1, 2, 3), LIVE, allow_replication_factor_change=False)
    assert e.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert reassign(part([1, 2]), (2, 3), LIVE, allow_replication_factor_change=False).adding_replicas == (3,)


def test_topic_znode_round_trip_with_reassignments() -> None:
    p0 = reassign(part([1, 2]), (3, 2), LIVE)
    p1 = PartitionMetadata(1, 2, 0, (2, 3), (2, 3), 0)
    topic = TopicMetadata("t", uuid.uuid4(), (p0, p1))
    raw = encode_assignment(topic)
    topic_id, assignment = zk.decode_topic(raw)
    assert topic_id == topic.topic_id and assignment == {0: (3, 2, 1), 1: (2, 3)}
    assert zk.decode_topic_reassignment(raw) == ({0: (3,)}, {0: (1,)})
    # topics written without reassignments (and by older writers) decode to none
    assert zk.decode_topic_reassignment(zk.encode_topic(topic.topic_id, {0: (1,)})) == ({}, {})


class _Store:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.published: list[MetadataImage] = []

    def publish(self, image: MetadataImage) -> None:
        self.published.append(image)
        self.image = image

    def refresh(self) -> None:
        self.refreshed = getattr(self, "refreshed", 0) + 1


def _image(*partitions: PartitionMetadata) -> MetadataImage:
    brokers = {i: BrokerInfo(i, "h", 9000 + i) for i in LIVE}
    return MetadataImage("c", 1, brokers, {"t": TopicMetadata("t", uuid.uuid4(), partitions)})


def test_reassigner_answers_per_partition_and_publishes_once() -> None:
    store = _Store(_image(part([1]), PartitionMetadata(1, 2, 0, (2,), (2,), 0)))
    results = Reassigner(store).alter([
        ReassignmentRequest("t", 0, (2,)),
        ReassignmentRequest("t", 1, None),
        ReassignmentRequest("t", 5, (1,)),
        ReassignmentRequest("nope", 0, (1,)),
        ReassignmentRequest("t", 1, (3, 3)),
    ])
    codes = [r.code if r else None for r in results]
    assert codes == [None, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_REPLICA_ASSIGNMENT]
    assert len(store.published) == 1
    assert [(t, p.partition, p.replicas) for t, p in ongoing(store.image)] == [("t", 0, (2, 1))]
    assert ongoing(store.image, [("t", 1), ("t", 9), ("x", 0)]) == []
    # nothing can complete until broker 2 is in the ISR
    assert completions(store.image) == []


def test_reassigner_publishes_nothing_when_every_partition_fails() -> None:
    store = _Store(_image(part([1])))
    assert Reassigner(store).alter([ReassignmentRequest("t", 0, ())])[0].code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert store.published == []


def test_reassigner_reports_a_refused_write_on_every_accepted_partition() -> None:
    class Unreachable(_Store):
        def publish(self, image: MetadataImage) -> None:
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "ZooKeeper is unavailable")

    store = Unreachable(_image(part([1]), PartitionMetadata(1, 2, 0, (2,), (2,), 0)))
    results = Reassigner(store).alter([ReassignmentRequest("t", 0, (2,)), ReassignmentRequest("t", 1, ())])
    assert [r.code for r in results] == [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.INVALID_REPLICA_ASSIGNMENT]
    assert ongoing(store.image) == []


def test_reassigner_decides_again_after_losing_to_a_concurrent_change() -> None:
    class Contended(_Store):
        """The first write loses to a leader's ISR change (the re-read image has it); later ones win."""

        def __init__(self, image: MetadataImage, conflicts: int) -> None:
            super().__init__(image)
            self.conflicts = conflicts
            self.attempts = 0

        def publish(self, image: MetadataImage) -> None:
            self.attempts += 1
            if self.attempts <= self.conflicts:
                topic = self.image.topics["t"]
                shrunk = replace(topic.partitions[0], isr=(1,), partition_epoch=topic.partitions[0].partition_epoch + 1)
                self.image = self.image.with_topic(replace(topic, partitions=(shrunk,)))
                raise KafkaError(ErrorCode.NOT_CONTROLLER, "the metadata changed concurrently in ZooKeeper; retry")
            super().publish(image)

    store = Contended(_image(part([1])), conflicts=1)
    assert Reassigner(store).alter([ReassignmentRequest("t", 0, (2,))]) == [None]
    assert store.attempts == 2 and [(t, p.replicas) for t, p in ongoing(store.image)] == [("t", (2, 1))]

    always = Contended(_image(part([1])), conflicts=99)
    (error,) = Reassigner(always).alter([ReassignmentRequest("t", 0, (2,))])
    assert error.code == ErrorCode.NOT_CONTROLLER and always.attempts == Reassigner.ATTEMPTS


def test_reassigner_refuses_only_on_a_fresh_image() -> None:
    """A broker's image follows ZooKeeper a moment behind (CI: a move from 3 to 1 had ended, but the
    image asked still said replicas [3] with ISR [1], and the next move was refused as "no replica
    could lead"). A refusal is decided again once on a re-read image; a real one stays."""
    class Lagging(_Store):
        def __init__(self, stale: MetadataImage, fresh: MetadataImage) -> None:
            super().__init__(stale)
            self.fresh = fresh

        def refresh(self) -> None:
            super().refresh()
            self.image = self.fresh

    stale = _image(PartitionMetadata(0, 1, 3, (3,), (1,), 0))
    fresh = _image(PartitionMetadata(0, 1, 3, (1,), (1,), 0))
    store = Lagging(stale, fresh)
    assert Reassigner(store).alter([ReassignmentRequest("t", 0, (2,))]) == [None]
    assert store.refreshed == 1 and [(t, p.replicas) for t, p in ongoing(store.image)] == [("t", (2, 1))]

    store = _Store(_image(part([1])))
    (error,) = Reassigner(store).alter([ReassignmentRequest("t", 0, ())])
    assert error.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT and store.refreshed == 1
