"""The in-process API (tidelog.Broker / tidelog.AsyncBroker): a broker from Python in a thread of this
process or as a subprocess, with the clients users bring (confluent-kafka, kafka-python, aiokafka)."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import tidelog

pytestmark = pytest.mark.integration


def _roundtrip(bootstrap: str, topic: str = "embedded", config: dict | None = None) -> bytes:
    conf = {"bootstrap.servers": bootstrap, **(config or {})}
    producer = Producer({**conf, "acks": "all"})
    producer.produce(topic, b"hello")
    assert producer.flush(60) == 0
    consumer = Consumer({**conf, "group.id": "embedded", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        for _ in range(60):
            msg = consumer.poll(1)
            if msg is not None and msg.error() is None:
                return msg.value()
    finally:
        consumer.close()
    raise AssertionError("nothing consumed")


@pytest.mark.parametrize("mode", ["thread", "subprocess"])
def test_a_broker_in_a_with_block(mode: str) -> None:
    with tidelog.Broker(mode=mode) as broker:
        data_dir = broker.data_dir
        assert data_dir is not None and data_dir.is_dir()
        assert broker.bootstrap_servers == f"127.0.0.1:{broker.ports['kafka']}"
        assert broker.ports["listeners"] == {"PLAINTEXT": broker.ports["kafka"]}
        assert _roundtrip(broker.bootstrap_servers) == b"hello"
        if mode == "subprocess":
            pid = broker.proc.pid  # type: ignore[union-attr]
    assert not broker.running
    assert not data_dir.exists()  # the temporary data directory went with the broker
    if mode == "subprocess":
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_two_brokers_side_by_side_with_every_listener_on_a_free_port(tmp_path: Path) -> None:
    with tidelog.Broker(http=True, data_dir=tmp_path / "a") as a, \
            tidelog.Broker(mode="subprocess", http=True, data_dir=tmp_path / "b") as b:
        assert {a.ports["kafka"], a.ports["http"]}.isdisjoint({b.ports["kafka"], b.ports["http"]})
        assert a.http_url and b.http_url and a.http_url != b.http_url
        assert _roundtrip(a.bootstrap_servers) == _roundtrip(b.bootstrap_servers) == b"hello"
    assert (tmp_path / "a").is_dir()  # a data directory given by the caller stays


@pytest.mark.parametrize("mode", ["thread", "subprocess"])
def test_a_taken_port_is_an_error_naming_the_setting(mode: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        broker = tidelog.Broker(mode=mode, port=taken.getsockname()[1])
        with pytest.raises(tidelog.BrokerError, match="in use.*listeners"):
            broker.start()
    assert not broker.running


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL", "SSL"])
def test_sasl_and_tls_brokers_and_their_client_config(protocol: str) -> None:
    with tidelog.Broker(security_protocol=protocol, users={"alice": "alice-secret"}) as broker:
        conf = broker.client_config()
        assert conf["bootstrap.servers"] == broker.bootstrap_servers
        assert _roundtrip(broker.bootstrap_servers, config={k: v for k, v in conf.items()
                                                            if k != "bootstrap.servers"}) == b"hello"


def test_kafka_python_against_a_thread_broker() -> None:
    kafka = pytest.importorskip("kafka")
    with tidelog.Broker() as broker:
        producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
        producer.send("kp", b"from kafka-python").get(timeout=60)
        producer.close()
        consumer = kafka.KafkaConsumer("kp", bootstrap_servers=broker.bootstrap_servers,
                                       auto_offset_reset="earliest", consumer_timeout_ms=30_000)
        values = [next(consumer).value]
        consumer.close()
    assert values == [b"from kafka-python"]


def test_async_broker_with_aiokafka() -> None:
    aiokafka = pytest.importorskip("aiokafka")

    async def main() -> bytes:
        async with tidelog.AsyncBroker() as broker:
            producer = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
            await producer.start()
            try:
                await producer.send_and_wait("aio", b"from aiokafka")
            finally:
                await producer.stop()
            consumer = aiokafka.AIOKafkaConsumer("aio", bootstrap_servers=broker.bootstrap_servers,
                                                 auto_offset_reset="earliest")
            await consumer.start()
            try:
                msg = await asyncio.wait_for(consumer.getone(), 60)
            finally:
                await consumer.stop()
            return msg.value

    assert asyncio.run(main()) == b"from aiokafka"


def test_bad_arguments_are_refused_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="mode must be one of thread, subprocess"):
        tidelog.Broker(mode="process")
    with pytest.raises(ValueError, match="security_protocol"):
        tidelog.Broker(security_protocol="TLS")
    with pytest.raises(tidelog.BrokerError, match="log.retention.hours"):
        tidelog.Broker(config={"log.retention.hours": "soon"}).start()
