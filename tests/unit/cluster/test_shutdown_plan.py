"""The controller's side of controlled shutdown and ElectLeaders' rules: which partition states change."""

from __future__ import annotations

import uuid

from tidelog.cluster.leader_election import ElectionType, elect, imbalanced_partitions
from tidelog.cluster.metadata import BrokerInfo, MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.shutdown_plan import plan_controlled_shutdown, remaining_partitions
from tidelog.errors import ErrorCode


def _image(partitions: list[PartitionMetadata], live=(1, 2, 3), name: str = "t") -> MetadataImage:
    brokers = {i: BrokerInfo(i, "h", 9000 + i) for i in live}
    return MetadataImage("c", 1, brokers, {name: TopicMetadata(name, uuid.uuid4(), tuple(partitions))})


def _p(partition: int, leader: int, replicas: tuple[int, ...], isr: tuple[int, ...], epoch: int = 3,
       version: int = 7) -> PartitionMetadata:
    return PartitionMetadata(partition, leader, epoch, replicas, isr, version)


# ---------------------------------------------------------------------------- controlled shutdown


def test_leadership_moves_to_the_first_live_isr_member_in_assignment_order() -> None:
    image = _image([_p(0, 1, (1, 3, 2), (1, 2, 3)), _p(1, 1, (2, 1, 3), (1, 3))])
    plan = plan_controlled_shutdown(image, 1, set())
    moved = {p.partition: (p.leader, p.leader_epoch, p.isr, p.partition_epoch) for _, p in plan.moves}
    assert moved == {0: (3, 4, (2, 3), 7), 1: (3, 4, (3,), 7)}  # 2 is not in partition 1's ISR
    assert not plan.isr_removals and not plan.stuck


def test_a_follower_leaves_the_isr_in_the_same_leader_epoch() -> None:
    image = _image([_p(0, 2, (2, 1, 3), (2, 1, 3)), _p(1, 2, (2, 1), (2,))])
    plan = plan_controlled_shutdown(image, 1, set())
    assert [(p.partition, p.leader, p.leader_epoch, p.isr) for _, p in plan.isr_removals] == [(0, 2, 3, (2, 3))]
    assert not plan.moves  # partition 1: 1 is not in the ISR, nothing to do


def test_no_other_eligible_leader_leaves_the_partition_remaining() -> None:
    image = _image([_p(0, 1, (1, 2, 3), (1,)), _p(1, 1, (1, 2), (1, 2)), _p(2, 1, (1,), (1,))])
    plan = plan_controlled_shutdown(image, 1, {2})  # 2 is shutting down too
    assert plan.stuck == [("t", 0), ("t", 1)]  # one-replica partition 2 is left out, as in Kafka
    assert remaining_partitions(image, 1) == [("t", 0), ("t", 1)]


def test_partitions_whose_other_replicas_are_all_gone_are_not_remaining() -> None:
    image = _image([_p(0, 1, (1, 2, 3), (1,)), _p(1, 1, (1, 2), (1,))], live=(1, 3))
    assert plan_controlled_shutdown(image, 1, set()).stuck == [("t", 0), ("t", 1)]
    assert remaining_partitions(image, 1) == [("t", 0)]  # 3 is alive and may catch up; 2 is gone
    assert remaining_partitions(image, 1, {3}) == []  # 3 is shutting down as well


def test_a_dead_isr_member_is_not_chosen() -> None:
    image = _image([_p(0, 1, (1, 2, 3), (1, 2, 3))], live=(1, 3))
    (move,) = plan_controlled_shutdown(image, 1, set()).moves
    assert move[1].leader == 3


# ---------------------------------------------------------------------------- ElectLeaders rules


def test_preferred_election() -> None:
    image = _image([_p(0, 1, (1, 2), (1, 2)), _p(1, 2, (1, 2), (1, 2)), _p(2, 2, (1, 2), (2,)),
                    _p(3, 2, (3, 2), (3, 2))], live=(1, 2))
    assert elect(image, "t", 0, ElectionType.PREFERRED).error == ErrorCode.ELECTION_NOT_NEEDED
    ok = elect(image, "t", 1, ElectionType.PREFERRED)
    assert ok.error == ErrorCode.NONE and ok.new is not None
    assert (ok.new.leader, ok.new.leader_epoch, ok.new.isr) == (1, 4, (1, 2))
    assert elect(image, "t", 2, ElectionType.PREFERRED).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert elect(image, "t", 3, ElectionType.PREFERRED).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE  # dead
    assert elect(image, "t", 1, ElectionType.PREFERRED, {1}).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert elect(image, "t", 9, ElectionType.PREFERRED).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert elect(image, "nope", 0, ElectionType.PREFERRED).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_unclean_election() -> None:
    image = _image([_p(0, 1, (1, 2), (1, 2)), _p(1, -1, (3, 2, 1), (3, 1)), _p(2, -1, (3, 2), (3,)),
                    _p(3, -1, (3,), (3,))], live=(1, 2))
    assert elect(image, "t", 0, ElectionType.UNCLEAN).error == ErrorCode.ELECTION_NOT_NEEDED
    clean = elect(image, "t", 1, ElectionType.UNCLEAN).new  # an ISR member is alive: it leads
    assert clean is not None and (clean.leader, clean.leader_epoch, clean.isr) == (1, 4, (1,))
    unclean = elect(image, "t", 2, ElectionType.UNCLEAN).new  # none: the first live replica
    assert unclean is not None and (unclean.leader, unclean.isr) == (2, (2,))
    assert elect(image, "t", 3, ElectionType.UNCLEAN).error == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_imbalanced_partitions_are_those_of_brokers_above_the_percentage() -> None:
    # broker 1 is preferred for 0-3 and leads 0-2 (25 % elsewhere); broker 2 for 4-5, leads neither (100 %)
    parts = [_p(0, 1, (1, 2), (1, 2)), _p(1, 1, (1, 2), (1, 2)), _p(2, 1, (1, 2), (1, 2)),
             _p(3, 2, (1, 2), (1, 2)), _p(4, 1, (2, 1), (1, 2)), _p(5, 1, (2, 1), (1,))]
    image = _image(parts, live=(1, 2))
    assert imbalanced_partitions(image, 10) == [("t", 3), ("t", 4)]  # 5: broker 2 is not in its ISR
    assert imbalanced_partitions(image, 25) == [("t", 4)]  # 25 % is not above 25 %
    assert imbalanced_partitions(image, 10, {2}) == [("t", 3)]  # shutting down
    assert imbalanced_partitions(_image(parts, live=(1,)), 10) == [("t", 3)]  # broker 2 is gone
