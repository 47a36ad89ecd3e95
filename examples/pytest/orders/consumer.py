"""A member of the ``totals`` consumer group: reads orders, adds them up per customer, commits what it
has counted. Several members share the topic's partitions."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from confluent_kafka import Consumer


class TotalsWorker:
    def __init__(self, config: dict[str, Any], topic: str, group: str = "totals") -> None:
        self.consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.totals: Counter[str] = Counter()
        self.seen = 0

    def poll_once(self, timeout: float = 0.2) -> None:
        msg = self.consumer.poll(timeout)
        if msg is None or msg.error():
            return
        order = json.loads(msg.value())
        self.totals[order["customer"]] += order["amount_cents"]
        self.seen += 1
        self.consumer.commit(msg, asynchronous=False)

    def assignment(self) -> list[int]:
        return sorted(tp.partition for tp in self.consumer.assignment())

    def run_until(self, done, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError("the condition was not met in time")
            self.poll_once()

    def close(self) -> None:
        self.consumer.close()
