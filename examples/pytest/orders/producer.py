"""Publishes orders as JSON, keyed by customer (so one customer's orders stay in order, on one partition)."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka import Producer


class OrderPublisher:
    def __init__(self, config: dict[str, Any], topic: str) -> None:
        self.producer = Producer({**config, "acks": "all", "enable.idempotence": True})
        self.topic = topic

    def publish(self, customer: str, amount_cents: int) -> None:
        order = {"customer": customer, "amount_cents": amount_cents}
        self.producer.produce(self.topic, key=customer.encode(), value=json.dumps(order).encode())

    def flush(self, timeout: float = 30.0) -> None:
        if self.producer.flush(timeout):
            raise RuntimeError("orders were not acknowledged in time")
