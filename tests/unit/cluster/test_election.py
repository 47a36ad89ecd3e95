"""The controller's leader election when brokers come and go."""

from __future__ import annotations

import uuid

from tidelog.cluster.election import elect_leader, elections, first_states
from tidelog.cluster.metadata import BrokerInfo, MetadataImage, PartitionMetadata, TopicMetadata

P = PartitionMetadata(0, leader=1, leader_epoch=4, replicas=(1, 2, 3), isr=(1, 2, 3), partition_epoch=9)


def test_a_dead_leader_is_replaced_by_the_first_live_isr_member_in_assignment_order() -> None:
    new = elect_leader(P, {2, 3}, unclean=False)
    assert new is not None and (new.leader, new.leader_epoch, new.isr) == (2, 5, (2, 3))
    assert new.partition_epoch == 9  # written at the version read


def test_a_dead_follower_leaves_the_isr_in_the_same_epoch() -> None:
    new = elect_leader(P, {1, 3}, unclean=False)
    assert new is not None and (new.leader, new.leader_epoch, new.isr) == (1, 4, (1, 3))
    assert elect_leader(P, {1, 2, 3}, unclean=False) is None


def test_no_live_isr_member_takes_the_partition_offline_unless_unclean_election_is_on() -> None:
    p = PartitionMetadata(0, 1, 4, (1, 2, 3), (1,), 9)
    offline = elect_leader(p, {2, 3}, unclean=False)
    assert offline is not None and (offline.leader, offline.isr) == (-1, (1,))
    assert elect_leader(offline, {2, 3}, unclean=False) is None
    back = elect_leader(offline, {1, 2, 3}, unclean=False)
    assert back is not None and (back.leader, back.leader_epoch, back.isr) == (1, 6, (1,))
    unclean = elect_leader(p, {2, 3}, unclean=True)
    assert unclean is not None and (unclean.leader, unclean.isr) == (2, (2,))


def test_elections_look_at_every_partition_and_skip_those_without_state() -> None:
    brokers = {i: BrokerInfo(i, "h", 9000 + i) for i in (2, 3)}
    topic = TopicMetadata("t", uuid.uuid4(), (P, PartitionMetadata(1, -1, -1, (1, 2), (), -1)))
    image = MetadataImage("c", 2, brokers, {"t": topic})
    assert [(name, p.partition, p.leader) for name, p in elections(image, lambda t: False)] == [("t", 0, 2)]


def test_a_new_partition_s_first_state_is_its_first_live_replica_leading_the_live_replicas() -> None:
    brokers = {i: BrokerInfo(i, "h", 9000 + i) for i in (1, 3)}
    new = TopicMetadata("new", uuid.uuid4(), (PartitionMetadata.new(0, (2, 3, 1)), PartitionMetadata.new(1, (1, 3)),
                                              PartitionMetadata.new(2, (2,))))
    stated = TopicMetadata("old", uuid.uuid4(), (P,))
    image = MetadataImage("c", 1, brokers, {"new": new, "old": stated})
    firsts = [(name, p.partition, p.leader, p.leader_epoch, p.isr, p.partition_epoch) for name, p in first_states(image)]
    # written at partition epoch -1 (created); a partition with a state, or without a live replica, waits
    assert firsts == [("new", 0, 3, 0, (3, 1), -1), ("new", 1, 1, 0, (1, 3), -1)]
    assert all(p.is_new for p in new.partitions) and not P.is_new
