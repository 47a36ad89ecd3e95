"""The pure parts of share groups' dead-letter queues (tidelog.share.dead_letter, KIP-1191): when a group has
one, how ARCHIVING offsets become runs, the headers of a DLQ record, and the group configs' checks."""

from __future__ import annotations

import pytest

from tidelog.cluster.group_config import validate_group_configs
from tidelog.config import BrokerConfig
from tidelog.errors import ConfigError
from tidelog.share.dead_letter import (
    CLIENT_REJECT,
    DELIVERY_COUNT_EXCEEDED,
    DeadLetters,
    dead_letter_runs,
    dlq_headers,
    is_enabled,
)


def test_a_group_has_a_dlq_with_share_version_2_and_a_topic_name() -> None:
    assert is_enabled(2, {"errors.deadletterqueue.topic.name": "dlq.q"})
    assert not is_enabled(1, {"errors.deadletterqueue.topic.name": "dlq.q"})
    assert not is_enabled(2, {"errors.deadletterqueue.topic.name": ""})
    assert not is_enabled(2, None)


def test_runs_split_on_gaps_delivery_counts_and_reasons() -> None:
    archiving = {3: 1, 4: 1, 5: 2, 7: 2, 8: 2}
    runs = dead_letter_runs("g", "t", 1, archiving, lambda o: CLIENT_REJECT if o < 8 else DELIVERY_COUNT_EXCEEDED)
    assert [(r.first_offset, r.last_offset, r.delivery_count, r.reason) for r in runs] == [
        (3, 4, 1, CLIENT_REJECT), (5, 5, 2, CLIENT_REJECT), (7, 7, 2, CLIENT_REJECT),
        (8, 8, 2, DELIVERY_COUNT_EXCEEDED)]
    assert dead_letter_runs("g", "t", 1, {}, lambda o: CLIENT_REJECT) == []


def test_headers_in_kafkas_order_and_spelling() -> None:
    letters = DeadLetters("orders-group", "orders", 7, 40, 41, 5, DELIVERY_COUNT_EXCEEDED)
    assert dlq_headers(letters, 41) == [
        ("__dlq.errors.topic", b"orders"), ("__dlq.errors.partition", b"7"), ("__dlq.errors.offset", b"41"),
        ("__dlq.errors.group", b"orders-group"), ("__dlq.errors.delivery.count", b"5"),
        ("__dlq.errors.message", b"Offset delivery count exceeded the threshold.")]


def test_group_configs_of_the_dlq() -> None:
    broker = BrokerConfig.from_props({})
    values = validate_group_configs({"errors.deadletterqueue.topic.name": "dlq.x",
                                     "errors.deadletterqueue.copy.record.enable": "true"}, broker)
    assert values["errors.deadletterqueue.topic.name"] == "dlq.x"
    assert values["errors.deadletterqueue.copy.record.enable"] is True
    defaults = validate_group_configs({}, broker)
    assert (defaults["errors.deadletterqueue.topic.name"], defaults["errors.deadletterqueue.copy.record.enable"]) == (
        "", False)
    with pytest.raises(ConfigError, match="DLQ topic name must not start with '__'"):
        validate_group_configs({"errors.deadletterqueue.topic.name": "__x"}, broker)
    # the broker's DLQ settings and their Kafka defaults
    assert (broker["errors.deadletterqueue.auto.create.topics.enable"],
            broker["errors.deadletterqueue.topic.name.prefix"]) == (False, "dlq.")
