"""ElectLeaders and ``tidelog cluster elect-leaders | brokers`` with a real ZooKeeper and three
``tidelog serve`` processes: a preferred replica that came back leads again after a preferred
election (sent to a broker that is not the controller: any broker acts on it, with conditional
writes); Kafka's per-partition errors (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
UNKNOWN_TOPIC_OR_PARTITION); an offline partition gets a leader again only from an unclean election;
``topics describe`` filters. Also a single node (ELECTION_NOT_NEEDED). About 45 s.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import ApiVersionsRequest, ControlledShutdownRequest, ElectLeadersRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

Topic = ElectLeadersRequest.TopicPartitions


CLUSTER = {"chroot": "/tidelog-elect", "session_ms": 4000,  # the module's cluster (conftest.py)
           "overrides": {"replica.lag.time.max.ms": "1000", "replica.fetch.backoff.ms": "200",
                         "controlled.shutdown.retry.backoff.ms": "200", "offsets.topic.num.partitions": "1",
                         "auto.leader.rebalance.enable": "false"}}  # elections here are asked for


def tidelog(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", *args, "--bootstrap-server", bootstrap],
                          capture_output=True, text=True, timeout=60)


def elect(bootstrap: str, election_type: int, topics: list | None, version: int = 2) -> dict:
    with WireClient.connect(bootstrap) as client:
        response = client.request(ElectLeadersRequest(election_type=election_type, topic_partitions=topics,
                                                      timeout_ms=10_000), version)
    assert response.error_code == 0
    return {(r.topic, p.partition_id): ErrorCode(p.error_code)
            for r in response.replica_election_results for p in r.partition_result}


def test_a_returning_preferred_replica_leads_again_after_a_preferred_election(cluster: LocalCluster) -> None:
    cluster.create_topic("el", 3, 3)
    preferred = cluster.assignment("el")[0][0]
    assert cluster.leader("el", 0) == preferred
    cluster.brokers[preferred].stop()
    moved = cluster.wait_for_leader("el", 0, not_in=[preferred])
    cluster.restart(preferred)
    wait_for(lambda: preferred in cluster.state("el", 0)["isr"], what="the preferred replica back in the ISR")
    assert cluster.leader("el", 0) == moved
    before = cluster.state("el", 0)
    # the CLI's client sends it to the controller; the wire request below goes to another broker
    not_controller = next(i for i in cluster.brokers if i != cluster.controller())
    # that broker decides from its own metadata, which follows ZooKeeper a moment later (as a
    # ZooKeeper-era controller's did): wait until it too has the preferred replica in the ISR
    admin = cluster.admin(not_controller)
    wait_for(lambda: preferred in admin.list_topics("el", timeout=10).topics["el"].partitions[0].isrs,
             what=f"broker {not_controller} to see the preferred replica in the ISR")
    asked = [Topic(topic="el", partitions=[0, 1]), Topic(topic="el-nope", partitions=[0])]
    results = elect(cluster.brokers[not_controller].bootstrap, 0, asked)
    assert results == {("el", 0): ErrorCode.NONE, ("el", 1): ErrorCode.ELECTION_NOT_NEEDED,
                       ("el-nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    after = cluster.state("el", 0)
    assert (after["leader"], after["leader_epoch"], after["isr"]) == (
        preferred, before["leader_epoch"] + 1, before["isr"])
    # again: nothing to do; every partition (a null list, v0): those needing nothing are left out
    out = tidelog(cluster.bootstrap(), "cluster", "elect-leaders", "--election-type", "preferred",
                  "--topic", "el", "--partition", "0")
    assert (out.returncode, out.stdout) == (0, "Valid replica already elected for partitions el-0\n"), out.stderr
    assert elect(cluster.brokers[not_controller].bootstrap, 0, None, version=0) == {}
    out = tidelog(cluster.bootstrap(), "cluster", "elect-leaders", "--election-type", "PREFERRED",
                  "--all-topic-partitions")
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_an_offline_partition_gets_a_leader_only_from_an_unclean_election(cluster: LocalCluster) -> None:
    wait_for(lambda: len(cluster.live_ids()) == 3, what="three brokers")
    cluster.create_topic("el-offline", 1, 2)
    leader = cluster.leader("el-offline")
    (follower,) = [r for r in cluster.assignment("el-offline")[0] if r != leader]
    cluster.pause(follower)
    try:
        wait_for(lambda: cluster.state("el-offline")["isr"] == [leader], what="the paused follower out of the ISR")
        cluster.kill(leader)
        wait_for(lambda: cluster.state("el-offline")["leader"] == -1, what="the partition offline", timeout=30)
    finally:
        cluster.resume(follower)
    wait_for(lambda: follower in cluster.live_ids(), what="the follower registered", timeout=30)
    bootstrap = cluster.bootstrap(follower)
    out = tidelog(bootstrap, "topics", "describe", "el-offline", "--unavailable-partitions")
    assert out.returncode == 0 and "Partition: 0\tLeader: none" in out.stdout, out.stdout + out.stderr
    out = tidelog(bootstrap, "cluster", "elect-leaders", "--election-type", "preferred",
                  "--topic", "el-offline", "--partition", "0")
    assert out.returncode == 1 and "Error completing leader election (PREFERRED) for partition: el-offline-0:" \
        in out.stdout and "1 replica(s) could not be elected" in out.stderr, out
    assert cluster.state("el-offline")["leader"] == -1
    out = tidelog(bootstrap, "cluster", "elect-leaders", "--election-type", "unclean",
                  "--topic", "el-offline", "--partition", "0")
    assert (out.returncode, out.stdout) == (
        0, "Successfully completed leader election (UNCLEAN) for partitions el-offline-0\n"), out.stderr
    state = cluster.state("el-offline")
    assert (state["leader"], state["isr"]) == (follower, [follower])
    out = tidelog(bootstrap, "topics", "describe", "el-offline", "--under-replicated-partitions")
    assert f"Leader: {follower}\tReplicas: " in out.stdout and f"Isr: {follower}\t" in out.stdout, out.stdout
    cluster.restart(leader)
    wait_for(lambda: leader in cluster.state("el-offline")["isr"], what="the old leader back as a follower")
    out = tidelog(cluster.bootstrap(), "topics", "describe", "el-offline", "--under-replicated-partitions")
    assert "Partition: 0" not in out.stdout, out.stdout
    out = tidelog(cluster.bootstrap(), "cluster", "brokers")
    assert out.returncode == 0 and out.stdout.splitlines()[0].split() == ["ID", "HOST:PORT", "RACK", "CONTROLLER"]
    assert [line.split()[0] for line in out.stdout.splitlines()[1:]] == ["1", "2", "3"]


def test_a_single_node_answers_election_not_needed(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path) as broker:
        assert tidelog(broker.bootstrap, "topics", "create", "solo", "--partitions", "2").returncode == 0
        for election_type in (0, 1):
            assert elect(broker.bootstrap, election_type, [Topic(topic="solo", partitions=[0, 1, 7])]) == {
                ("solo", 0): ErrorCode.ELECTION_NOT_NEEDED, ("solo", 1): ErrorCode.ELECTION_NOT_NEEDED,
                ("solo", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        out = tidelog(broker.bootstrap, "cluster", "elect-leaders", "--election-type", "preferred",
                      "--topic", "solo", "--partition", "1")
        assert (out.returncode, out.stdout) == (0, "Valid replica already elected for partitions solo-1\n")
        with WireClient.connect(broker.bootstrap) as client:  # ControlledShutdown is a cluster's API only
            served = {k.api_key for k in client.request(ApiVersionsRequest(client_software_name="tests", client_software_version="1"), 3).api_keys}
        assert ElectLeadersRequest.API_KEY in served and ControlledShutdownRequest.API_KEY not in served
