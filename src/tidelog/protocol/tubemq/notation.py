"""The strings TubeMQ's messages carry for brokers, topics, partitions and subscriptions.

Separators: ``#`` (segment), ``:`` (attribute), ``,`` (array), ``@`` (group). The formats, as
TubeMQ's code writes them (its proto comments show ``-`` where the code uses ``#``)::

    broker info            brokerId:host:port
    producer topic info    topic#brokerId:partNum:storeNum[,brokerId:partNum:storeNum...]#maxMsgSizeInBytes
    partition string       brokerId:host:port#topic:partitionId
    partition key          brokerId:topic:partitionId
    subscribe info         consumerId@group#brokerId:host:port#topic:partitionId
    heartbeat failure      errCode:brokerId:host:port#topic:partitionId
    topic condition        topic#filter1,filter2

Partition ids: a topic has ``storeNum`` stores of ``partNum`` partitions on a broker, with ids
``storeIndex * 10000 + i``; Tidelog describes every topic as one store, so ids are 0..partNum-1.

Parsers raise :class:`NotationError` (a ValueError) on anything else. Pure functions; immutable values.
"""

from __future__ import annotations

from dataclasses import dataclass

SEGMENT_SEP = "#"
ATTR_SEP = ":"
ARRAY_SEP = ","
GROUP_SEP = "@"


class NotationError(ValueError):
    """A string that is not in the TubeMQ format it should be in."""


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    broker_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.broker_id}{ATTR_SEP}{self.host}{ATTR_SEP}{self.port}"


@dataclass(frozen=True, slots=True)
class PartitionRef:
    """A partition as TubeMQ names it: the broker that serves it, a topic and a partition id."""

    broker: BrokerAddress
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.broker}{SEGMENT_SEP}{self.topic}{ATTR_SEP}{self.partition}"

    @property
    def key(self) -> str:
        """The partition key, ``brokerId:topic:partitionId``."""
        return f"{self.broker.broker_id}{ATTR_SEP}{self.topic}{ATTR_SEP}{self.partition}"


@dataclass(frozen=True, slots=True)
class SubscribeInfo:
    consumer_id: str
    group: str
    partition: PartitionRef

    def __str__(self) -> str:
        return f"{self.consumer_id}{GROUP_SEP}{self.group}{SEGMENT_SEP}{self.partition}"


def _int(text: str, what: str, whole: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise NotationError(f"{what} {text!r} in {whole!r} is not a number") from None


def parse_broker(text: str) -> BrokerAddress:
    parts = text.split(ATTR_SEP)
    if len(parts) != 3 or not parts[1]:
        raise NotationError(f"broker info {text!r} is not brokerId:host:port")
    return BrokerAddress(_int(parts[0], "broker id", text), parts[1], _int(parts[2], "port", text))


def parse_partition(text: str) -> PartitionRef:
    segments = text.split(SEGMENT_SEP)
    if len(segments) != 2:
        raise NotationError(f"partition {text!r} is not brokerId:host:port#topic:partitionId")
    topic, sep, partition = segments[1].rpartition(ATTR_SEP)
    if not sep or not topic:
        raise NotationError(f"partition {text!r} is not brokerId:host:port#topic:partitionId")
    return PartitionRef(parse_broker(segments[0]), topic, _int(partition, "partition id", text))


def parse_subscribe_info(text: str) -> SubscribeInfo:
    consumer, sep, rest = text.partition(SEGMENT_SEP)
    consumer_id, at, group = consumer.rpartition(GROUP_SEP)
    if not sep or not at or not consumer_id:
        raise NotationError(f"subscribe info {text!r} is not consumerId@group#brokerId:host:port#topic:partitionId")
    return SubscribeInfo(consumer_id, group, parse_partition(rest))


def topic_info(topic: str, broker_id: int, partitions: int, max_message_bytes: int, stores: int = 1) -> str:
    """A producer's topic info: ``topic#brokerId:partNum:storeNum#maxMsgSizeInBytes``."""
    return f"{topic}{SEGMENT_SEP}{broker_id}{ATTR_SEP}{partitions}{ATTR_SEP}{stores}{SEGMENT_SEP}{max_message_bytes}"


def failure_info(code: int, partition: PartitionRef) -> str:
    """A consumer heartbeat's failure entry, ``errCode:<partition string>``."""
    return f"{code}{ATTR_SEP}{partition}"


def parse_topic_condition(text: str) -> tuple[str, frozenset[str]]:
    """``topic#filter1,filter2`` -> (topic, filters)."""
    topic, sep, filters = text.partition(SEGMENT_SEP)
    if not sep or not topic:
        raise NotationError(f"topic condition {text!r} is not topic#filter1,filter2")
    return topic, frozenset(f for f in filters.split(ARRAY_SEP) if f)


__all__ = [
    "ARRAY_SEP",
    "ATTR_SEP",
    "GROUP_SEP",
    "SEGMENT_SEP",
    "BrokerAddress",
    "NotationError",
    "PartitionRef",
    "SubscribeInfo",
    "failure_info",
    "parse_broker",
    "parse_partition",
    "parse_subscribe_info",
    "parse_topic_condition",
    "topic_info",
]
