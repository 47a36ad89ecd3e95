"""Replica assignment: Kafka's spread, with and without racks."""

from collections import Counter

import pytest

from tidelog.cluster.assignment import assign_replicas, rack_alternated
from tidelog.cluster.metadata import BrokerInfo
from tidelog.errors import ErrorCode, KafkaError


def brokers(*ids, racks=None):
    return [BrokerInfo(i, "h", 9092 + i, (racks or {}).get(i)) for i in ids]


def test_round_robin_with_a_fixed_start_is_kafkas():
    # Kafka's own expectation for 5 brokers, 10 partitions, RF 3, start index 0 (its ReplicaAssignment test)
    expected = [(0, 1, 2), (1, 2, 3), (2, 3, 4), (3, 4, 0), (4, 0, 1),
                (0, 2, 3), (1, 3, 4), (2, 4, 0), (3, 0, 1), (4, 1, 2)]
    assert assign_replicas(brokers(4, 2, 0, 3, 1), 10, 3, fixed_start=0) == expected


def test_random_start_spreads_leaders_and_replicas_evenly():
    result = assign_replicas(brokers(1, 2, 3), 6, 3)
    assert all(len(set(r)) == 3 for r in result)
    assert Counter(r[0] for r in result) == {1: 2, 2: 2, 3: 2}


def test_single_broker_is_todays_single_node():
    assert assign_replicas(brokers(7), 3, 1) == [(7,), (7,), (7,)]


def test_start_partition_continues_the_leaders():
    # added partitions (CreatePartitions) continue the round robin of leaders where the topic stopped
    whole = assign_replicas(brokers(0, 1, 2, 3, 4), 10, 3, fixed_start=0)
    added = assign_replicas(brokers(0, 1, 2, 3, 4), 4, 3, start_partition=6, fixed_start=0)
    assert [r[0] for r in added] == [r[0] for r in whole[6:]]
    assert all(len(set(r)) == 3 for r in added)


def test_rack_alternated_broker_list_is_kafkas():
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    assert rack_alternated(racks) == [0, 1, 3, 5, 2, 4]


@pytest.mark.parametrize("rf", [2, 3])
def test_rack_aware_puts_replicas_on_different_racks(rf):
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    result = assign_replicas(brokers(*racks, racks=racks), 12, rf)
    for replicas in result:
        assert len(set(replicas)) == rf
        assert len({racks[b] for b in replicas}) == rf
    assert Counter(r[0] for r in result) == dict.fromkeys(racks, 2)


def test_rack_aware_with_fewer_racks_than_replicas_uses_every_rack():
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}
    for replicas in assign_replicas(brokers(*racks, racks=racks), 8, 3):
        assert len(set(replicas)) == 3 and {racks[b] for b in replicas} == {"a", "b"}


def test_some_brokers_without_rack_is_an_error():
    with pytest.raises(KafkaError) as e:
        assign_replicas(brokers(0, 1, racks={0: "a"}), 1, 2)
    assert e.value.code == ErrorCode.INVALID_REPLICATION_FACTOR


@pytest.mark.parametrize("partitions, rf, code", [(0, 1, ErrorCode.INVALID_PARTITIONS),
                                                  (1, 0, ErrorCode.INVALID_REPLICATION_FACTOR),
                                                  (1, 4, ErrorCode.INVALID_REPLICATION_FACTOR)])
def test_bad_requests(partitions, rf, code):
    with pytest.raises(KafkaError) as e:
        assign_replicas(brokers(1, 2, 3), partitions, rf)
    assert e.value.code == code


def test_added_partitions_continue_from_partition_zeros_leader(tmp_path):
    """CreatePartitions (Kafka's AddPartitions): the start index is partition 0's leader's place."""
    from dataclasses import replace

    from tidelog.cluster.controller import Controller
    from tidelog.cluster.election import first_states
    from tidelog.cluster.store import EmbeddedStore
    from tidelog.cluster.topic_config import TopicConfigs
    from tidelog.config import TopicConfig

    store = EmbeddedStore(tmp_path)
    store.open(brokers(1)[0])
    store.publish(replace(store.image, brokers={b.broker_id: b for b in brokers(1, 2, 3)}))
    controller = Controller(store, 1, TopicConfigs(TopicConfig()))

    def decided(name: str):
        """The topic once the controller's first states (its rule, written as its queue writes them) are in."""
        for topic, p in first_states(store.image):
            store.alter_partition_state(topic, p.partition, p, lambda ok: None)
        return store.image.topics[name]

    for n in range(5):  # whatever the random start of the topic, the leaders keep rotating
        controller.create_topic(f"t{n}", 3, 2)
        topic = decided(f"t{n}")
        controller.create_partitions(f"t{n}", 9)
        grown = decided(f"t{n}")
        leaders = [p.leader for p in grown.partitions]
        assert Counter(leaders) == {1: 3, 2: 3, 3: 3}
        assert leaders[3:6] == [leaders[0], (leaders[0] % 3) + 1, ((leaders[0] + 1) % 3) + 1]
        assert [p.replicas for p in grown.partitions[:3]] == [p.replicas for p in topic.partitions]
