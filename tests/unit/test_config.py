"""Topic and broker configuration: Kafka names, defaults, validation."""

from __future__ import annotations

import pytest

from tidelog.config import (
    BROKER_SYNONYMS,
    TOPIC_CONFIGS,
    ConfigError,
    TopicConfig,
    topic_defaults_from_broker,
)


def test_defaults_match_kafka() -> None:
    c = TopicConfig()
    assert c.segment_bytes == 1024**3
    assert c.retention_ms == 7 * 24 * 3600 * 1000
    assert c.retention_bytes == -1
    assert c.cleanup_policy == "delete"
    assert c.index_interval_bytes == 4096
    assert c.max_message_bytes == 1048588
    assert c.min_cleanable_dirty_ratio == 0.5
    assert c.delete_retention_ms == 86_400_000


def test_every_topic_config_has_an_attribute_and_a_broker_synonym() -> None:
    c = TopicConfig()
    for name, d in TOPIC_CONFIGS.items():
        assert getattr(c, name.replace(".", "_")) == d.default, name
        assert d.broker_synonym is not None
    assert BROKER_SYNONYMS["log.segment.bytes"] == "segment.bytes"


def test_overrides_are_parsed_and_validated() -> None:
    c = TopicConfig.from_dict({"retention.ms": "1000", "cleanup.policy": "delete,compact"})
    assert c.retention_ms == 1000 and c.cleanup_policy == "compact,delete" and c.compact and c.delete
    with pytest.raises(ConfigError, match="retention.ms"):
        TopicConfig.from_dict({"retention.ms": "soon"})
    with pytest.raises(ConfigError, match="cleanup.policy"):
        TopicConfig.from_dict({"cleanup.policy": "archive"})
    with pytest.raises(ConfigError, match="min.cleanable.dirty.ratio"):
        TopicConfig.from_dict({"min.cleanable.dirty.ratio": "1.5"})
    with pytest.raises(ConfigError, match="Unknown topic config"):
        TopicConfig.from_dict({"retention.minutes": "1"})
    with pytest.raises(ConfigError, match="message.timestamp.type"):
        TopicConfig.from_dict({"message.timestamp.type": "Now"})


def test_broker_properties_supply_topic_defaults() -> None:
    c = topic_defaults_from_broker({"log.retention.hours": "1", "log.segment.bytes": "2048", "num.partitions": "3"})
    assert c.retention_ms == 3_600_000 and c.segment_bytes == 2048
    c = topic_defaults_from_broker({"log.retention.hours": "1", "log.retention.ms": "5"})
    assert c.retention_ms == 5  # ms wins over hours, as in Kafka
    c = topic_defaults_from_broker({"log.retention.minutes": "2"})
    assert c.retention_ms == 120_000
