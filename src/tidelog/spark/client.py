"""confluent-kafka clients for the connector: the configuration each role gets, and their creation.

The ``kafka.*`` options reach librdkafka with the prefix stripped, as Spark's connector hands them to the
Java client. librdkafka knows most Java client property names (and answers Java-only ones such as
``sasl.jaas.config`` with a pointer to its own names); a property it rejects fails the read or write
with librdkafka's message. On top of the user's properties each role sets what its job needs:

* executor consumers: no committing, ``auto.offset.reset=error`` (the source decides what an offset out
  of range means), end-of-partition events, and ``isolation.level=read_uncommitted`` unless given (the
  Java client's default, which Spark's connector inherits; librdkafka's own default is read_committed);
* driver admin client: offset and metadata look-ups;
* producers: ``partitioner=murmur2_random`` unless given, so keyed records land in the partitions the
  Java client (and so Spark's Kafka sink) would choose.

librdkafka's log lines go to the Python logger ``tidelog.spark.librdkafka`` (warnings and errors show on
a worker's stderr; its routine "Disconnected" notices and its warnings that a property does not apply to
a client's role do not). Functions only; clients are not shared
between threads.
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

LIBRDKAFKA_LOG = logging.getLogger("tidelog.spark.librdkafka")


def _not_a_role_warning(record: logging.LogRecord) -> bool:
    """Drop librdkafka's CONFWARN lines: one kafka.* dict configures consumers, the admin client and
    producers alike, so "X is a consumer property and will be ignored by this producer" is expected."""
    return not (isinstance(record.args, tuple) and record.args and record.args[0] == "CONFWARN")


LIBRDKAFKA_LOG.addFilter(_not_a_role_warning)

_CONSUMER_FORCED = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "error",
    "enable.partition.eof": True,
}
_CONSUMER_DEFAULTS = {
    "isolation.level": "read_uncommitted",
    "fetch.wait.max.ms": 100,
    "max.partition.fetch.bytes": 4 * 1024 * 1024,
    # librdkafka's defaults stop fetching for fetch.queue.backoff.ms (1 s) whenever 100,000 records are
    # queued, which caps a reader near 150k records/s; keep fetching instead.
    "queued.min.messages": 1_000_000,
    "fetch.queue.backoff.ms": 20,
    "socket.nagle.disable": True,
}
_PRODUCER_DEFAULTS = {
    "partitioner": "murmur2_random",
    "linger.ms": 20,
    "batch.size": 1024 * 1024,
    "socket.nagle.disable": True,
}


def consumer_config(kafka_params: dict[str, str], group_id: str) -> dict[str, Any]:
    """Executor consumer settings: the user's ``kafka.*`` properties plus what the source needs."""
    config: dict[str, Any] = dict(_CONSUMER_DEFAULTS)
    config.update(kafka_params)
    config.setdefault("group.id", group_id)
    config.update(_CONSUMER_FORCED)
    return config


def producer_config(kafka_params: dict[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = dict(_PRODUCER_DEFAULTS)
    config.update(kafka_params)
    return config


def admin_config(kafka_params: dict[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = dict(kafka_params)
    config.pop("group.id", None)
    return config


def create_consumer(config: dict[str, Any]) -> Consumer:
    return _create(Consumer, config, "consumer")


def create_producer(config: dict[str, Any]) -> Producer:
    return _create(Producer, config, "producer")


def create_admin(config: dict[str, Any]) -> AdminClient:
    return _create(AdminClient, config, "admin client")


def _create(cls: type, config: dict[str, Any], role: str) -> Any:
    try:
        return cls({**config, "logger": LIBRDKAFKA_LOG})
    except KafkaException as e:
        error = e.args[0]
        text = error.str() if hasattr(error, "str") else str(error)
        raise ValueError(f"Invalid Kafka {role} configuration (from the kafka.* options): {text}") from None


__all__ = ["admin_config", "consumer_config", "create_admin", "create_consumer", "create_producer",
           "producer_config"]
