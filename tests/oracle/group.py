"""Committing a consumer group's offsets from a test, on either broker.

A fresh Kafka creates ``__consumer_offsets`` on the first commit and answers NOT_COORDINATOR or
COORDINATOR_LOAD_IN_PROGRESS while it loads; librdkafka's synchronous commit of explicit offsets
gives up on those, so :func:`commit` retries them (Tidelog answers the first time).
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

COORDINATOR_ERRORS = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                      KafkaError.COORDINATOR_NOT_AVAILABLE}


def commit(bootstrap: str, group: str, offsets: list[TopicPartition], timeout_s: float = 30) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                return
            except KafkaException as e:
                if e.args[0].code() not in COORDINATOR_ERRORS or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()


__all__ = ["COORDINATOR_ERRORS", "commit"]
