"""The torn-transaction scenarios of :mod:`tests.fault.lab.torn` against Apache Kafka 4.4 (the oracle,
:mod:`tests.oracle.kafka`: one KRaft node) behind one client proxy, to compare with Tidelog::

    python -m tests.fault.lab.torn_oracle                # all six
    python -m tests.fault.lab.torn_oracle 2:end-txn 1:produce-early

Kafka's first start compiles tests/java and downloads into ~/.m2 (minutes); later ones take ~40 s.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.fault.lab.nemesis import CLIENTS, node
from tests.fault.lab.tcp_proxy import ProxyNetwork, TcpProxy
from tests.fault.lab.torn import delayed_end_txn, delayed_produce
from tests.oracle import maven
from tests.oracle.kafka import KafkaProcess

NODE = 0  # the oracle's node.id


class OracleCluster:
    """What the scenarios ask of a cluster, answered by one Kafka node."""

    def __init__(self, kafka: KafkaProcess) -> None:
        self.kafka = kafka

    def bootstrap(self) -> str:
        return self.kafka.bootstrap

    def leader(self, topic: str, partition: int = 0) -> int:
        return NODE

    def wait_for_leader(self, topic: str, partition: int = 0) -> None:
        import time

        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.kafka.bootstrap})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            t = admin.list_topics(topic, timeout=10).topics.get(topic)
            if t is not None and t.error is None and partition in t.partitions and t.partitions[partition].leader >= 0:
                return
            time.sleep(0.2)

    def create_topic(self, topic: str, partitions: int, replication_factor: int, config: dict) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.kafka.bootstrap})
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


class OracleNetwork:
    """One client proxy in front of the Kafka node, as ``ClusterNetwork`` has one per broker."""

    def __init__(self, kafka: KafkaProcess) -> None:
        self.net = ProxyNetwork()
        host, _, port = kafka.bootstrap.rpartition(":")
        self.clients: dict[int, TcpProxy] = {NODE: self.net.proxy(node(NODE), (host, int(port)), peer=CLIENTS,
                                                                  frames=True)}

    def client_bootstrap(self) -> str:
        return self.clients[NODE].address

    def close(self) -> None:
        self.net.close()


def main(argv: list[str] | None = None) -> int:
    only = (argv if argv is not None else sys.argv[1:])  # e.g. "2:end-txn"
    kafka = KafkaProcess(Path(tempfile.mkdtemp(prefix="kafka-torn-")), classpath=maven.build())
    kafka.start()
    network = OracleNetwork(kafka)
    try:
        cluster = OracleCluster(kafka)
        scenarios = {"produce": delayed_produce, "produce-early": lambda c, n, tv: delayed_produce(c, n, tv, early=True),
                     "end-txn": delayed_end_txn}
        for tv in (1, 2):
            for name, run in scenarios.items():
                if not only or f"{tv}:{name}" in only:
                    print(run(cluster, network, tv).describe(), flush=True)  # type: ignore[operator]
    finally:
        network.close()
        kafka.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
