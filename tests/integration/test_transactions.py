"""Transactional producers of confluent-kafka (librdkafka), kafka-python and aiokafka against a real
broker: commit, abort, send_offsets_to_transaction, fencing of a second instance, read_committed vs
read_uncommitted readers, a transaction timeout, and a broker restart in the middle of a producer's life."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tidelog.testing import BrokerProcess

pytestmark = pytest.mark.integration
CLIENTS = ["confluent", "kafka-python", "aiokafka"]
_names = itertools.count()


BROKER_OVERRIDES = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "300"}


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


# ------------------------------------------------------------------------ one API, three clients


class ConfluentTxn:
    def __init__(self, bootstrap: str, txn_id: str, **config) -> None:
        self.bootstrap = bootstrap
        self.p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **config})

    def init(self) -> None:
        self.p.init_transactions(20)

    def begin(self) -> None:
        self.p.begin_transaction()

    def send(self, topic: str, value: bytes, partition: int = 0) -> None:
        self.p.produce(topic, value, key=value, partition=partition)

    def flush(self) -> None:
        self.p.flush(10)

    def send_offsets(self, topic: str, partition: int, offset: int, group: str) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group})
        try:
            self.p.send_offsets_to_transaction([TopicPartition(topic, partition, offset)],
                                               consumer.consumer_group_metadata(), 20)
        finally:
            consumer.close()

    def commit(self) -> None:
        self.p.commit_transaction(20)

    def abort(self) -> None:
        self.p.abort_transaction(20)

    def close(self) -> None:
        self.p.flush(1)


class KafkaPythonTxn:
    def __init__(self, bootstrap: str, txn_id: str) -> None:
        from kafka import KafkaProducer
        self.p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, request_timeout_ms=10_000)

    def init(self) -> None:
        self.p.init_transactions()

    def begin(self) -> None:
        self.p.begin_transaction()

    def send(self, topic: str, value: bytes, partition: int = 0) -> None:
        self.p.send(topic, value=value, key=value, partition=partition)

    def flush(self) -> None:
        self.p.flush(10)

    def send_offsets(self, topic: str, partition: int, offset: int, group: str) -> None:
        from kafka import TopicPartition as KTP
        from kafka.structs import OffsetAndMetadata
        self.p.send_offsets_to_transaction({KTP(topic, partition): OffsetAndMetadata(offset, None, -1)}, group)

    def commit(self) -> None:
        self.p.commit_transaction()

    def abort(self) -> None:
        self.p.abort_transaction()

    def close(self) -> None:
        self.p.close(timeout=5)


class AioKafkaTxn:
    """aiokafka's asyncio producer, driven from the test on a loop of its own."""

    def __init__(self, bootstrap: str, txn_id: str) -> None:
        from aiokafka import AIOKafkaProducer
        self.loop = asyncio.new_event_loop()
        self.p = self.loop.run_until_complete(self._make(AIOKafkaProducer, bootstrap, txn_id))
        self.pending: list = []

    @staticmethod
    async def _make(cls, bootstrap: str, txn_id: str):
        return cls(bootstrap_servers=bootstrap, transactional_id=txn_id, request_timeout_ms=10_000)

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    def init(self) -> None:
        self.run(self.p.start())  # start() initialises the transactional producer

    def begin(self) -> None:
        self.run(self.p.begin_transaction())

    def send(self, topic: str, value: bytes, partition: int = 0) -> None:
        self.pending.append(self.run(self.p.send(topic, value=value, key=value, partition=partition)))

    def flush(self) -> None:
        self.run(self.p.flush())

    def send_offsets(self, topic: str, partition: int, offset: int, group: str) -> None:
        from aiokafka import TopicPartition as ATP
        self.run(self.p.send_offsets_to_transaction({ATP(topic, partition): offset}, group))

    def commit(self) -> None:
        self.run(self.p.commit_transaction())

    def abort(self) -> None:
        self.run(self.p.abort_transaction())

    def close(self) -> None:
        try:
            self.run(self.p.stop())
        finally:
            self.loop.close()


def producer(kind: str, bootstrap: str, txn_id: str):
    return {"confluent": ConfluentTxn, "kafka-python": KafkaPythonTxn, "aiokafka": AioKafkaTxn}[kind](bootstrap, txn_id)


# ----------------------------------------------------------------------------------- readers


def read(bootstrap: str, topic: str, isolation: str, partitions: int = 1) -> list[bytes]:
    """Every value of the topic a consumer with this isolation level gets, up to the current end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"), "isolation.level": isolation,
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values, at_end = [], set()
        deadline = time.monotonic() + 20
        while len(at_end) < partitions and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    at_end.add(m.partition())
                continue
            values.append(m.value())
        assert len(at_end) == partitions, "did not reach the end of the topic"
        return values
    finally:
        consumer.close()


def committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    finally:
        consumer.close()


# -------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("kind", CLIENTS)
def test_commit_and_abort(broker: BrokerProcess, kind: str) -> None:
    topic = unique(f"txn-{kind}")
    p = producer(kind, broker.bootstrap, unique("tx"))
    try:
        p.init()
        p.begin()
        for v in (b"c1", b"c2", b"c3"):
            p.send(topic, v)
        p.commit()
        p.begin()
        p.send(topic, b"a1")
        p.send(topic, b"a2")
        p.flush()
        p.abort()
        p.begin()
        p.send(topic, b"c4")
        p.commit()
    finally:
        p.close()
    assert read(broker.bootstrap, topic, "read_committed") == [b"c1", b"c2", b"c3", b"c4"]
    assert read(broker.bootstrap, topic, "read_uncommitted") == [b"c1", b"c2", b"c3", b"a1", b"a2", b"c4"]


@pytest.mark.parametrize("kind", CLIENTS)
def test_send_offsets_to_transaction(broker: BrokerProcess, kind: str) -> None:
    topic, group = unique(f"offsets-{kind}"), unique("group")
    p = producer(kind, broker.bootstrap, unique("tx"))
    try:
        p.init()
        p.begin()
        p.send(topic, b"out")
        p.send_offsets(topic, 0, 7, group)
        p.commit()
        assert committed(broker.bootstrap, group, topic) == 7
        p.begin()
        p.send(topic, b"never")
        p.send_offsets(topic, 0, 9, group)
        p.abort()
        assert committed(broker.bootstrap, group, topic) == 7  # the aborted commit never shows
    finally:
        p.close()


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_second_instance_fences_the_first(broker: BrokerProcess, kind: str) -> None:
    topic, txn_id = unique(f"fence-{kind}"), unique("tx")
    zombie = producer(kind, broker.bootstrap, txn_id)
    successor = producer(kind, broker.bootstrap, txn_id)
    try:
        zombie.init()
        zombie.begin()
        zombie.send(topic, b"zombie")
        zombie.flush()
        successor.init()  # aborts the zombie's open transaction and bumps the epoch
        successor.begin()
        successor.send(topic, b"successor")
        successor.commit()
        with pytest.raises(Exception) as e:
            zombie.send(topic, b"zombie-2")
            zombie.commit()
        assert "fenc" in str(e.value).lower() or "epoch" in str(e.value).lower() or type(e.value).__name__ in (
            "ProducerFenced", "ProducerFencedError", "InvalidProducerEpochError"), repr(e.value)
    finally:
        for p in (zombie, successor):
            try:
                p.close()
            except Exception:
                pass
    assert read(broker.bootstrap, topic, "read_committed") == [b"successor"]
    assert b"zombie" in read(broker.bootstrap, topic, "read_uncommitted")


def test_a_transaction_open_longer_than_its_timeout_is_aborted(broker: BrokerProcess) -> None:
    topic = unique("timeout")
    p = ConfluentTxn(broker.bootstrap, unique("tx"), **{"transaction.timeout.ms": 1000})
    p.init()
    p.begin()
    p.send(topic, b"too-slow")
    p.flush()
    time.sleep(2.5)  # the broker checks every 300 ms here
    assert read(broker.bootstrap, topic, "read_committed") == []  # the LSO moved past the abort marker
    with pytest.raises(KafkaException) as e:
        p.commit()
    # As with Kafka: the abort bumped the epoch, so the late producer learns it was fenced.
    assert e.value.args[0].fatal() and "fenced" in e.value.args[0].str()


def test_transactions_carry_on_across_a_broker_restart(tmp_path) -> None:
    with BrokerProcess(tmp_path) as broker:
        txn_id, topic = unique("tx"), unique("restart")
        p = ConfluentTxn(broker.bootstrap, txn_id)
        p.init()
        p.begin()
        p.send(topic, b"before")
        p.commit()
        p.begin()
        p.send(topic, b"open-at-crash")
        p.flush()
        broker.kill()  # kill -9 with a transaction open
        broker.start()
        successor = ConfluentTxn(broker.bootstrap, txn_id)
        successor.init()  # aborts what the dead instance left open
        successor.begin()
        successor.send(topic, b"after")
        successor.commit()
        assert read(broker.bootstrap, topic, "read_committed") == [b"before", b"after"]
        assert read(broker.bootstrap, topic, "read_uncommitted") == [b"before", b"open-at-crash", b"after"]
