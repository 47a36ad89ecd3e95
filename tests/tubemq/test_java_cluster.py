"""The real TubeMQ Java client against a Tidelog cluster (ZooKeeper and three ``tidelog serve`` with
TubeMQ listeners, :mod:`tests.fault.lab.tubemq_cluster`): a pull consumer given every broker's master
address, the group's coordinator last, finds it (the others answer TubeMQ's StandbyException, on which
the client tries the next address), consumes, and after the coordinator's broker is killed (-9) it
follows the group to the new coordinator and consumes what is produced next, from its committed offset.

Needs java 17+ and mvn (the Java client, ZooKeeper). About 25 s on a loaded 2-core machine: once its
master is gone the consumer heartbeats again after 2 s, not the client's default minute (tests/tubemq/java
Driver, heartbeatPeriodAfterFail).
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from tests.fault.lab.tubemq_cluster import TubeCluster, coordinator
from tests.tubemq.driver import JavaTube
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

TOPIC, GROUP = "java-cluster", "java-cluster-group"


CLUSTER = {}  # the module's cluster (tests/fixtures.py): three brokers with TubeMQ listeners
CLUSTER_CLASS = TubeCluster


def produce(cluster: LocalCluster, values: range) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    for i in values:
        producer.produce(TOPIC, value=f"m{i}".encode(), partition=0)
    assert producer.flush(60) == 0


def test_a_java_consumer_finds_its_groups_coordinator_and_follows_it_after_a_kill(cluster, tubemq_classpath) -> None:
    c, endpoints = cluster, cluster.endpoints
    active = coordinator(c)
    # The topic's partition is led by the coordinator's broker and fails over to the same broker as the
    # group (the same replica order as __consumer_offsets-0): a TubeMQ client reads the partitions its
    # master's broker leads.
    replicas = c.assignment("__consumer_offsets")[0]
    assert replicas[0] == active, replicas
    admin = c.admin()  # referenced until its future is done (a collected client destroys its handle)
    admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[replicas])])[TOPIC].result(30)
    wait_for(lambda: len((c.state_or_none(TOPIC) or {}).get("isr", [])) == 3 and
             len(c.state("__consumer_offsets")["isr"]) == 3, 60, what="full ISRs")
    produce(c, range(0, 20))
    masters = [endpoints[i][0] for i in sorted(endpoints, key=lambda i: i == active)]  # the active one last
    with JavaTube(tubemq_classpath, ",".join(masters)).member(GROUP, [TOPIC], "consumer") as member:
        member.wait_for(lambda m: len(m.records) >= 20, 60, "the first 20 messages")
        c.kill(active)
        successor = replicas[1]
        wait_for(lambda: coordinator(c) == successor and c.leader(TOPIC) == successor, 60,
                 what=f"broker {successor} leading the group and the topic")
        produce(c, range(20, 30))
        member.wait_for(lambda m: {r["body"] for r in m.records} >= {f"m{i}" for i in range(30)}, 90,
                        "the messages produced after the kill, through the new coordinator")
