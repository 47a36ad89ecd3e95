"""Fifty tests, each with a fresh broker of its own (tidelog_broker_function): what an isolated broker
per test costs. Run with --fresh-brokers (tests/conftest.py)."""

import pytest


@pytest.mark.parametrize("n", range(50))
def test_fresh_broker(tidelog_broker_function, kafka_topic, kafka_produce, kafka_consume, n):
    topic = kafka_topic(broker=tidelog_broker_function)
    kafka_produce(topic, [f"record {n}"], broker=tidelog_broker_function)
    assert kafka_consume(topic, 1, broker=tidelog_broker_function)[0].value == f"record {n}".encode()
