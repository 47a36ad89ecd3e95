"""Do TubeMQ consumers' acknowledged offset commits survive a kill -9 of the group coordinator in
cluster mode? (issue 24: they are answered only once the in-sync replicas have them, docs/tubemq.md
"Cluster mode"; before that, 9 kills of 10 lost the last acknowledged commit.) The runner prints
each round's figures; ``tests/fault/test_tubemq_cluster.py`` runs two rounds and asserts them.

    python -m tests.fault.lab.tubemq_cluster --rounds 5

Three brokers (RF=3, ``min.insync.replicas=2``, one ``__consumer_offsets`` partition so one broker
is every group's coordinator) with TubeMQ listeners on fixed ports. Each round: a fresh one-partition
topic led by the coordinator's broker (TubeMQ clients are served only the partitions their broker
leads); a TubeMQ producer sends ``batches`` x ``batch`` messages and a TubeMQ consumer of a fresh
group pulls and commits each pack (consumerCommitC2B); right after the last acknowledged commit the
coordinator's broker is killed (-9). Once another broker leads ``__consumer_offsets``, the group's
committed offset is read with Kafka's OffsetFetch (Tidelog's wire client: a librdkafka AdminClient
per attempt crashed the runner with SIGSEGV after a few rounds) and compared with the last
acknowledged one; then the killed broker is started again and the round waits for the full ISR.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import NewTopic

from tests.fault.lab.tubemq_workload import INDEX_BYTES
from tidelog.cli.zookeeper import ZooKeeperProcess, free_port
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import FindCoordinatorRequest, OffsetFetchRequest
from tidelog.protocol.tubemq.generated import broker_service_pb2 as broker_pb
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.message import checksum
from tidelog.protocol.tubemq.rpc import Method, Service
from tidelog.testing.client import ConnectionClosed, WireClient
from tidelog.testing.cluster import LocalCluster, wait_for
from tidelog.testing.tubemq import TUBEMQ_OVERRIDES, TubeWireClient

OVERRIDES = {
    **TUBEMQ_OVERRIDES, "min.insync.replicas": "2", "default.replication.factor": "3",
    "unclean.leader.election.enable": "false", "replica.lag.time.max.ms": "1500", "replica.fetch.backoff.ms": "200",
    "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "1",
    "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000",
}


#: Every AdminClient made, kept referenced until the process ends.
_ADMINS: list = []


@dataclass
class Round:
    victim: int
    acknowledged: int  # the last acknowledged commit (Kafka offset)
    survived: int | None  # the group's committed offset after the failover (None: none at all)

    @property
    def lost(self) -> bool:
        return self.survived is None or self.survived < self.acknowledged


class TubeCluster(LocalCluster):
    """A :class:`LocalCluster` whose brokers also serve TubeMQ (:data:`OVERRIDES`), each on its own free
    ports: ``endpoints[broker_id]`` is its (master, broker) address pair. A test module's
    ``CLUSTER_CLASS`` (tests/fixtures.py)."""

    def __init__(self, root: Path, *, zookeeper: ZooKeeperProcess, chroot: str = "/tidelog-tubemq",
                 overrides: dict[str, str] | None = None, **arguments) -> None:
        self.endpoints = {i: (f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}") for i in (1, 2, 3)}
        per_broker = {i: {"tubemq.master.listener": m, "tubemq.broker.listener": b}
                      for i, (m, b) in self.endpoints.items()}
        super().__init__(root, zookeeper=zookeeper, chroot=chroot, overrides={**OVERRIDES, **(overrides or {})},
                         per_broker=per_broker, **arguments)


def tubemq_cluster(root: Path, zookeeper: ZooKeeperProcess | None = None) -> tuple[TubeCluster, dict]:
    cluster = TubeCluster(root, zookeeper=zookeeper or ZooKeeperProcess(root / "zk"))
    cluster.start()
    return cluster, cluster.endpoints


def coordinator(cluster: LocalCluster) -> int:
    """The broker leading ``__consumer_offsets`` (created by a first FindCoordinator if need be)."""
    if cluster.state_or_none("__consumer_offsets") is None:
        def created() -> bool:
            try:
                with WireClient.connect(cluster.bootstrap().split(",")[0], timeout=10) as client:
                    client.request(FindCoordinatorRequest(key="tc-probe", key_type=0), 1)
            except (OSError, ConnectionClosed):
                pass
            return cluster.state_or_none("__consumer_offsets") is not None

        wait_for(created, 60, what="__consumer_offsets")
    return cluster.leader("__consumer_offsets", 0)


def one_round(cluster: LocalCluster, endpoints: dict, n: int, *, batches: int = 10, batch: int = 20) -> Round:
    admin = cluster.admin()
    _ADMINS.append(admin)
    admin.list_topics(timeout=20)
    c = coordinator(cluster)
    topic, group = f"tc-{n}", f"tc-group-{n}"
    others = [i for i in cluster.brokers if i != c]
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[c, *others]])])[topic].result(30)
    wait_for(lambda: (cluster.state_or_none(topic) or {}).get("leader") == c and
             len(cluster.state(topic)["isr"]) == 3, 30, what=f"{topic} led by {c} with its full ISR")
    master_address, broker_address = endpoints[c]
    acknowledged = 0
    with TubeWireClient.connect(master_address) as master, TubeWireClient.connect(broker_address) as broker:
        def registered() -> bool:  # 431 until this broker's metadata has the new topic
            return master.request(Service.MASTER, Method.CONSUMER_REGISTER_C2M, master_pb.RegisterRequestC2M(
                clientId="tc-consumer", groupName=group, hostName="h", topicList=[topic], defFlowCheckId=-2,
                groupFlowCheckId=-2)).success

        wait_for(registered, 30, what=f"the consumer registered for {topic}")

        def connected() -> bool:
            beat = master.request(Service.MASTER, Method.CONSUMER_HEARTBEAT_C2M, master_pb.HeartRequestC2M(
                clientId="tc-consumer", groupName=group, reportSubscribeInfo=False))
            return beat.HasField("event") and beat.event.opType in (1, 10)

        wait_for(connected, 30, what="the CONNECT event")
        def broker_registered():
            # ZooKeeper names the leader a moment before that broker has taken the partition on: a
            # register that early answers 503 NOT_LEADER_OR_FOLLOWER, and a TubeMQ client tries again
            answer = broker.request(Service.BROKER_READ, Method.CONSUMER_REGISTER_C2B, broker_pb.RegisterRequestC2B(
                opType=31, clientId="tc-consumer", groupName=group, topicName=topic, partitionId=0, readStatus=0))
            if not answer.success and answer.errCode == 503 and "NOT_LEADER_OR_FOLLOWER" in answer.errMsg:
                return None
            return answer

        answer = wait_for(broker_registered, 30, what=f"the consumer registered on broker {c}")
        assert answer.success, answer
        sent = 0
        for _ in range(batches):
            # the member's session (6 s) outlasts a slow batch: sends and commits wait for the ISR
            assert master.request(Service.MASTER, Method.CONSUMER_HEARTBEAT_C2M, master_pb.HeartRequestC2M(
                clientId="tc-consumer", groupName=group, reportSubscribeInfo=False)).success
            for _ in range(batch):
                data = f"m{sent}".encode()
                assert broker.request(Service.BROKER_WRITE, Method.SEND_MESSAGE_P2B, broker_pb.SendMessageRequestP2B(
                    clientId="tc-producer", topicName=topic, partitionId=0, data=data, flag=0,
                    checkSum=checksum(data), sentAddr=0x7F000001)).success
                sent += 1
            while acknowledged < sent:
                got = broker.request(Service.BROKER_READ, Method.GET_MESSAGES_C2B, broker_pb.GetMessageRequestC2B(
                    clientId="tc-consumer", partitionId=0, groupName=group, topicName=topic,
                    lastPackConsumed=False))
                if not got.success:  # 404 until the high watermark moved
                    assert got.errCode == 404, got
                    time.sleep(0.05)
                    continue
                committed = broker.request(Service.BROKER_READ, Method.CONSUMER_COMMIT_C2B,
                                           broker_pb.CommitOffsetRequestC2B(
                                               clientId="tc-consumer", topicName=topic, partitionId=0,
                                               groupName=group, lastPackConsumed=True))
                assert committed.success, committed
                acknowledged = committed.currOffset // INDEX_BYTES
        cluster.kill(c)  # right after the last acknowledged commit
    wait_for(lambda: coordinator(cluster) not in (c, -1), 60, what="a new group coordinator")

    errors: list[str] = []

    def committed_offset() -> int | None:
        """The group's committed offset from the survivor that coordinates it (Kafka's OffsetFetch v5);
        -2 while none answers it yet (the coordinator is still moving or loading)."""
        for broker_id in others:
            try:
                with WireClient.connect(cluster.brokers[broker_id].bootstrap, timeout=10) as client:
                    response = client.request(OffsetFetchRequest(group_id=group, topics=None), 5)
            except (OSError, ConnectionClosed) as e:
                errors.append(f"broker {broker_id}: {e!r}")
                continue
            if response.error_code != 0:
                errors.append(f"broker {broker_id}: {ErrorCode(response.error_code).name}")
                continue
            offsets = [p.committed_offset for t in response.topics if t.name == topic for p in t.partitions]
            return offsets[0] if offsets and offsets[0] >= 0 else None
        return -2

    try:
        survived = wait_for(lambda: (o := committed_offset()) != -2 and [o], 60, what="the group's offsets")[0]
    except AssertionError as e:
        raise AssertionError(f"{e}: {errors[-3:]}") from None
    cluster.restart(c)
    wait_for(lambda: len(cluster.live_ids()) == 3, 60, what="every broker registered again")
    wait_for(lambda: len(cluster.state("__consumer_offsets")["isr"]) == 3, 60, what="the offsets topic's full ISR")
    return Round(c, acknowledged, survived)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tidelog-tubemq-cluster-") as root:
        cluster, endpoints = tubemq_cluster(Path(root))
        try:
            rounds = []
            for n in range(options.rounds):
                r = one_round(cluster, endpoints, n)
                rounds.append(r)
                print(f"round {n}: killed broker {r.victim} after the commit of {r.acknowledged}; "
                      f"committed after the failover: {r.survived} ({'LOST' if r.lost else 'kept'})", flush=True)
        finally:
            for i in cluster.brokers:
                cluster.kill(i)
            cluster.stop()
    lost = sum(r.lost for r in rounds)
    print(f"{len(rounds)} kills of the coordinator right after an acknowledged TubeMQ commit: {lost} commit(s) lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
