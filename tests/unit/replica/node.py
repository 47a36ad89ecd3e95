"""One broker's replica layer in process, for tests: real logs in a tmp dir, a real (embedded) metadata
store, ManualClock time, timers run by hand."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.unit.storage.conftest import T0, make_batch
from tidelog.cluster.metadata import BrokerInfo, PartitionMetadata, TopicMetadata
from tidelog.cluster.store import EmbeddedStore
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.config import TopicConfig
from tidelog.records import RecordBatchBuilder
from tidelog.replica.manager import ReplicaManager
from tidelog.storage.log_manager import LogManager
from tidelog.testing import ManualClock

ME = 1
OTHER = 2
PID = 4000


class Node:
    """One broker's replica layer over real logs and a real (embedded) metadata store; timers run by hand."""

    def __init__(self, root: Path) -> None:
        self.clock = ManualClock(wall_ms=T0 + 1000)
        root.mkdir(parents=True, exist_ok=True)
        self.store = EmbeddedStore(root)
        self.store.open(BrokerInfo(ME, "localhost", 9092))
        self.topic_configs = TopicConfigs(TopicConfig())
        self.log_dir = root / "logs"
        self.logs = LogManager([self.log_dir], self.clock,
                               topic_config=lambda t: self.topic_configs.for_topic(self.store.image, t))
        self.logs.startup()
        self.timers: list[tuple[int, Callable[[], None]]] = []
        self.replicas = ReplicaManager(ME, self.logs, self.store, self.topic_configs, self.clock, self._schedule)
        self.replicas.start()

    def _schedule(self, delay_ms: float, fn: Callable[[], None]) -> Any:
        self.timers.append((self.clock.monotonic_ms() + int(delay_ms), fn))

    def advance(self, ms: int) -> None:
        """Move the clock and run the timers now due."""
        self.clock.advance(ms)
        due = [t for t in self.timers if t[0] <= self.clock.monotonic_ms()]
        self.timers = [t for t in self.timers if t[0] > self.clock.monotonic_ms()]
        for _, fn in due:
            fn()

    def create(self, name: str, partitions: int = 1, *, leader: int = ME, replicas: tuple[int, ...] = (ME,),
               leader_epoch: int = 0, **configs: str) -> None:
        parts = tuple(PartitionMetadata(p, leader, leader_epoch, replicas, replicas) for p in range(partitions))
        topic = TopicMetadata(name, uuid.uuid4(), parts, {k.replace("_", "."): v for k, v in configs.items()})
        image = self.store.image
        self.store.publish(replace(image, topics={**image.topics, name: topic}))

    def delete(self, name: str) -> None:
        image = self.store.image
        self.store.publish(replace(image, topics={k: v for k, v in image.topics.items() if k != name}))

    def alter(self, name: str, **configs: str) -> None:
        image = self.store.image
        topic = replace(image.topics[name], configs={k.replace("_", "."): v for k, v in configs.items()})
        self.store.publish(replace(image, topics={**image.topics, name: topic}))

    def produce(self, topic: str, n: int = 1, *, partition: int = 0, ts: int = T0, value: bytes = b"v") -> int:
        """n records in one batch; returns the first offset."""
        return self.replicas.append_records(topic, partition, make_batch(n, ts=ts, value=value), acks=1).first_offset

    def produce_transactional(self, topic: str, n: int, seq: int, partition: int = 0) -> int:
        builder = RecordBatchBuilder(producer_id=PID, producer_epoch=0, base_sequence=seq, is_transactional=True)
        for i in range(n):
            builder.append(T0 + i, b"k", b"t")
        return self.replicas.append_records(topic, partition, bytearray(builder.build()), acks=1).first_offset


__all__ = ["ME", "OTHER", "PID", "Node"]
