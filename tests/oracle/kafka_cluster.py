"""Apache Kafka as a cluster of N KRaft nodes on loopback, each both broker and controller (a static
quorum: ``controller.quorum.voters`` names every node), for comparing Tidelog's cluster mode with
Kafka's (``bench/cluster.py``).

    with KafkaCluster(tmp_path, nodes=3, classpath=maven.build()) as kafka:
        Producer({"bootstrap.servers": kafka.bootstrap()})

Each node is a :class:`tests.oracle.kafka.KafkaProcess` (node ids ``1..N``) with its ports picked
before any starts (the voters list needs them all) and one cluster id for every log dir. The nodes
start together, in threads: a node's start-up waits for the quorum, which needs a majority running.
``kill(i)`` is kill -9, ``stop(i)`` SIGTERM, ``restart(i)`` starts node ``i`` again on its data.
The heap defaults to 512 MiB per node (the scripts' 1 GiB times three is more than a shared
machine needs for a benchmark). Not thread-safe.
"""

from __future__ import annotations

import threading
from pathlib import Path

from tests.oracle.kafka import KafkaProcess, free_port, random_cluster_id

HOST = "127.0.0.1"


class KafkaCluster:
    def __init__(self, root: Path, *, nodes: int = 3, classpath: str | None = None,
                 overrides: dict[str, str] | None = None, heap: list[str] | None = None) -> None:
        self.root = Path(root)
        self.classpath = classpath
        self.overrides = dict(overrides or {})
        self.heap = heap if heap is not None else ["-Xmx512M", "-Xms512M"]
        self.nodes: dict[int, KafkaProcess] = {}
        cluster_id = random_cluster_id()
        ports = {i: (free_port(), free_port()) for i in range(1, nodes + 1)}
        voters = ",".join(f"{i}@{HOST}:{controller}" for i, (_, controller) in ports.items())
        for i, (port, controller) in ports.items():
            node = KafkaProcess(self.root / f"kafka-{i}", port=port, classpath=classpath, heap=self.heap,
                                overrides={"node.id": str(i), "controller.quorum.voters": voters, **self.overrides})
            node.controller_port = controller
            node.cluster_id = cluster_id
            self.nodes[i] = node

    def start(self) -> KafkaCluster:
        errors: list[BaseException] = []

        def run(node: KafkaProcess) -> None:
            try:
                node.start()
            except BaseException as e:  # reported below, after every thread ended
                errors.append(e)

        threads = [threading.Thread(target=run, args=(node,)) for node in self.nodes.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.stop()
            raise RuntimeError(f"Kafka cluster did not start: {errors[0]}")
        return self

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def bootstrap(self, *ids: int) -> str:
        """``bootstrap.servers`` of the given (default: every) live node."""
        return ",".join(self.nodes[i].bootstrap for i in (ids or self.nodes) if self.nodes[i].alive)

    def alive(self, node_id: int) -> bool:
        return self.nodes[node_id].alive

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def stop_node(self, node_id: int) -> None:
        self.nodes[node_id].stop()

    def restart(self, node_id: int) -> KafkaProcess:
        node = self.nodes[node_id]
        if node.alive:
            node.stop()
        return node.start()


__all__ = ["KafkaCluster"]
