"""Two brokers' replica layers in this process, replicating over a real socket, on one ManualClock.

Each :class:`ReplicaBroker` is what a cluster broker composes for replication: real logs in a tmp dir,
a :class:`~tidelog.replica.manager.ReplicaManager` with replication on, and a listener serving Fetch
(the real :class:`~tidelog.server.network.SocketServer` and
:class:`~tidelog.server.handlers.FetchHandler`), so a follower's :mod:`~tidelog.replica.fetcher`
copies its leader through the peer client as between two ``tidelog serve`` processes. They share one
metadata store (an :class:`~tidelog.cluster.store.EmbeddedStore`: the part ZooKeeper plays), into which
a leader's ISR changes are written conditionally on the partition epoch, answered on a later turn of
the loop, as ZooKeeper's ``alter_partition_state`` does. Every wait (ISR checks, fetch backoffs, long
polls, acks=all timeouts) is on the shared :class:`~tidelog.testing.ManualClock`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tidelog.cluster.metadata import BrokerInfo, PartitionMetadata, TopicMetadata
from tidelog.cluster.store import EmbeddedStore
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.config import TopicConfig
from tidelog.listener import Listener
from tidelog.replica.manager import ReplicaManager
from tidelog.replica.replication import ReplicationSettings
from tidelog.server.dispatcher import HandlerRegistry
from tidelog.server.fetch_session import FetchSessionCache
from tidelog.server.handlers import FetchHandler
from tidelog.server.network import ConnectionSettings, SocketServer
from tidelog.storage.log_manager import LogManager
from tidelog.testing import ManualClock

LISTENER = "REPLICATION"


class ReplicaBroker:
    def __init__(self, broker_id: int, root: Path, store: EmbeddedStore, clock: ManualClock,
                 settings: ReplicationSettings) -> None:
        self.broker_id = broker_id
        self.store = store
        self.clock = clock
        self.topic_configs = TopicConfigs(TopicConfig())
        self.logs = LogManager([root / f"broker-{broker_id}"], clock,
                               topic_config=lambda t: self.topic_configs.for_topic(store.image, t))
        self.logs.startup()
        self.replicas = ReplicaManager(broker_id, self.logs, store, self.topic_configs, clock, clock.call_later,
                                       replication=settings, alter_isr=self._alter_isr)
        handlers = HandlerRegistry()
        handlers.add(FetchHandler(self.replicas, FetchSessionCache(100, clock)))
        self._handlers = handlers
        self.network: SocketServer | None = None
        self.port = 0
        self.isr_writes: list[tuple[int, ...]] = []

    async def serve(self) -> None:
        """Open the listener (again on the same port after :meth:`stop_serving`)."""
        self.network = SocketServer(self._handlers, self.clock, ConnectionSettings())
        await self.network.bind((Listener(LISTENER, "127.0.0.1", self.port),))
        self.port = self.network.bound[LISTENER][1]
        await self.network.start_serving()

    async def stop_serving(self) -> None:
        """Close the listener and its connections (the followers' fetches fail)."""
        if self.network is not None:
            self.network.close()
            await self.network.wait_closed()
            self.network = None

    def info(self) -> BrokerInfo:
        return BrokerInfo(self.broker_id, "127.0.0.1", self.port, None, ((LISTENER, "127.0.0.1", self.port),))

    def _alter_isr(self, topic: str, partition: int, new: PartitionMetadata, on_done: Callable[[bool], None]) -> None:
        def write() -> None:
            image = self.store.image
            t = image.topics.get(topic)
            if t is None or t.partitions[partition].partition_epoch != new.partition_epoch:
                on_done(False)
                return
            parts = list(t.partitions)
            parts[partition] = replace(new, partition_epoch=new.partition_epoch + 1)
            self.isr_writes.append(new.isr)
            self.store.publish(replace(image, topics={**image.topics, topic: replace(t, partitions=tuple(parts))}))
            on_done(True)

        asyncio.get_running_loop().call_soon(write)

    async def close(self) -> None:
        await self.stop_serving()
        if self.replicas.replication is not None:
            await self.replicas.replication.close()
        self.replicas.purgatory.complete_all()
        self.logs.shutdown()


class ReplicaPair:
    """Broker 1 and broker 2, started: ``create`` a topic of both, led by one of them."""

    def __init__(self, root: Path, clock: ManualClock | None = None, **settings: int) -> None:
        self.clock = clock or ManualClock()
        root.mkdir(parents=True, exist_ok=True)
        self.store = EmbeddedStore(root / "metadata")
        s = ReplicationSettings(listener_name=LISTENER, **settings)
        self.brokers = {i: ReplicaBroker(i, root, self.store, self.clock, s) for i in (1, 2)}

    async def start(self) -> None:
        for b in self.brokers.values():
            await b.serve()
        self.store.open(self.brokers[1].info())
        image = self.store.image
        self.store.publish(replace(image, brokers={b.broker_id: b.info() for b in self.brokers.values()}))
        for b in self.brokers.values():
            b.replicas.start()

    async def close(self) -> None:
        for b in self.brokers.values():
            await b.close()
        self.store.close()

    def create(self, name: str, leader: int = 1) -> None:
        replicas = (leader, 3 - leader)
        topic = TopicMetadata(name, uuid.uuid4(), (PartitionMetadata(0, leader, 0, replicas, replicas),), {})
        image = self.store.image
        self.store.publish(replace(image, topics={**image.topics, name: topic}))

    def state(self, name: str) -> PartitionMetadata:
        return self.store.image.topics[name].partitions[0]

    def log_end(self, broker_id: int, name: str) -> int:
        plog = self.brokers[broker_id].logs.get_log(name, 0)
        return -1 if plog is None else plog.log_end_offset

    async def settle(self, real_s: float = 0.2) -> None:
        """Let the loop run what is ready, and the sockets carry what was sent (a little real time)."""
        for _ in range(20):
            await asyncio.sleep(0)
        await asyncio.sleep(real_s)

    async def advance(self, ms: int) -> None:
        await self.settle(0.05)
        self.clock.advance(ms)
        await self.settle(0.05)

    @staticmethod
    async def wait_until(predicate: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
        """Until ``predicate()`` holds, in real time (socket round trips); fails naming ``what``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not predicate():
            if loop.time() > deadline:
                raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
            await asyncio.sleep(0.01)


__all__ = ["LISTENER", "ReplicaBroker", "ReplicaPair"]
