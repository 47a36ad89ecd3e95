"""The strings TubeMQ's messages carry for brokers, partitions, subscriptions and topics."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.protocol.tubemq.notation import (
    BrokerAddress,
    NotationError,
    PartitionRef,
    SubscribeInfo,
    failure_info,
    parse_broker,
    parse_partition,
    parse_subscribe_info,
    parse_topic_condition,
    topic_info,
)

BROKER = BrokerAddress(7, "10.0.0.1", 8123)


def test_the_formats_tubemqs_clients_parse() -> None:
    part = PartitionRef(BROKER, "orders", 3)
    assert str(BROKER) == "7:10.0.0.1:8123"
    assert str(part) == "7:10.0.0.1:8123#orders:3"
    assert part.key == "7:orders:3"
    assert str(SubscribeInfo("c1", "g", part)) == "c1@g#7:10.0.0.1:8123#orders:3"
    assert topic_info("orders", 7, 6, 1047552) == "orders#7:6:1#1047552"
    assert failure_info(411, part) == "411:7:10.0.0.1:8123#orders:3"
    assert parse_topic_condition("orders#a,b,") == ("orders", frozenset({"a", "b"}))


names = st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True)


@given(broker_id=st.integers(0, 2**31 - 1), host=names, port=st.integers(0, 65535), topic=names,
       partition=st.integers(0, 10**6), consumer=st.from_regex(r"[A-Za-z0-9._-]{1,30}", fullmatch=True), group=names)
def test_strings_round_trip(broker_id: int, host: str, port: int, topic: str, partition: int, consumer: str,
                            group: str) -> None:
    broker = BrokerAddress(broker_id, host, port)
    part = PartitionRef(broker, topic, partition)
    assert parse_broker(str(broker)) == broker
    assert parse_partition(str(part)) == part
    assert parse_subscribe_info(str(SubscribeInfo(consumer, group, part))) == SubscribeInfo(consumer, group, part)


@pytest.mark.parametrize(("parse", "text"), [
    (parse_broker, "1:host"), (parse_broker, "x:host:1"), (parse_broker, "1::1"), (parse_broker, "1:h:port"),
    (parse_partition, "1:h:1"), (parse_partition, "1:h:1#topic"), (parse_partition, "1:h:1#t:p"),
    (parse_partition, "1:h:1#t:1#x"), (parse_subscribe_info, "c#1:h:1#t:1"), (parse_subscribe_info, "c@g"),
    (parse_topic_condition, "nofilters"),
])
def test_malformed_strings_raise_notation_error(parse, text: str) -> None:
    with pytest.raises(NotationError):
        parse(text)
