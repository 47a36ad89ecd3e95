"""A ZooKeeper and N ``tidelog serve`` processes on loopback, for the cluster-mode tests, the fault
tests and ``bench/cluster.py``: one harness, so each of them does not grow its own.

``LocalCluster(root, zookeeper=..., brokers=3, overrides={...}).start()`` starts the ZooKeeper it is
given (if it is not running yet: a :class:`tidelog.cli.zookeeper.ZooKeeperProcess`, fetched from Maven
Central, is the one ``tidelog dev-cluster`` and the pytest plugin use) and brokers ``1..N`` with ``broker.id=i`` and
``zookeeper.connect=<zookeeper><chroot>``; ``overrides`` go to every broker, ``per_broker[i]`` to
broker ``i`` only. ``self.zk`` is a kazoo client on the same chroot, for reading Kafka's
ZooKeeper layout (``state()``, ``controller()``, ``live_ids()``).
"""

from __future__ import annotations

import json
import signal
import struct
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from tidelog.testing.broker import BrokerProcess

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 60.0, what: str = "condition",
             interval: float = 0.05) -> T:
    """Poll ``predicate`` until it returns something truthy (and return that); AssertionError after
    ``timeout`` seconds naming ``what``. The default is generous: a wait ends as soon as it is met, and
    a loaded 2-core machine running several clusters makes 20 s waits time out."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def log_batches(data_dir: Path, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    """(base offset, bytes) of every whole batch in a partition's segment files, as on disk."""
    out = []
    for path in sorted((Path(data_dir) / f"{topic}-{partition}").glob("*.log")):
        data = path.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            if length <= 0 or pos + 12 + length > len(data):
                break
            out.append((base, data[pos:pos + 12 + length]))
            pos += 12 + length
    return out


def metadata_brokers(bootstrap: str) -> set[int]:
    """The broker ids one broker's Metadata lists (empty while it does not answer)."""
    from confluent_kafka.admin import AdminClient

    try:
        return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5).brokers)
    except Exception:  # not answering yet
        return set()


class ZooKeeper(Protocol):
    """The ZooKeeper a cluster uses (:class:`tidelog.cli.zookeeper.ZooKeeperProcess`)."""

    @property
    def connect(self) -> str:
        """``host:port``, without chroot."""
        ...

    @property
    def alive(self) -> bool: ...

    def start(self) -> object: ...

    def stop(self) -> object: ...


class LocalCluster:
    """ZooKeeper plus brokers 1..N (see the module docstring). Not thread-safe."""

    def __init__(self, root: Path, *, zookeeper: ZooKeeper, brokers: int = 3, chroot: str = "/tidelog",
                 session_ms: int = 4000, overrides: dict[str, str] | None = None,
                 per_broker: dict[int, dict[str, str]] | None = None) -> None:
        self.root = Path(root)
        self.count = brokers
        self.chroot = chroot
        self.session_ms = session_ms
        self.overrides = dict(overrides or {})
        self.per_broker = {i: dict(v) for i, v in (per_broker or {}).items()}
        self.zookeeper = zookeeper
        self.brokers: dict[int, BrokerProcess] = {}
        self.zk: Any = None

    @property
    def connect(self) -> str:
        return self.zookeeper.connect + self.chroot

    def broker_overrides(self, broker_id: int) -> dict[str, str]:
        return {"zookeeper.connect": self.connect, "broker.id": str(broker_id),
                "zookeeper.session.timeout.ms": str(self.session_ms),
                **self.overrides, **self.per_broker.get(broker_id, {})}

    def start(self) -> LocalCluster:
        from kazoo.client import KazooClient

        if not self.zookeeper.alive:
            self.zookeeper.start()
        for broker_id in range(1, self.count + 1):
            self.brokers[broker_id] = BrokerProcess(
                self.root / f"broker-{broker_id}", overrides=self.broker_overrides(broker_id)).start()
        self.zk = KazooClient(hosts=self.connect)
        self.zk.start(10)
        wait_for(lambda: len(self.live_ids()) == self.count, what=f"{self.count} registered brokers")
        self.wait_metadata_brokers(range(1, self.count + 1))
        return self

    def wait_metadata_brokers(self, ids: Iterable[int], timeout: float = 60.0) -> None:
        """Wait until each broker's own Metadata lists every broker in ``ids`` (a broker learns of the
        others from ZooKeeper a moment after they registered; until then it refuses, e.g., a
        replication factor above the brokers it knows)."""
        wanted = set(ids)
        for i in sorted(wanted):
            if self.brokers[i].alive:
                wait_for(lambda i=i: wanted <= self._metadata_brokers(i), timeout,
                         what=f"broker {i}'s metadata to list brokers {sorted(wanted)}", interval=0.2)

    def _metadata_brokers(self, broker_id: int) -> set[int]:
        return metadata_brokers(self.bootstrap(broker_id))

    def stop(self) -> None:
        self.stop_brokers()
        self.zookeeper.stop()

    def stop_brokers(self) -> None:
        """Stop every broker and the kazoo client, leaving ZooKeeper running (shared by other clusters)."""
        if self.zk is not None:
            self.zk.stop()
            self.zk.close()
            self.zk = None
        for broker in self.brokers.values():
            if broker.alive:  # a paused broker cannot shut down, nor answer another's controlled shutdown
                broker.proc.send_signal(signal.SIGCONT)
        for broker in self.brokers.values():
            broker.stop()

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- clients' view ---------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``bootstrap.servers`` of every live broker (as :class:`tidelog.Broker` names it)."""
        return self.bootstrap()

    def bootstrap(self, *ids: int) -> str:
        """``bootstrap.servers`` of the given (default: every) live broker."""
        return ",".join(self.brokers[i].bootstrap for i in (ids or self.brokers) if self.brokers[i].alive)

    def admin(self, *ids: int):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap(*ids)})

    def create_topic(self, topic: str, partitions: int = 1, replication_factor: int | None = None,
                     config: dict[str, str] | None = None, timeout: float = 60.0) -> None:
        """Create through AdminClient, then wait until every partition has a leader and every live
        replica hosts its log (``timeout`` generous: a loaded 2-core machine running several clusters has
        taken over 20 s to answer)."""
        from confluent_kafka.admin import NewTopic

        rf = self.count if replication_factor is None else replication_factor
        from confluent_kafka import KafkaError, KafkaException

        admin = self.admin()  # kept referenced: a collected AdminClient fails its futures with _DESTROY
        deadline = time.monotonic() + timeout
        while True:
            try:
                admin.create_topics([NewTopic(topic, partitions, rf, config=config or {})])[topic].result(timeout)
                break
            except KafkaException as e:
                # The broker asked may not know a broker that (re)registered a moment ago: try again
                # while ZooKeeper has enough live brokers for the replication factor.
                lagging = (e.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR
                           and len(self.live_ids()) >= rf and time.monotonic() < deadline)
                if not lagging:
                    raise
                time.sleep(0.2)
        for p in range(partitions):
            state = wait_for(lambda p=p: self.state_or_none(topic, p), timeout, what=f"state of {topic}-{p}")
            replicas = self.assignment(topic)[p]
            wait_for(lambda p=p, r=replicas: all((self.brokers[i].data_dir / f"{topic}-{p}").is_dir()
                                                 for i in r if self.brokers[i].alive),
                     timeout, what=f"logs of {topic}-{p}")
            assert state["leader"] in replicas

    # --- ZooKeeper's view ------------------------------------------------------------------------

    def live_ids(self) -> list[int]:
        return sorted(int(i) for i in self.zk.get_children("/brokers/ids")) if self.zk.exists("/brokers/ids") else []

    def controller(self) -> int | None:
        """The controller's broker id, None while there is none (between elections)."""
        from kazoo.exceptions import NoNodeError

        try:
            return json.loads(self.zk.get("/controller")[0])["brokerid"]
        except NoNodeError:
            return None

    def assignment(self, topic: str) -> dict[int, list[int]]:
        data = json.loads(self.zk.get(f"/brokers/topics/{topic}")[0])
        return {int(p): replicas for p, replicas in data["partitions"].items()}

    def state(self, topic: str, partition: int = 0) -> dict:
        """The partition-state znode: leader, leader_epoch, isr, controller_epoch."""
        return json.loads(self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])

    def state_or_none(self, topic: str, partition: int = 0) -> dict | None:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        return json.loads(self.zk.get(path)[0]) if self.zk.exists(path) else None

    def leader(self, topic: str, partition: int = 0) -> int:
        return self.state(topic, partition)["leader"]

    def wait_for_leader(self, topic: str, partition: int = 0, *, not_in: Iterable[int] = (),
                        timeout: float = 60.0) -> int:
        """Wait until the partition has a live leader not in ``not_in``; returns its id."""
        excluded = set(not_in)

        def elected():
            leader = self.leader(topic, partition)
            return leader if leader >= 0 and leader not in excluded and self.brokers[leader].alive else None

        return wait_for(elected, timeout, what=f"a new leader of {topic}-{partition}")

    # --- replicas on disk ------------------------------------------------------------------------

    def log_batches(self, broker_id: int, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
        return log_batches(self.brokers[broker_id].data_dir, topic, partition)

    def wait_replicas_identical(self, topic: str, partition: int = 0, ids: Iterable[int] | None = None,
                                timeout: float = 60.0) -> list[tuple[int, bytes]]:
        """Wait until every replica's log holds the same batches, byte for byte; returns them."""
        members = list(ids) if ids is not None else self.assignment(topic)[partition]

        def same():
            logs = [self.log_batches(i, topic, partition) for i in members]
            return logs[0] if logs[0] and all(other == logs[0] for other in logs[1:]) else None

        return wait_for(same, timeout, what=f"identical replicas of {topic}-{partition} on {members}")

    # --- faults ----------------------------------------------------------------------------------

    def pause(self, broker_id: int) -> None:
        """SIGSTOP: the broker stops answering but keeps its sockets and session (until it expires)."""
        self.brokers[broker_id].proc.send_signal(signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        self.brokers[broker_id].proc.send_signal(signal.SIGCONT)

    def kill(self, broker_id: int) -> None:
        """SIGKILL: no shutdown work, the session expires after ``session_ms``."""
        self.brokers[broker_id].kill()

    def restart(self, broker_id: int) -> BrokerProcess:
        """Start a stopped or killed broker again on the same data directory (and port)."""
        broker = self.brokers[broker_id]
        if broker.alive:
            broker.stop()
        return broker.start()


__all__ = ["LocalCluster", "log_batches", "metadata_brokers", "wait_for"]
